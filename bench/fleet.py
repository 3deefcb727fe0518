"""A fleet, measured (#33): `python -m bench.fleet [--runs 2000 --workers 3 --cache 200]`.

**Phase 1, the fleet.** `--workers` signoff worker processes on one task queue, each with a
workflow cache (`SIGNOFF_MAX_CACHED_WORKFLOWS`) smaller than its share of the runs, so runs are
evicted and replayed. `--runs` runs are parked (each waits for one gated call), then approved in
bulk (`--concurrency` updates in flight); once a third of the decisions are sent, one worker is
SIGKILLed and a new one started on the queue. Every run must finish exactly once: its result
is the scripted answer and the tools' call log (`bench.tool_calls`) holds its call once. RSS of
every worker is sampled throughout (peak reported; bound: the worker's baseline plus its cache
at `PER_CACHED_KB` per run plus `SLACK_MB`), and approve → done per run (the update sent → the
result) is reported against the **all-cached** case: the same runs, workers and bulk approval on
a fresh server, caches larger than the fleet, no worker killed.

**Phase 2, saturation.** One worker (signoff, then the floor, alternating per level) and auto runs
(model → `noop` → model) started `--saturation-runs` at a time at each concurrency level of
`--levels`: runs per second, the worker's CPU per run and runs per worker-CPU-second (per core);
where throughput stops growing is where the worker is saturated.

`--smoke` runs everything tiny (tests/test_bench_smoke.py). Results: `bench/results/fleet.json`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from bench.common import BenchEnv, BenchError, WorkerProcess, bench_env, bounded, check_result, run
from bench.report import summary, table, write_results
from bench.runs import START, approve, finish, wait_paused
from bench.tool_calls import TOOL_LOG, calls
from signoff.workflows.activity_options import OUTCOME_UNKNOWN

TOOL, AUTO, ROUNDS = "gated_noop", "noop", 1
PER_CACHED_KB, SLACK_MB = 400, 96
"""The RSS bound per worker: its baseline + cache × 400 kB (bench 3 measured 100–170 kB per
cached run) + 96 MB (a replay's transient allocations, the SDK's buffers)."""


class Fleet:
    """The worker processes on one task queue, their RSS sampled every `period` seconds."""

    def __init__(self, bench: BenchEnv, queue: str, cache: int, kind: str = "signoff") -> None:
        self.bench, self.queue, self.cache, self.kind = bench, queue, cache, kind
        self.procs: list[WorkerProcess] = []
        self.baseline: dict[str, int] = {}
        self.peak: dict[str, int] = {}
        self._sampler: asyncio.Task[None] | None = None

    async def add(self) -> WorkerProcess:
        env = {"SIGNOFF_MAX_CACHED_WORKFLOWS": str(self.cache)}
        proc = await WorkerProcess(self.kind, self.bench, self.queue, extra_env=env).ready()
        self.procs.append(proc)
        return proc

    def mark_baselines(self) -> None:
        for proc in self.live():
            self.baseline.setdefault(proc.name, proc.status_kb("VmRSS"))

    def live(self) -> list[WorkerProcess]:
        return [p for p in self.procs if p.popen.poll() is None]

    def sample(self) -> None:
        for proc in self.live():
            try:
                self.peak[proc.name] = max(self.peak.get(proc.name, 0), proc.status_kb("VmRSS"))
            except (FileNotFoundError, BenchError):  # it just died (the killed one)
                pass

    async def _sample_forever(self, period: float) -> None:
        while True:
            self.sample()
            await asyncio.sleep(period)

    def start_sampling(self, period: float = 0.5) -> None:
        self._sampler = asyncio.create_task(self._sample_forever(period))

    def stop(self) -> None:
        if self._sampler:
            self._sampler.cancel()
        for proc in self.procs:
            proc.stop()

    def cpu_seconds(self) -> float:
        return sum(p.cpu_seconds() for p in self.live())


async def warm_up(bench: BenchEnv, queue: str, n: int) -> None:
    """A few runs per worker first (imports, sandbox, connections), not counted."""

    async def one(_: int) -> None:
        handle = await START["signoff"](bench.client, queue, TOOL, ROUNDS, workflow_id=f"warmup-{uuid.uuid4()}")
        await wait_paused(bench.client, handle.id)
        await approve(handle, "signoff")
        await finish(handle, TOOL, ROUNDS)

    await bounded(range(n), one, 10)


async def park(bench: BenchEnv, queue: str, count: int, prefix: str, concurrency: int) -> tuple[list[Any], float]:
    """Start `count` runs; return them once visibility counts them all waiting."""
    client = bench.client
    t0 = time.perf_counter()
    handles = await bounded(
        range(count),
        lambda i: START["signoff"](client, queue, TOOL, ROUNDS, workflow_id=f"{prefix}-{i:06d}"),
        concurrency,
    )
    query = f'TaskQueue="{queue}" AND SignoffStatus="AwaitingApproval"'
    timeout = 120 + count * 0.5
    while (await client.count_workflows(query)).count < count:
        if time.perf_counter() - t0 > timeout:
            raise BenchError(f"not all {count} runs waiting after {timeout:.0f} s")
        await asyncio.sleep(1.0)
    for handle in handles[:: max(1, count // 20)]:  # visibility says so; the histories agree
        await wait_paused(client, handle.id)
    return handles, time.perf_counter() - t0


async def finished(handle: Any) -> str:
    """The run's end, checked: `ran` (the scripted answer to the tool's own message) or `cut`
    (the worker running its tool was killed: the model was told the outcome is unknown, and
    the tool was not run again; `check_once` holds it to at most one call)."""
    try:
        result = await asyncio.wait_for(handle.result(), 600)
    except TimeoutError:
        raise BenchError(f"{handle.id} did not finish in 600 s") from None
    tools = [m.content for m in result.messages if m.role == "tool"]
    if tools == [OUTCOME_UNKNOWN] and result.text == f"done {ROUNDS}: {OUTCOME_UNKNOWN}":
        return "cut"
    check_result(result.text, result.messages, TOOL, ROUNDS, handle.id)
    return "ran"


async def approve_all(
    handles: list[Any], concurrency: int, on_progress: Any = None
) -> tuple[list[float], dict[str, str], float]:
    """Approve every run (`concurrency` at a time) and wait for each result: approve → done
    per run, and how each ended (`finished`)."""
    sent = 0
    ends: dict[str, str] = {}

    async def one(handle: Any) -> float:
        nonlocal sent
        t0 = time.perf_counter()
        await approve(handle, "signoff")
        sent += 1
        if on_progress is not None:
            await on_progress(sent)
        ends[handle.id] = await finished(handle)
        return time.perf_counter() - t0

    t0 = time.perf_counter()
    seconds = await bounded(handles, one, concurrency)
    return seconds, ends, time.perf_counter() - t0


async def fleet_case(args: argparse.Namespace, cache: int, churn: bool) -> dict[str, Any]:
    """Park `args.runs` on `args.workers` workers with caches of `cache`; approve all in bulk,
    killing one worker and adding one a third of the way through when `churn`."""
    queue = f"fleet-{uuid.uuid4().hex[:8]}"
    prefix = f"fleet{'-churn' if churn else '-cached'}-{uuid.uuid4().hex[:6]}"
    async with bench_env() as bench:
        fleet = Fleet(bench, queue, cache)
        try:
            await asyncio.gather(*(fleet.add() for _ in range(args.workers)))
            await warm_up(bench, queue, 3 * args.workers)
            await asyncio.sleep(1.0)
            fleet.mark_baselines()
            fleet.start_sampling()
            handles, park_s = await park(bench, queue, args.runs, prefix, args.concurrency)
            await asyncio.sleep(1.0)
            parked_rss = {p.name: p.status_kb("VmRSS") for p in fleet.live()}
            churned: dict[str, Any] = {}

            async def progress(sent: int) -> None:
                if churn and not churned and sent >= len(handles) // 3:
                    victim = fleet.live()[0]
                    churned["killed"], churned["at_decision"] = victim.name, sent
                    victim.kill()
                    churned["added"] = (await fleet.add()).name
                    fleet.mark_baselines()

            seconds, ends, approve_s = await approve_all(handles, args.concurrency, progress)
            fleet.sample()
            final_rss = {p.name: p.status_kb("VmRSS") for p in fleet.live()}
        finally:
            fleet.stop()
    return {
        "runs": args.runs,
        "workers": args.workers,
        "cache": cache,
        "churn": churned,
        "park_s": park_s,
        "approve_all_s": approve_s,
        "approve_to_done_s": summary(seconds),
        "baseline_rss_kb": fleet.baseline,
        "parked_rss_kb": parked_rss,
        "final_rss_kb": final_rss,
        "peak_rss_kb": fleet.peak,
        "ends": ends,
    }


def check_once(log: Path, ends: dict[str, str]) -> dict[str, int]:
    """Every run finished once: a run that ended `ran` ran its tool exactly once, one whose tool
    was `cut` by the kill at most once (never again). Returns how many ended each way."""
    found = calls(log)
    allowed = {"ran": (1,), "cut": (0, 1)}
    wrong = [(w, end, found[w, TOOL]) for w, end in ends.items() if found[w, TOOL] not in allowed[end]]
    if wrong:
        raise BenchError(f"{len(wrong)} runs did not run their tool once: {wrong[:5]}")
    return dict(Counter(ends.values()))


def check_rss(case: dict[str, Any]) -> dict[str, bool]:
    """Each worker's peak RSS within its bound (baseline + cache * PER_CACHED_KB + SLACK_MB)."""
    extra = case["cache"] * PER_CACHED_KB + SLACK_MB * 1024
    bound = {name: base + extra for name, base in case["baseline_rss_kb"].items()}
    within = {name: case["peak_rss_kb"].get(name, 0) <= bound[name] for name in bound}
    case["rss_bound_kb"] = bound
    if not all(within.values()):
        raise BenchError(f"worker RSS over its bound: peak {case['peak_rss_kb']}, bound {bound}")
    return within


