"""signoff beside Pydantic AI and the OpenAI Agents SDK on Temporal, and the floor: `python -m bench.peers`.

Every system does the same runs against the same dev server and scripted model, each worker in
its own process (`bench.common.WorkerProcess`), in interleaved blocks (the order reversed every
other block): a one-tool auto run (model → `noop` → model), a one-tool approval run (model →
`gated_noop`, approved by an update at the pause → model) and a denial (the same, denied with a
reason). Reported per system, with its ratio to the floor's figure measured in the same run:
auto run start → result and approval decision → result (p50, p95), the worker's CPU time per run,
history events, bytes and payloads per run (from the real histories), RSS per parked run
(`bench.parked`, fresh server and worker per system) and crash recovery (`bench.crash_recovery`:
worker SIGKILLed with runs parked, a new one started, all approved).

Every run is checked: its result is the scripted answer; the model was asked twice and its second
turn saw exactly the tool's answer (or, denied, `Rejected: <reason>`); the tool ran once (not at
all when denied), from the tools' own call log; and at the end every tool call of every run,
parked and crashed ones too, is counted: none ran twice, none is missing.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowHandle

from bench import crash_recovery, parked
from bench.anatomy import payloads
from bench.common import BenchEnv, WorkerProcess, bench_env, check_text, workers
from bench.peers.checks import Checks
from bench.report import summary, table, write_results
from bench.runs import START, approve, deny, finish, history_bytes, history_events, result_text, wait_paused
from bench.tool_calls import TOOL_LOG

SYSTEMS = ("signoff", "pydantic_ai", "openai_agents", "floor")
LABELS = {"signoff": "signoff", "pydantic_ai": "Pydantic AI", "openai_agents": "OpenAI Agents", "floor": "floor"}
# What each peer needs installed (the `peers` extra), by the module its worker imports.
NEEDS = {"pydantic_ai": "pydantic_ai.durable_exec.temporal", "openai_agents": "temporalio.openai_agents"}
RUNS = ("auto", "approval", "denial")
REASON = "not this time"
PARKED_WARMUP = 3  # bench.parked's warm-up runs, each of which runs the tool once


class Context:
    """One system's worker and queue in the shared bench."""

    def __init__(self, bench: BenchEnv, checks: Checks, kind: str, queue: str, worker: WorkerProcess) -> None:
        self.bench, self.checks, self.kind, self.queue, self.worker = bench, checks, kind, queue, worker

    @property
    def client(self) -> Client:
        return self.bench.client

    async def start(self, tool: str) -> tuple[WorkflowHandle, str]:
        tag = uuid.uuid4().hex[:12]
        return await START[self.kind](self.client, self.queue, tool, 1, f"{self.kind}-{tag}", tag), tag

    async def shape(self, workflow_id: str) -> dict[str, float]:
        events = await history_events(self.client, workflow_id)
        return {
            "events": float(len(events)),
            "bytes": float(history_bytes(events)),
            "payloads": float(sum(len(payloads(e)) for e in events)),
        }


async def auto_run(ctx: Context) -> dict[str, float]:
    cpu0, t0 = ctx.worker.cpu_seconds(), time.perf_counter()
    handle, tag = await ctx.start("noop")
    await finish(handle, "noop", 1)
    wall, cpu = time.perf_counter() - t0, ctx.worker.cpu_seconds() - cpu0
    ctx.checks.run(handle.id, tag, "noop", "noop:1", 1, "auto")
    return {"start_to_result": wall, "worker_cpu": cpu, **await ctx.shape(handle.id)}


async def approval_run(ctx: Context, approved: bool) -> dict[str, float]:
    """Start, wait for the pause, decide by update, wait for the result; check it."""
    cpu0, t0 = ctx.worker.cpu_seconds(), time.perf_counter()
    handle, tag = await ctx.start("gated_noop")
    await wait_paused(ctx.client, handle.id)
    t_paused = time.perf_counter()
    if approved:
        await approve(handle, ctx.kind)
        await finish(handle, "gated_noop", 1)
    else:
        await deny(handle, ctx.kind, REASON)
        check_text(result_text(await handle.result()), 1, f"Rejected: {REASON}", handle.id)
    t_done = time.perf_counter()
    cpu = ctx.worker.cpu_seconds() - cpu0
    message = "gated:1" if approved else f"Rejected: {REASON}"
    ctx.checks.run(handle.id, tag, "gated_noop", message, int(approved), "approved" if approved else "denied")
    return {
        "start_to_paused": t_paused - t0,
        "decision_to_result": t_done - t_paused,
        "worker_cpu": cpu,
        **await ctx.shape(handle.id),
    }


