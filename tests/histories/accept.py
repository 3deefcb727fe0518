"""Accept a change of workflow code into manifest.json, once it is made safe.

    python -m tests.histories.accept --why "remind after a moved deadline"       # a new workflow.patched id
    python -m tests.histories.accept --new-version --why "sealed run state"      # old runs need the old workers
    python -m tests.histories.accept --no-command-change --why "renamed a helper" # a reviewer checks the claim

tests/test_replay.py fails while the installed workflow code differs from the manifest's;
this records it, and refuses a change that has neither a new `workflow.patched` id nor a
new version nor a stated reason why no command can change (docs/deploys.md, "Changing workflow code").
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from signoff.runtime.fingerprint import workflow_code
from tests.histories.manifest import PATH, Manifest, rule_broken


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--why", required=True, help="what changed, for the log")
    how = parser.add_mutually_exclusive_group()
    how.add_argument(
        "--new-version",
        action="store_true",
        help="runs recorded before cannot resume on this code (retire or re-record their histories)",
    )
    how.add_argument("--no-command-change", action="store_true", help="no run's commands can change (say why)")
    parser.add_argument("--manifest", type=Path, default=PATH, help=argparse.SUPPRESS)  # tests use a copy
    args = parser.parse_args(argv)
    manifest, code = Manifest.load(args.manifest), workflow_code()
    recorded = manifest.code
    if code.fingerprint == recorded["fingerprint"]:
        print("the workflow code is the manifest's already: nothing to accept")
        return 0
    print("changed:", ", ".join(code.changed_since(recorded["modules"], recorded["activities"])))
    added = sorted(set(code.patches) - set(recorded["patches"]))
    kind = "new-version" if args.new_version else "no-command-change" if args.no_command_change else "patched"
    change = {
        "version": manifest.version + (kind == "new-version"),
        "patches": list(code.patches),
        "kind": kind,
        "why": args.why,
    }
    problem = rule_broken(manifest.changes[-1], change)
    if problem:
        print(
            f"refused: {problem}. New workflow.patched ids: {', '.join(added) or 'none'}. Guard the change with "
            "workflow.patched('<id>'), or pass --new-version or --no-command-change.",
            file=sys.stderr,
        )
        return 1
    manifest.accept(code, kind, args.why)
    manifest.save()
    print(f"accepted as {kind} (version {manifest.version}, patches {', '.join(code.patches) or 'none'})")
    if kind == "new-version":
        print(
            "now re-record the shapes (python -m tests.histories.record) and mark the histories of the old "
            "version that cannot resume with resumes: false and why_not"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