# --- saturation -------------------------------------------------------------------------------


async def saturation_level(bench: BenchEnv, kind: str, concurrency: int, n: int) -> dict[str, float]:
    """`n` auto runs on one worker of `kind`, `concurrency` at a time: runs/s and CPU per run."""
    queue = f"sat-{kind}-{uuid.uuid4().hex[:6]}"
    proc = await WorkerProcess(kind, bench, queue).ready()
    try:

        async def one(_: int) -> None:
            handle = await START[kind](bench.client, queue, AUTO, ROUNDS)
            await finish(handle, AUTO, ROUNDS, timeout=600)

        await bounded(range(min(n, 10)), one, 5)  # warm-up
        cpu0, t0 = proc.cpu_seconds(), time.perf_counter()
        await bounded(range(n), one, concurrency)
        wall, cpu = time.perf_counter() - t0, proc.cpu_seconds() - cpu0
    finally:
        proc.stop()
    return {
        "concurrency": concurrency,
        "runs": n,
        "wall_s": wall,
        "runs_per_s": n / wall,
        "worker_cpu_ms_per_run": cpu / n * 1000,
        "worker_cores_busy": cpu / wall,
        "runs_per_cpu_s": n / cpu if cpu else float("nan"),
    }


async def saturation(levels: list[int], n: int) -> dict[str, list[dict[str, float]]]:
    found: dict[str, list[dict[str, float]]] = {"signoff": [], "floor": []}
    async with bench_env() as bench:
        for i, level in enumerate(levels):
            for kind in ("signoff", "floor") if i % 2 == 0 else ("floor", "signoff"):
                found[kind].append(await saturation_level(bench, kind, level, n))
    return found