async def block(ctx: Context) -> dict[str, dict[str, float]]:
    auto = await auto_run(ctx)
    return {"auto": auto, "approval": await approval_run(ctx, True), "denial": await approval_run(ctx, False)}


def order(systems: list[str], i: int) -> list[str]:
    """Forward in even blocks, reversed in odd ones: drift spreads evenly."""
    return systems if i % 2 == 0 else systems[::-1]


async def interleaved(bench: BenchEnv, checks: Checks, systems: list[str], runs: int, warmup: int) -> dict:
    queues = {kind: f"peers-{kind}-{uuid.uuid4().hex[:6]}" for kind in systems}
    samples: dict[str, dict[str, list[dict[str, float]]]] = {k: {r: [] for r in RUNS} for k in systems}
    async with workers(bench, *queues.items()) as procs:
        contexts = {k: Context(bench, checks, k, queues[k], p) for k, p in zip(systems, procs, strict=True)}
        for i in range(warmup + runs):
            for kind in order(systems, i):
                result = await block(contexts[kind])
                for name, sample in result.items():
                    samples[kind][name].append(sample) if i >= warmup else None
    return samples


async def crashes(bench: BenchEnv, systems: list[str], runs: int, repeats: int) -> dict[str, list[dict[str, float]]]:
    """`bench.crash_recovery`'s measure for every system, and for each peer again with the sticky
    queue's schedule-to-start timeout at signoff's 1 s (`<peer>@1s`) instead of the SDK's 10 s."""
    found: dict[str, list[dict[str, float]]] = {}
    peers = [k for k in systems if k in NEEDS]
    for i in range(repeats):
        for kind in order(systems, i):
            found.setdefault(kind, []).append(await crash_recovery.one(bench, kind, runs))
        os.environ["BENCH_PEER_STICKY_S"] = "1"
        try:
            for kind in order(peers, i):
                found.setdefault(f"{kind}@1s", []).append(await crash_recovery.one(bench, kind, runs))
        finally:
            del os.environ["BENCH_PEER_STICKY_S"]
    return found


def stats(samples: dict, crash: dict, parked_rows: dict) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for kind, by_run in samples.items():
        out[kind] = {run: {m: summary([s[m] for s in runs]) for m in runs[0]} for run, runs in by_run.items()}
    for kind, found in crash.items():
        out.setdefault(kind, {})["crash"] = {m: summary([s[m] for s in found]) for m in found[0]}
    for kind, row in parked_rows.items():
        out[kind]["parked"] = row
    return out


def expected_calls(systems: list[str], args: argparse.Namespace, peers: list[str]) -> dict[str, int]:
    """Tool calls each system's runs make: one per auto and approved run, none per denial; one per
    crash-recovery run and its warm-up; one per parked run and warm-up."""
    blocks = (args.warmup + args.runs) * 2
    crash = args.crash_repeats * (args.crash_runs + 1) if args.crash_runs else 0
    park = args.parked + PARKED_WARMUP if args.parked else 0
    return {k: blocks + crash * (2 if k in peers else 1) + park for k in systems}


def cell(value: float | None, floor: float | None, unit: str, scale: float = 1.0, digits: int = 1) -> str:
    """`61.2 ms (1.02x)`, with the ratio to the floor's; the floor's own `60.0 ms (1.00)`; `—` where
    not measured."""
    if value is None:
        return "—"
    text = f"{value * scale:,.{digits}f}{unit}"
    if not floor:
        return text
    return f"{text} ({value / floor:.2f}{'' if value == floor else '×'})"


def history_cell(run: dict[str, Any], floor: dict[str, Any] | None) -> str:
    size = f"{run['events']['p50']:.0f} ev / {run['bytes']['p50'] / 1000:.1f} kB / {run['payloads']['p50']:.0f} pl"
    return f"{size} ({run['bytes']['p50'] / floor['bytes']['p50']:.2f}×)" if floor else size


ROWS: list[tuple[str, str, str, str, str, float]] = [
    # label, run, metric, statistic, unit, scale
    ("auto run: start → result p50", "auto", "start_to_result", "p50", " ms", 1000),
    ("auto run: start → result p95", "auto", "start_to_result", "p95", " ms", 1000),
    ("worker CPU per auto run (mean)", "auto", "worker_cpu", "mean", " ms", 1000),
    ("approval: start → paused p50", "approval", "start_to_paused", "p50", " ms", 1000),
    ("approval: decision → result p50", "approval", "decision_to_result", "p50", " ms", 1000),
    ("approval: decision → result p95", "approval", "decision_to_result", "p95", " ms", 1000),
    ("worker CPU per approval run (mean)", "approval", "worker_cpu", "mean", " ms", 1000),
    ("crash: new worker start → first run done p50", "crash", "to_first_done_s", "p50", " s", 1),
    ("crash: new worker start → all runs done p50", "crash", "to_all_done_s", "p50", " s", 1),
    ("crash: new worker start → ready p50", "crash", "worker_ready_s", "p50", " s", 1),
]


