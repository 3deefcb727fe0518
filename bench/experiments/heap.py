"""Diagnostic: what a parked run holds in the worker's Python heap, by where it was allocated.

`python -m bench.experiments.heap --runs 200 [--kind signoff|floor]`: starts a worker through
this module (`BENCH_WORKER_PREFIX` style: `tracemalloc` on from the start, a snapshot written
on SIGUSR1), parks the runs, and prints the heap's growth per parked run grouped by file and by
line (Python allocations only: the SDK's Rust core, e.g. its copy of each history, is not
seen; compare with the RSS figures of bench 3). Slow under tracemalloc: counts, not timings.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import tempfile
import tracemalloc
import uuid
from pathlib import Path

FRAMES = 12


def _serve_with_snapshots() -> None:
    tracemalloc.start(FRAMES)
    out = Path(os.environ["HEAP_SNAPSHOTS"])
    taken = [0]

    def snapshot(*_: object) -> None:
        taken[0] += 1
        tracemalloc.take_snapshot().dump(str(out / f"{taken[0]}.snap"))
        (out / f"{taken[0]}.done").touch()

    signal.signal(signal.SIGUSR1, snapshot)
    if sys.argv[0].endswith("worker.py"):
        from signoff.runtime import worker

        worker.main(sys.argv[1:])
    else:
        import bench.floor

        asyncio.run(bench.floor.serve())


async def _drive(kind: str, count: int, top: int) -> None:
    from bench import common
    from bench.common import bench_env, workers
    from bench.parked import wait_all_paused
    from bench.runs import START

    snaps = Path(tempfile.mkdtemp(prefix="signoff-heap-"))
    os.environ["HEAP_SNAPSHOTS"] = str(snaps)
    common.WORKER_PREFIX[:] = ["-m", "bench.experiments.heap"]
    queue = f"heap-{uuid.uuid4().hex[:6]}"
    async with bench_env() as bench, workers(bench, (kind, queue)) as (worker,):

        async def take(n: int) -> tracemalloc.Snapshot:
            os.kill(worker.pid, signal.SIGUSR1)
            while not (snaps / f"{n}.done").exists():
                await asyncio.sleep(0.2)
            return tracemalloc.Snapshot.load(str(snaps / f"{n}.snap"))

        warm = await START[kind](bench.client, queue, "gated_noop", 1)
        await wait_all_paused(bench.client, [warm], 120)
        await asyncio.sleep(1.0)
        before = await take(1)
        handles = await common.bounded(range(count), lambda _: START[kind](bench.client, queue, "gated_noop", 1), 20)
        await wait_all_paused(bench.client, handles, 60 + count * 2.0)
        await asyncio.sleep(2.0)
        after = await take(2)
    for key in ("filename", "lineno"):
        stats = after.compare_to(before, key)
        grown = sum(s.size_diff for s in stats)
        print(
            f"\n{kind}: Python heap +{grown / 1024:.0f} kB for {count} parked runs = "
            f"{grown / count / 1024:.1f} kB/run; by {key}:"
        )
        for stat in stats[:top]:
            frame = stat.traceback[0]
            where = f"{_short(frame.filename)}:{frame.lineno if key == 'lineno' else ''}"
            print(f"{stat.size_diff / count / 1024:8.2f} kB/run  {stat.count_diff / count:7.1f} blocks/run  {where}")


def _short(filename: str) -> str:
    """A file's name without where this machine keeps it (the repository, site-packages, the stdlib)."""
    repo = str(Path(__file__).resolve().parent.parent.parent) + "/"
    for marker in ("site-packages/", repo, f"lib/python{sys.version_info.major}.{sys.version_info.minor}/"):
        filename = filename.split(marker)[-1]
    return filename


if __name__ == "__main__":
    if len(sys.argv) > 1 and (sys.argv[1].endswith("worker.py") or sys.argv[1:3] == ["-m", "bench.floor"]):
        sys.argv = sys.argv[1:] if sys.argv[1].endswith("worker.py") else ["bench.floor"]
        _serve_with_snapshots()
    else:
        parser = argparse.ArgumentParser(description=__doc__)
        parser.add_argument("--runs", type=int, default=200)
        parser.add_argument("--kind", choices=["signoff", "floor"], default="signoff")
        parser.add_argument("--top", type=int, default=25)
        args = parser.parse_args()
        asyncio.run(_drive(args.kind, args.runs, args.top))