# --- main ---------------------------------------------------------------------------------------


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.fleet", description=__doc__)
    parser.add_argument("--runs", type=int, default=2000, help="runs parked and approved (20000: the issue's)")
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--cache", type=int, default=200, help="each worker's cache (smaller than runs/workers)")
    parser.add_argument("--concurrency", type=int, default=50, help="starts and decisions in flight")
    parser.add_argument("--levels", default="4,16,64", help="saturation: concurrent auto runs, per level")
    parser.add_argument("--saturation-runs", type=int, default=200, help="auto runs per level and system (0: skip)")
    parser.add_argument("--no-cached", action="store_true", help="skip the all-cached baseline")
    parser.add_argument("--smoke", action="store_true", help="tiny counts, for the test suite")
    args = parser.parse_args(argv)
    if args.smoke:
        args.runs, args.cache, args.concurrency, args.levels, args.saturation_runs = 12, 2, 6, "2", 6
    args.levels = [int(x) for x in str(args.levels).split(",") if x]
    if args.workers < 2 or args.runs < 3 * args.workers:
        parser.error("need --workers ≥ 2 and --runs ≥ 3 × workers")
    if args.cache * args.workers >= args.runs:
        parser.error("--cache × --workers must be smaller than --runs: the fleet is to be evicted")
    return args