def figure(found: dict[str, Any], run: str, metric: str, statistic: str) -> float | None:
    return found.get(run, {}).get(metric, {}).get(statistic)


def side_by_side(out: dict[str, dict[str, Any]], systems: list[str], args: argparse.Namespace) -> str:
    floor = out.get("floor", {})
    rows = [
        [label, *(cell(figure(out[k], r, m, s), figure(floor, r, m, s), unit, scale) for k in systems)]
        for label, r, m, s, unit, scale in ROWS
        if any(figure(out[k], r, m, s) is not None for k in systems)
    ]
    sticky = [cell(figure(out.get(f"{k}@1s", {}), "crash", "to_first_done_s", "p50"), None, " s", 1) for k in systems]
    if any(c != "—" for c in sticky):
        rows.append(["crash, peers' sticky timeout at signoff's 1 s: → first run done p50", *sticky])
    for run in RUNS:
        history = [history_cell(out[k][run], floor.get(run)) for k in systems]
        rows.append([f"history, {run} run: events / bytes / payloads", *history])
    parked_figures = (
        (f"RSS per parked run ({args.parked} parked)", "per_parked_run_kb", " kB", 0),
        (f"{args.parked} parked: approved → all done", "approve_to_done_s", " s", 2),
    )
    for label, key, unit, digits in parked_figures if args.parked else ():
        found = {k: out[k]["parked"][key] for k in systems}
        rows.append([label, *(cell(found[k], found.get("floor"), unit, 1, digits) for k in systems)])
    title = (
        f"signoff and its peers on Temporal: {args.runs} interleaved blocks (auto, approval, denial) per system, "
        "one dev server, one scripted model; (ratio to the floor, same run)"
    )
    return table(title, ["per run", *(LABELS[k] for k in systems)], rows)


def installed(module: str) -> bool:
    try:
        return find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


def require(systems: list[str]) -> None:
    """Exit with the install command when a peer asked for is not installed."""
    missing = [NEEDS[k] for k in systems if k in NEEDS and not installed(NEEDS[k])]
    if missing:
        raise SystemExit(
            f"bench.peers: {', '.join(missing)} not installed; `pip install -e '.[peers]'`, "
            "or leave the peers out with `--systems signoff,floor`"
        )


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.peers", description=__doc__)
    parser.add_argument("--runs", type=int, default=10, help="blocks per system (40 for the published table)")
    parser.add_argument("--warmup", type=int, default=2, help="blocks per system first, not counted")
    parser.add_argument("--parked", type=int, default=100, help="runs parked per system for RSS per run (0: skip)")
    parser.add_argument("--crash-runs", type=int, default=5, help="runs parked when the worker is killed (0: skip)")
    parser.add_argument("--crash-repeats", type=int, default=1)
    parser.add_argument("--systems", default=",".join(SYSTEMS), help=f"comma-separated, of {', '.join(SYSTEMS)}")
    args = parser.parse_args(argv)
    args.systems = [s for s in args.systems.split(",") if s]
    unknown = set(args.systems) - set(SYSTEMS)
    if unknown or not args.systems or args.runs < 1:
        parser.error(f"--systems: unknown {sorted(unknown)}" if unknown else "need a system and --runs ≥ 1")
    return args


async def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse(argv)
    systems: list[str] = args.systems
    require(systems)
    log = Path(tempfile.mkdtemp(prefix="signoff-bench-peers-")) / "tool-calls.log"
    os.environ[TOOL_LOG] = str(log)  # every worker started from here inherits it
    async with bench_env() as bench:
        checks = Checks(bench.model, log)
        samples = await interleaved(bench, checks, systems, args.runs, args.warmup)
        crash = await crashes(bench, systems, args.crash_runs, args.crash_repeats) if args.crash_runs else {}
    parked_rows = {}
    for kind in systems if args.parked else []:
        print(f"peers: {kind}, {args.parked} parked...", flush=True)
        parked_rows[kind] = await parked.one_count(kind, args.parked, 1)
    calls = checks.totals(expected_calls(systems, args, [k for k in systems if k in NEEDS]))
    out = stats(samples, crash, parked_rows)
    checked = ", ".join(f"{n} {what}" for what, n in sorted(checks.runs.items()))
    text = side_by_side(out, systems, args)
    note = f"\nChecked: {checked} runs (model transcript, tool call log, result); tool calls by system: {calls}."
    data = {"args": vars(args), "stats": out, "checked": dict(checks.runs), "tool_calls": calls, "raw": samples}
    data["crash_raw"] = crash
    write_results("peers", data, [text + note])
    return data
