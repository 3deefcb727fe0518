"""signoff beside Pydantic AI and the OpenAI Agents SDK on Temporal, and the floor: `python -m bench.peers`.

Every system does the same runs against the same dev server and scripted model, each worker in
its own process (`bench.common.WorkerProcess`), in interleaved blocks (the order reversed every
other block): a one-tool auto run (model → `noop` → model), a one-tool approval run (model →
`gated_noop`, approved by an update at the pause → model) and a denial (the same, denied with a
reason). Reported per system, with its ratio to the floor's figure measured in the same run:
auto run start → result and approval decision → result (p50, p95), the worker's CPU time per run,
history events, bytes and payloads per run (from the real histories), RSS per parked run
(`bench.parked`, fresh server and worker per system), crash recovery (`bench.crash_recovery`:
worker SIGKILLed with runs parked, a new one started, all approved) and billable Temporal Cloud
Actions per run (`bench.actions`, from the histories, checked against the server's own count by
`bench.peers.metered`), per run and per 10,000 runs a day.

Every run is checked: its result is the scripted answer; the model was asked twice and its second
turn saw exactly the tool's answer (or, denied, `Rejected: <reason>`); the tool ran once (not at
all when denied), from the tools' own call log; and at the end every tool call of every run,
parked and crashed ones too, is counted: none ran twice, none is missing.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import uuid
from importlib.util import find_spec
from pathlib import Path
from statistics import fmean
from typing import Any

from bench import crash_recovery, parked
from bench.common import BenchEnv, bench_env, free_port, workers
from bench.peers.checks import Checks
from bench.peers.metered import metered_all
from bench.peers.systems import RUNS, SYSTEMS, TOOL_CALLS, Context, block
from bench.peers.tables import actions_table, side_by_side
from bench.report import summary, write_results
from bench.tool_calls import TOOL_LOG

# What each peer needs installed (the `peers` extra), by the module its worker imports.
NEEDS = {"pydantic_ai": "pydantic_ai.durable_exec.temporal", "openai_agents": "temporalio.openai_agents"}
PARKED_WARMUP = 3  # bench.parked's warm-up runs, each of which runs the tool once
Samples = dict[str, dict[str, list[dict[str, float]]]]  # by system, by kind of run


def order(systems: list[str], i: int) -> list[str]:
    """Forward in even blocks, reversed in odd ones: drift spreads evenly."""
    return systems if i % 2 == 0 else systems[::-1]


async def interleaved(contexts: dict[str, Context], runs: int, warmup: int) -> Samples:
    systems = list(contexts)
    samples: Samples = {k: {r: [] for r in RUNS} for k in systems}
    for i in range(warmup + runs):
        for kind in order(systems, i):
            result = await block(contexts[kind])
            for name, sample in result.items() if i >= warmup else ():
                samples[kind][name].append(sample)
    return samples


async def same_server(bench: BenchEnv, checks: Checks, args: argparse.Namespace, metrics_url: str) -> tuple:
    """The interleaved blocks, then the metered Actions, on one set of workers; then crash recovery."""
    systems: list[str] = args.systems
    queues = {kind: f"peers-{kind}-{uuid.uuid4().hex[:6]}" for kind in systems}
    async with workers(bench, *queues.items()) as procs:
        contexts = {k: Context(bench, checks, k, queues[k], p) for k, p in zip(systems, procs, strict=True)}
        samples = await interleaved(contexts, args.runs, args.warmup)
        metered = await metered_all(contexts, args.actions_runs, metrics_url) if args.actions_runs else {}
    crash = await crashes(bench, systems, args.crash_runs, args.crash_repeats) if args.crash_runs else {}
    return samples, metered, crash


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


def actions(by_run: dict[str, list[dict[str, float]]], metered: dict[str, Any] | None) -> dict[str, Any]:
    """Billable Actions per run of each kind: the metered figure (history + heartbeats) where
    measured, else the interleaved runs' history count (heartbeats unknown)."""
    if metered:
        return metered
    return {run: {"billable": fmean(s["actions"] for s in runs), "heartbeats": None} for run, runs in by_run.items()}


def stats(samples: Samples, metered: dict, crash: dict, parked_rows: dict) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for kind, by_run in samples.items():
        out[kind] = {run: {m: summary([s[m] for s in runs]) for m in runs[0]} for run, runs in by_run.items()}
        out[kind]["actions"] = actions(by_run, metered.get(kind))
    for kind, found in crash.items():
        out.setdefault(kind, {})["crash"] = {m: summary([s[m] for s in found]) for m in found[0]}
    for kind, row in parked_rows.items():
        out[kind]["parked"] = row
    return out


def expected_calls(systems: list[str], args: argparse.Namespace, peers: list[str]) -> dict[str, int]:
    """Tool calls each system's runs make: one per auto and approved run, none per denial (in the
    blocks and the metered runs); one per crash-recovery run and its warm-up (twice for a peer:
    again at a 1 s sticky timeout); one per parked run and warm-up."""
    per_block = sum(TOOL_CALLS.values())
    runs = (args.warmup + args.runs + args.actions_runs) * per_block
    crash = args.crash_repeats * (args.crash_runs + 1) if args.crash_runs else 0
    park = args.parked + PARKED_WARMUP if args.parked else 0
    return {k: runs + crash * (2 if k in peers else 1) + park for k in systems}


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
    parser.add_argument(
        "--actions-runs", type=int, default=3, help="runs of each kind per system metered by the server (0: skip)"
    )
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
    port = free_port()
    async with bench_env("--metrics-port", str(port)) as bench:
        checks = Checks(bench.model, log)
        samples, metered, crash = await same_server(bench, checks, args, f"http://127.0.0.1:{port}/metrics")
    parked_rows = {}
    for kind in systems if args.parked else []:
        print(f"peers: {kind}, {args.parked} parked...", flush=True)
        parked_rows[kind] = await parked.one_count(kind, args.parked, 1)
    calls = checks.totals(expected_calls(systems, args, [k for k in systems if k in NEEDS]))
    out = stats(samples, metered, crash, parked_rows)
    checked = ", ".join(f"{n} {what}" for what, n in sorted(checks.runs.items()))
    note = (
        f"\nChecked: {checked} runs, warm-up and metered ones included (model transcript, tool call log, "
        f"result); tool calls by system, parked and crash runs included: {calls}."
    )
    tables = [side_by_side(out, systems, args), actions_table(out, systems, args.actions_runs) + note]
    data = {"args": vars(args), "stats": out, "checked": dict(checks.runs), "tool_calls": calls, "raw": samples}
    data["crash_raw"] = crash
    write_results("peers", data, tables)
    return data