async def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse(argv)
    log = Path(tempfile.mkdtemp(prefix="signoff-bench-fleet-")) / "tool-calls.log"
    os.environ[TOOL_LOG] = str(log)
    t0 = time.perf_counter()
    print(f"fleet: {args.runs} parked on {args.workers} workers (cache {args.cache} each)...", flush=True)
    churn = await fleet_case(args, args.cache, churn=True)
    churn["ended"] = check_once(log, churn.pop("ends"))
    check_rss(churn)
    cached = None
    if not args.no_cached:
        print("fleet: the same, all cached, no worker killed...", flush=True)
        cached = await fleet_case(args, args.runs, churn=False)
        cached["ended"] = check_once(log, cached.pop("ends"))
    sat = await saturation(args.levels, args.saturation_runs) if args.saturation_runs else {}
    texts = [fleet_table(args, churn, cached)]
    if sat:
        texts.append(saturation_table(sat))
    elapsed = time.perf_counter() - t0
    texts.append(f"bench.fleet took {elapsed:.0f} s")
    data = {"args": vars(args), "churn": churn, "cached": cached, "saturation": sat, "elapsed_s": elapsed}
    write_results("fleet", data, texts)
    return data


def fleet_table(args: argparse.Namespace, churn: dict[str, Any], cached: dict[str, Any] | None) -> str:
    base = cached["approve_to_done_s"]["p50"] if cached else float("nan")
    rows = []
    for label, case in (("evicted, worker killed + added", churn), ("all cached, no kill", cached)):
        if not case:
            continue
        lat = case["approve_to_done_s"]
        peak = max(case["peak_rss_kb"].values()) / 1024
        rows.append(
            [
                label,
                case["cache"],
                f"{case['park_s']:.0f} s",
                f"{case['approve_all_s']:.0f} s",
                lat["p50"] * 1000,
                lat["p95"] * 1000,
                f"{lat['p50'] / base:.2f}×" if base == base else "-",
                f"{peak:.0f} MB",
            ]
        )
    killed = churn["churn"]
    title = (
        f"{args.runs:,} parked runs on {args.workers} workers, approved in bulk ({args.concurrency} in flight); "
        f"{killed.get('killed')} killed and {killed.get('added')} added at decision {killed.get('at_decision')}; "
        f"every run finished once (results and the tool log checked): {churn['ended']}"
    )
    headers = ["case", "cache/worker", "all parked", "all approved", "approve→done p50 ms", "p95 ms", "vs cached"]
    headers.append("peak RSS")
    return table(title, headers, rows)


def saturation_table(sat: dict[str, list[dict[str, float]]]) -> str:
    rows = []
    for s, f in zip(sat["signoff"], sat["floor"], strict=True):
        rows.append(
            [
                s["concurrency"],
                s["runs_per_s"],
                f["runs_per_s"],
                s["worker_cores_busy"],
                f["worker_cores_busy"],
                s["runs_per_cpu_s"],
                f["runs_per_cpu_s"],
                f"{s['runs_per_cpu_s'] / f['runs_per_cpu_s']:.2f}×",
            ]
        )
    headers = [
        "concurrent auto runs",
        "signoff runs/s",
        "floor runs/s",
        "signoff cores busy",
        "floor cores busy",
        "signoff runs per CPU-s",
        "floor runs per CPU-s",
        "per core vs floor",
    ]
    return table("Saturation: one worker, auto runs (model → noop → model)", headers, rows)


if __name__ == "__main__":
    run(main)
