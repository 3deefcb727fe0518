"""Bench 3, parked at scale: `python -m bench.parked [--counts 200,1000]`.

For each count N, on a fresh dev server and a fresh worker: start N runs that each wait
for approval (50 starts at a time), time until all are paused (history sweeps), read the
worker's RSS (baseline after warm-up, with N parked, peak VmHWM), then approve them all
(50 updates at a time) and time until all are done. signoff and the floor are measured
alike; signoff once more with two worker processes on the same task queue.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid

from bench.common import BenchError, WorkerProcess, bench_env, bounded, run
from bench.report import table, target, write_results
from bench.runs import START, approve, finish, history_events, is_paused, wait_paused

TOOL, ROUNDS = "gated_noop", 1
TARGET_KB, TARGET_S = 250, 60.0
WORKER_CACHE = 1000  # temporalio's default max_cached_workflows, which worker.py keeps


async def wait_all_paused(client, handles, timeout: float) -> None:
    waiting = list(handles)
    deadline = time.perf_counter() + timeout
    while waiting:
        if time.perf_counter() > deadline:
            raise BenchError(f"{len(waiting)} runs not paused in {timeout}s")
        paused = await bounded(waiting, lambda h: _paused(client, h), 50)
        waiting = [h for h, p in zip(waiting, paused, strict=True) if not p]
        if waiting:
            await asyncio.sleep(0.2)


async def _paused(client, handle) -> bool:
    return is_paused(await history_events(client, handle.id))


async def one_count(kind: str, count: int, worker_count: int) -> dict:
    queue = f"parked-{uuid.uuid4().hex[:8]}"
    async with bench_env() as bench:
        client = bench.client
        procs = [WorkerProcess(kind, bench, queue) for _ in range(worker_count)]
        try:
            await asyncio.gather(*(p.ready() for p in procs))
            for _ in range(3):  # warm-up: imports, sandbox, connections
                handle = await START[kind](client, queue, TOOL, ROUNDS)
                await wait_paused(client, handle.id)
                await approve(handle, kind)
                await finish(handle, TOOL, ROUNDS)
            await asyncio.sleep(1.0)
            rss = lambda: sum(p.status_kb("VmRSS") for p in procs)  # noqa: E731
            cpu = lambda: sum(p.cpu_seconds() for p in procs)  # noqa: E731
            base_rss, cpu0 = rss(), cpu()
            t0 = time.perf_counter()
            handles = await bounded(range(count), lambda _: START[kind](client, queue, TOOL, ROUNDS), 50)
            t_started = time.perf_counter()
            await wait_all_paused(client, handles, timeout=60 + count * 0.5)
            t_paused = time.perf_counter()
            cpu_park = cpu() - cpu0
            await asyncio.sleep(1.0)  # let the worker settle before reading its RSS
            parked_rss = rss()
            t1 = time.perf_counter()
            await bounded(handles, lambda h: approve(h, kind), 50)
            t_approved = time.perf_counter()
            await bounded(handles, lambda h: finish(h, TOOL, ROUNDS), 200)
            t_done = time.perf_counter()
            peak = sum(p.status_kb("VmHWM") for p in procs)
            cpu_resume = cpu() - cpu0 - cpu_park
        finally:
            for p in procs:
                p.stop()
    return {
        "kind": kind,
        "workers": worker_count,
        "runs": count,
        "start_s": t_started - t0,
        "all_paused_s": t_paused - t0,
        "baseline_rss_kb": base_rss,
        "parked_rss_kb": parked_rss,
        "peak_hwm_kb": peak,
        "per_parked_run_kb": (parked_rss - base_rss) / count,
        "approve_s": t_approved - t1,
        "approve_to_done_s": t_done - t1,
        "worker_cpu_park_s": cpu_park,
        "worker_cpu_resume_s": cpu_resume,
        "evicted_from_cache": max(0, count - WORKER_CACHE * worker_count),
    }


async def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--counts", default="200,1000")
    parser.add_argument("--no-floor", action="store_true", help="skip the floor's runs")
    parser.add_argument("--two-workers", type=int, default=None, help="count for the 2-worker run (default: largest)")
    args = parser.parse_args(argv)
    counts = [int(c) for c in args.counts.split(",")]
    plan = [("signoff", n, 1) for n in counts]
    plan += [] if args.no_floor else [("floor", n, 1) for n in counts]
    plan.append(("signoff", args.two_workers or max(counts), 2))
    rows = []
    for kind, n, w in plan:
        print(f"parked: {kind} x{n} on {w} worker(s)...", flush=True)
        rows.append(await one_count(kind, n, w))
    floor = {r["runs"]: r for r in rows if r["kind"] == "floor"}
    lines = []
    for r in rows:
        f = floor.get(r["runs"]) if r["kind"] == "signoff" and r["workers"] == 1 else None
        lines.append(
            [
                f"{r['kind']} ×{r['workers']}w",
                r["runs"],
                r["all_paused_s"],
                r["baseline_rss_kb"] / 1024,
                r["peak_hwm_kb"] / 1024,
                r["per_parked_run_kb"],
                f"{r['per_parked_run_kb'] / f['per_parked_run_kb']:.2f}×" if f else "",
                r["approve_to_done_s"],
                f"{r['approve_to_done_s'] / f['approve_to_done_s']:.2f}×" if f else "",
                r["evicted_from_cache"],
            ]
        )
    big = [r for r in rows if r["kind"] == "signoff" and r["workers"] == 1]
    kb_ok = all(r["per_parked_run_kb"] <= TARGET_KB for r in big)
    s_ok = all(r["approve_to_done_s"] <= TARGET_S for r in big if r["runs"] >= 1000)
    text = table(
        f"Parked at scale (fresh worker each). Targets: ≤ {TARGET_KB} kB/parked run ({target(kb_ok)}), "
        f"1,000 approved → done ≤ {TARGET_S:.0f} s ({target(s_ok)})",
        [
            "worker",
            "runs",
            "all paused s",
            "base RSS MB",
            "peak HWM MB",
            "kB/parked run",
            "vs floor",
            "approve→done s",
            "vs floor",
            "evicted",
        ],
        lines,
    )
    data = {
        "args": vars(args),
        "rows": rows,
        "targets": {"kb_per_run": TARGET_KB, "kb_met": kb_ok, "approve_to_done_s": TARGET_S, "s_met": s_ok},
    }
    write_results("parked", data, [text])
    return data


if __name__ == "__main__":
    run(main)
