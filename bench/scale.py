"""Bench 10, parked at scale on one worker: `python -m bench.scale [--runs 10000 --cache 200]`.

Phase 1 (one worker, small workflow cache): start `--runs` runs that each wait for approval,
until visibility counts them all waiting; read the worker's RSS (baseline after warm-up, with
all parked, peak). Then approve `--sample` runs among the first started (long since evicted
from the cache, so their decision makes the worker replay their history) and as many among
the last started (in the cache: each is queried just before, which keeps it there), one at a
time, alternating, timing approve → done.
Each is classed by what the worker's own cache counters (`temporal_sticky_cache_hit/miss`,
scraped before and after) say it was, not by where it was expected to be.

Phase 2 (two workers, `--handover` runs): worker A parks them and stops; worker B, a fresh
process that never saw them, is approved each and finishes it (replaying every one), against
runs parked and approved on B itself (cached), alternating, in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from typing import Any

import httpx

from bench.common import BenchEnv, BenchError, WorkerProcess, bench_env, bounded, free_port, run
from bench.report import summary, table, write_results
from bench.runs import START, approve, finish, wait_paused

TOOL, ROUNDS = "gated_noop", 1
TARGET_RSS_MB, TARGET_RATIO = 1024, 2.0


def signoff_worker(bench: BenchEnv, queue: str, cache: int | None) -> tuple[WorkerProcess, str]:
    port = free_port()
    env = {"SIGNOFF_METRICS_ADDRESS": f"127.0.0.1:{port}"}
    env |= {"SIGNOFF_MAX_CACHED_WORKFLOWS": str(cache)} if cache is not None else {}
    return WorkerProcess("signoff", bench, queue, extra_env=env), f"http://127.0.0.1:{port}/metrics"


async def cache_counts(metrics: str) -> tuple[float, float]:
    """(hits, misses) of the worker's workflow cache so far (the SDK's Prometheus counters)."""
    async with httpx.AsyncClient() as http:
        text = (await http.get(metrics, timeout=30)).text
    total = {"hit": 0.0, "miss": 0.0}
    for line in text.splitlines():
        for kind in total:
            if line.startswith(f"temporal_sticky_cache_{kind}"):
                total[kind] += float(line.rsplit(" ", 1)[1])
    return total["hit"], total["miss"]


async def park(bench: BenchEnv, queue: str, count: int, timeout: float) -> tuple[list[Any], float]:
    """Start `count` runs (50 at a time); return them, in start order, once all wait."""
    client = bench.client
    t0 = time.perf_counter()
    handles = await bounded(range(count), lambda _: START["signoff"](client, queue, TOOL, ROUNDS), 50)
    query = f'TaskQueue="{queue}" AND SignoffStatus="AwaitingApproval"'
    while (await client.count_workflows(query)).count < count:
        if time.perf_counter() - t0 > timeout:
            raise BenchError(f"not all {count} runs waiting after {timeout:.0f} s")
        await asyncio.sleep(1.0)
    for handle in handles[:: max(1, count // 20)]:  # visibility says so; the histories agree
        await wait_paused(client, handle.id)
    return handles, time.perf_counter() - t0


async def decide(handle: Any, metrics: str) -> tuple[float, str]:
    """Approve one run and wait for its end: (seconds, "evicted"/"cached" per the cache counters)."""
    hits0, misses0 = await cache_counts(metrics)
    t0 = time.perf_counter()
    await approve(handle, "signoff")
    await finish(handle, TOOL, ROUNDS)
    elapsed = time.perf_counter() - t0
    hits1, misses1 = await cache_counts(metrics)
    if misses1 > misses0:
        return elapsed, "evicted"
    if hits1 > hits0:
        return elapsed, "cached"
    raise BenchError(f"{handle.id}: the worker's cache counters did not move")


async def warm_up(bench: BenchEnv, queue: str) -> None:
    for _ in range(3):  # imports, sandbox, connections
        handle = await START["signoff"](bench.client, queue, TOOL, ROUNDS)
        await wait_paused(bench.client, handle.id)
        await approve(handle, "signoff")
        await finish(handle, TOOL, ROUNDS)


async def one_worker(count: int, cache: int, sample: int) -> dict[str, Any]:
    queue = f"scale-{uuid.uuid4().hex[:8]}"
    async with bench_env() as bench:
        worker, metrics = signoff_worker(bench, queue, cache)
        try:
            await worker.ready()
            await warm_up(bench, queue)
            await asyncio.sleep(1.0)
            base_rss, cpu0 = worker.status_kb("VmRSS"), worker.cpu_seconds()
            handles, park_s = await park(bench, queue, count, timeout=120 + count * 0.5)
            cpu_park = worker.cpu_seconds() - cpu0
            await asyncio.sleep(2.0)
            parked_rss, peak = worker.status_kb("VmRSS"), worker.status_kb("VmHWM")
            samples: dict[str, list[float]] = {"evicted": [], "cached": []}
            expected = {"evicted": 0, "cached": 0}
            for old, recent in zip(handles[:sample], reversed(handles[-sample:]), strict=True):
                for handle, hope in ((old, "evicted"), (recent, "cached")):
                    if hope == "cached":  # the last parked, most likely in memory: a query keeps it there
                        await handle.query("status")
                    seconds, was = await decide(handle, metrics)
                    samples[was].append(seconds)
                    expected[hope] += was == hope
        finally:
            worker.stop()
    return {
        "runs": count,
        "cache": cache,
        "park_s": park_s,
        "worker_cpu_park_s": cpu_park,
        "baseline_rss_kb": base_rss,
        "parked_rss_kb": parked_rss,
        "peak_hwm_kb": peak,
        "per_parked_run_kb": (parked_rss - base_rss) / count,
        "expected_as_classed": expected,
        "approve_to_done_s": {k: summary(v) for k, v in samples.items() if v},
        "samples": samples,
    }


async def handover(count: int) -> dict[str, Any]:
    """Runs parked on worker A, A stopped, then approved on B; against runs parked on B itself."""
    queue = f"handover-{uuid.uuid4().hex[:8]}"
    async with bench_env() as bench:
        first, _ = signoff_worker(bench, queue, None)
        await first.ready()
        await warm_up(bench, queue)
        moved, _ = await park(bench, queue, count, timeout=120 + count)
        first.stop()
        second, metrics = signoff_worker(bench, queue, None)
        try:
            await second.ready()
            await warm_up(bench, queue)
            own, _ = await park(bench, queue, count, timeout=120 + count)
            samples: dict[str, list[float]] = {"started on A, approved on B": [], "started and approved on B": []}
            for a, b in zip(moved, own, strict=True):
                samples["started on A, approved on B"].append((await decide(a, metrics))[0])
                samples["started and approved on B"].append((await decide(b, metrics))[0])
        finally:
            second.stop()
    return {"runs": count, "approve_to_done_s": {k: summary(v) for k, v in samples.items()}, "samples": samples}


async def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10_000, help="runs parked on one worker")
    parser.add_argument("--cache", type=int, default=200, help="the worker's SIGNOFF_MAX_CACHED_WORKFLOWS")
    parser.add_argument("--sample", type=int, default=50, help="evicted and cached runs approved one at a time")
    parser.add_argument("--handover", type=int, default=200, help="runs moved from one worker to another (0: skip)")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    print(f"scale: {args.runs} parked on one worker, cache {args.cache}...", flush=True)
    one = await one_worker(args.runs, args.cache, args.sample)
    one_s = time.perf_counter() - t0
    two = await handover(args.handover) if args.handover else None
    lat = one["approve_to_done_s"]
    ratio = lat["evicted"]["p50"] / lat["cached"]["p50"] if {"evicted", "cached"} <= set(lat) else float("nan")
    if args.runs >= 1000 and ratio != ratio:
        raise BenchError(f"the sample has no {'cached' if 'evicted' in lat else 'evicted'} run: raise --cache")
    rss_mb = one["parked_rss_kb"] / 1024
    cached_p50 = lat["cached"]["p50"] if "cached" in lat else float("nan")
    rows = [[k, v["n"], v["p50"] * 1000, v["p95"] * 1000, f"{v['p50'] / cached_p50:.2f}×"] for k, v in lat.items()]
    title = (
        f"{args.runs:,} parked runs on one worker (cache {args.cache}): all waiting after {one['park_s']:.0f} s; "
        f"worker RSS {rss_mb:.0f} MB parked (target ≤ {TARGET_RSS_MB} MB: "
        f"{'met' if rss_mb <= TARGET_RSS_MB else 'MISSED'}), baseline {one['baseline_rss_kb'] / 1024:.0f} MB, "
        f"peak {one['peak_hwm_kb'] / 1024:.0f} MB, {one['per_parked_run_kb']:.1f} kB per parked run"
    )
    texts = [
        table(title, ["approve → done", "runs", "p50 ms", "p95 ms", "vs cached"], rows),
        f"evicted p50 / cached p50 = {ratio:.2f}× (target ≤ {TARGET_RATIO}×: "
        f"{'met' if ratio <= TARGET_RATIO else 'MISSED'}); expected class confirmed by the cache counters: "
        f"{one['expected_as_classed']} of {args.sample} each; phase 1 took {one_s:.0f} s",
    ]
    if two:
        base = two["approve_to_done_s"]["started and approved on B"]["p50"]
        texts.append(
            table(
                f"Two workers, {args.handover} runs: parked on A, A stopped, approved on B",
                ["approve → done", "runs", "p50 ms", "p95 ms", "vs on B"],
                [
                    [k, v["n"], v["p50"] * 1000, v["p95"] * 1000, f"{v['p50'] / base:.2f}×"]
                    for k, v in two["approve_to_done_s"].items()
                ],
            )
        )
    elapsed = time.perf_counter() - t0
    texts.append(f"bench.scale took {elapsed:.0f} s")
    data = {
        "args": vars(args),
        "one_worker": one,
        "handover": two,
        "evicted_over_cached_p50": ratio,
        "elapsed_s": elapsed,
    }
    write_results("scale", data, texts)
    return data


if __name__ == "__main__":
    run(main)
