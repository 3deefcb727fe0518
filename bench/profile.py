"""Profile a worker with py-spy: `python -m bench.profile [--kind signoff] [--runs 100]`.

Runs sequential "model → noop → model" runs (`--tool gated_noop`: approval runs, each
approved by update when it pauses) against one worker process while `py-spy record`
samples it, then prints where its Python time goes, inclusive and self, in ms per run
(idle threads left out). Needs `pip install py-spy` (the `bench` extra) and permission to
ptrace the worker (root, or ptrace_scope 0).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from bench.common import bench_env, run, workers
from bench.report import RESULTS
from bench.runs import START, approve, finish, wait_paused

IDLE = re.compile(r"^_worker \(concurrent|select|epoll|wait \(threading")


def aggregate(path: Path, runs: int, rate: int, top: int) -> str:
    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = [re.sub(r":\d+\)$", ")", f) for f in stack.split(";")]
        if not frames or IDLE.search(frames[-1]):
            continue
        for frame in set(frames):
            inclusive[frame] += int(count)
        own[frames[-1]] += int(count)
    per_run = lambda n: n * 1000 / rate / runs  # noqa: E731
    out = ["inclusive (ms/run)"] + [f"{per_run(n):7.2f}  {f[:150]}" for f, n in inclusive.most_common(top)]
    out += ["", "self (ms/run)"] + [f"{per_run(n):7.2f}  {f[:150]}" for f, n in own.most_common(top // 2)]
    return "\n".join(out)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kind", choices=["signoff", "floor"], default="signoff")
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--rate", type=int, default=250, help="samples per second")
    parser.add_argument("--top", type=int, default=50)
    parser.add_argument("--tool", choices=["noop", "gated_noop"], default="noop")
    args = parser.parse_args()
    spy_bin = shutil.which("py-spy") or shutil.which("py-spy", path=str(Path(sys.executable).parent))
    if spy_bin is None:
        raise SystemExit("py-spy not found: pip install py-spy")
    queue = f"profile-{uuid.uuid4().hex[:8]}"
    name = f"profile-{args.kind}" + ("-approval" if args.tool == "gated_noop" else "")
    raw = RESULTS / f"{name}.txt"
    RESULTS.mkdir(parents=True, exist_ok=True)
    async with bench_env() as bench, workers(bench, (args.kind, queue)) as (worker,):
        for _ in range(5):
            await one_run(bench.client, args.kind, queue, args.tool)
        spy = subprocess.Popen(
            [spy_bin, "record", "--pid", str(worker.pid), "--format", "raw", "--rate", str(args.rate), "-o", str(raw)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        await asyncio.sleep(1.0)
        cpu0, t0 = worker.cpu_seconds(), time.perf_counter()
        for _ in range(args.runs):
            await one_run(bench.client, args.kind, queue, args.tool)
        wall, cpu = (time.perf_counter() - t0) / args.runs, (worker.cpu_seconds() - cpu0) / args.runs
        spy.send_signal(signal.SIGINT)
        spy.wait()
    report = f"{args.kind}: {wall * 1000:.1f} ms/run wall, {cpu * 1000:.1f} ms/run worker CPU (under py-spy)\n\n"
    report += aggregate(raw, args.runs, args.rate, args.top)
    print(report)
    (RESULTS / f"{name}.summary.txt").write_text(report + "\n")


async def one_run(client: Any, kind: str, queue: str, tool: str) -> None:
    handle = await START[kind](client, queue, tool, 1)
    if tool == "gated_noop":
        await wait_paused(client, handle.id)
        await approve(handle, kind)
    await finish(handle, tool, 1)


if __name__ == "__main__":
    run(main)
