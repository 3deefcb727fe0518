"""`python -m tests.fuzz [--cases N] [--seed S] [--no-shrink] [--max-cached-workflows N] [--save DIR]`:
the long fuzz run, on a dev server of its own.

`--max-cached-workflows 0` makes every workflow task replay the whole history, so a live run
that differs from its replay fails at once (a sharper check for nondeterminism; it also meets
what Temporal's core does not support with no cache, see SIGNOFF_MAX_CACHED_WORKFLOWS).
`--save DIR` writes a finding's histories there; `signoff replay` then shows the failure.

Prints progress every 100 cases; on a finding, the smallest failing case it saw (and
Hypothesis's own report), which then becomes a named regression test. Exits 1 on a finding.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, seed, settings

from tests.fuzz.harness import Finding, Harness
from tests.fuzz.strategies import Case, cases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    parser.add_argument("--cases", type=int, default=2000, help="generated cases to run (default 2000)")
    parser.add_argument("--seed", type=int, default=None, help="Hypothesis seed, to repeat a run")
    parser.add_argument("--no-shrink", action="store_true", help="report the first failing case as found")
    parser.add_argument(
        "--max-cached-workflows", type=int, default=None, help="the worker's cache (0: replay every task)"
    )
    parser.add_argument("--save", type=Path, default=None, help="write a finding's histories (and payloads) to DIR")
    args = parser.parse_args(argv)
    logging.getLogger("temporalio").setLevel(logging.CRITICAL)  # refused inputs are logged as errors by design
    harness, failing = Harness(args.max_cached_workflows, args.save), []
    started = time.monotonic()
    phases = [Phase.explicit, Phase.generate] + ([] if args.no_shrink else [Phase.shrink])

    @settings(
        max_examples=args.cases,
        deadline=None,
        database=None,
        phases=phases,
        print_blob=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(cases)
    def fuzz(case: Case) -> None:
        try:
            harness.run(case)
        except Finding as finding:
            failing.append((len(repr(case)), repr(case), str(finding)))
            raise
        finally:
            if harness.cases % 100 == 0:
                print(f"{harness.cases} cases, {time.monotonic() - started:.0f} s", flush=True)

    if args.seed is not None:
        fuzz = seed(args.seed)(fuzz)
    try:
        fuzz()
        code = 0
    except Exception as exc:  # Hypothesis has printed what it could
        print(f"FINDING: {type(exc).__name__}: {exc}", file=sys.stderr)
        code = 1
    finally:
        harness.close()
    if failing:
        _, case, finding = min(failing)
        print(f"smallest failing case ({len(failing)} failing seen):\n{case}\n-> {finding}", file=sys.stderr)
    print(
        f"ran {harness.cases} cases in {time.monotonic() - started:.0f} s: "
        f"{'no finding' if code == 0 else 'a finding (above)'}"
    )
    for what, count in sorted(harness.tally.items()):
        print(f"  {what}: {count}")
    return code


if __name__ == "__main__":
    sys.exit(main())
