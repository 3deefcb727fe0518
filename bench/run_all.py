"""Every bench, one after another, each in a fresh process: `python -m bench.run_all`.

`--quick` uses small counts (a smoke run, a minute or two); otherwise the issue's counts.
Stops at the first bench that fails (a wrong result is never reported as a figure).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

FULL = [
    ("round_overhead", ["--runs", "50"]),
    ("approval_latency", ["--runs", "50"]),
    ("parked", ["--counts", "200,1000"]),
    ("crash_recovery", ["--runs", "10", "--repeats", "3"]),
    ("history_growth", ["--rounds", "1,10,50,200"]),
    ("large_payloads", ["--runs", "6", "--rounds", "10"]),
    ("governance", ["--runs", "30"]),
    ("auto_mode", ["--runs", "30"]),
    ("observability", ["--runs", "30"]),
    ("mcp_calls", ["--runs", "20", "--rounds", "10"]),
    ("verification", ["--calls", "2000"]),
    ("scale", ["--runs", "10000", "--cache", "200", "--sample", "50", "--handover", "200"]),
    ("caller_check", ["--calls", "2000"]),
    ("spent", ["--runs", "30"]),
    ("sub_agents", ["--runs", "10", "--parked", "200"]),
    ("streams", ["--runs", "4", "--tokens", "1000"]),
]
QUICK = [
    ("round_overhead", ["--runs", "5", "--warmup", "1"]),
    ("approval_latency", ["--runs", "5", "--warmup", "1"]),
    ("parked", ["--counts", "20", "--two-workers", "20"]),
    ("crash_recovery", ["--runs", "3", "--repeats", "1"]),
    ("history_growth", ["--rounds", "1,10"]),
    ("large_payloads", ["--runs", "2", "--rounds", "3"]),
    ("governance", ["--runs", "3", "--warmup", "1"]),
    ("auto_mode", ["--runs", "3", "--warmup", "1"]),
    ("observability", ["--runs", "3", "--warmup", "1"]),
    ("mcp_calls", ["--runs", "2", "--rounds", "2", "--calls", "20"]),
    ("verification", ["--calls", "100"]),
    ("scale", ["--runs", "60", "--cache", "30", "--sample", "3", "--handover", "5"]),
    ("caller_check", ["--calls", "20"]),
    ("spent", ["--runs", "3", "--warmup", "1"]),
    ("sub_agents", ["--runs", "2", "--warmup", "1", "--parked", "10"]),
    ("streams", ["--runs", "1", "--tokens", "100"]),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default="", help="comma-separated bench names")
    args = parser.parse_args()
    only = {n for n in args.only.split(",") if n}
    for name, flags in QUICK if args.quick else FULL:
        if only and name not in only:
            continue
        print(f"\n=== bench.{name} {' '.join(flags)}", flush=True)
        t0 = time.perf_counter()
        code = subprocess.call([sys.executable, "-m", f"bench.{name}", *flags])
        print(f"=== bench.{name}: exit {code} in {time.perf_counter() - t0:.0f} s", flush=True)
        if code:
            sys.exit(f"bench.{name} failed (exit {code})")


if __name__ == "__main__":
    main()
