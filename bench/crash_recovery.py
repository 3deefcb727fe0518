"""Bench 4, crash recovery: `python -m bench.crash_recovery [--runs 10 --repeats 3]`.

Park runs on a worker, SIGKILL it, start a new worker process and approve every run at
once (updates sent right after the new process starts): report the time from the new
worker's start to the first run finishing and to all finished, and the worker's own
start-up time (process start → ready line). signoff and the floor alike.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid

from bench.common import WorkerProcess, bench_env, bounded, run
from bench.report import summary, table, target, write_results
from bench.runs import START, approve, finish, wait_paused

TOOL, ROUNDS = "gated_noop", 1
TARGET_S = 3.0


async def one(bench, kind: str, runs: int) -> dict[str, float]:
    client, queue = bench.client, f"crash-{uuid.uuid4().hex[:8]}"
    first = await WorkerProcess(kind, bench, queue).ready()
    second = None
    try:
        warm = await START[kind](client, queue, TOOL, ROUNDS)
        await wait_paused(client, warm.id)
        await approve(warm, kind)
        await finish(warm, TOOL, ROUNDS)
        handles = await bounded(range(runs), lambda _: START[kind](client, queue, TOOL, ROUNDS), 50)
        await bounded(handles, lambda h: wait_paused(client, h.id), 50)
        first.kill()
        second = WorkerProcess(kind, bench, queue)
        t0 = second.started_at

        async def resume(handle) -> None:
            await approve(handle, kind)
            await finish(handle, TOOL, ROUNDS)

        tasks = [asyncio.create_task(resume(h)) for h in handles]
        await second.ready()
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        t_first = time.perf_counter()
        for task in done:
            task.result()
        await asyncio.gather(*tasks)
        t_all = time.perf_counter()
        assert second.ready_at is not None  # set by ready()
        return {"worker_ready_s": second.ready_at - t0, "to_first_done_s": t_first - t0, "to_all_done_s": t_all - t0}
    finally:
        first.stop()
        if second:
            second.stop()


async def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10, help="runs parked when the worker dies")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    samples: dict[str, list[dict[str, float]]] = {"signoff": [], "floor": []}
    async with bench_env() as bench:
        for i in range(args.repeats):
            for kind in list(samples) if i % 2 == 0 else list(samples)[::-1]:
                samples[kind].append(await one(bench, kind, args.runs))
    metrics = list(samples["signoff"][0])
    stats = {k: {m: summary([s[m] for s in v]) for m in metrics} for k, v in samples.items()}
    rows = [
        [
            m,
            stats["signoff"][m]["p50"],
            stats["signoff"][m]["max"],
            stats["floor"][m]["p50"],
            stats["signoff"][m]["p50"] / stats["floor"][m]["p50"],
        ]
        for m in metrics
    ]
    ok = stats["signoff"]["to_first_done_s"]["max"] <= TARGET_S
    text = table(
        f"Crash recovery: {args.runs} parked runs, worker SIGKILLed, new worker started, all approved "
        f"({args.repeats} repeats). Target: new worker start → first run done ≤ {TARGET_S:.0f} s ({target(ok)})",
        ["interval (s)", "signoff p50", "signoff max", "floor p50", "p50 ratio"],
        rows,
    )
    data = {"args": vars(args), "stats": stats, "target": {"to_first_done_s": TARGET_S, "met": ok}, "raw": samples}
    write_results("crash_recovery", data, [text])
    return data


if __name__ == "__main__":
    run(main)
