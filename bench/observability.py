"""Bench 8, what seeing and sealing cost: `python -m bench.observability [--runs 30]`.

Runs that each wait for one approval (the `gated_noop` tool), approved by an update as soon
as they pause, on four workers of the same run, alternating:

- `plain`: signoff as configured by default;
- `metrics`: `SIGNOFF_METRICS_ADDRESS` (the SDK's Prometheus endpoint, signoff's counters
  and histogram from the workflow and activities, the pending gauge polled from visibility);
- `encrypted`: `SIGNOFF_CODEC_KEYS` on the worker and on the bench's client (every payload
  of the start, the update, activities and the result AES-256-GCM encrypted, and failure
  attributes encoded);
- `floor`: the hand-written floor workflow with its minimal update.

Reports decision → finished and start → paused (p50/p95), and worker CPU per run, with
ratios against `plain` measured in the same run. Checks that the metrics worker counted
every decision and that the encrypted runs' histories hold only ciphertext payloads.
"""

from __future__ import annotations

import argparse
import base64
import os
import re
import tempfile
import time
import uuid
from pathlib import Path

import httpx
from temporalio.client import Client

from bench.common import BenchEnv, BenchError, bench_env, free_port, run, workers
from bench.report import summary, table, write_results
from bench.runs import START, approve, finish, history_events, wait_paused
from signoff.config.environment import Environment
from signoff.runtime.connection import ConnectionSettings, connect

TOOL, ROUNDS = "gated_noop", 1
KINDS = ("plain", "metrics", "encrypted", "floor")


async def one(bench: BenchEnv, client: Client, kind: str, queue: str) -> dict[str, float]:
    t0 = time.perf_counter()
    handle = await START["floor" if kind == "floor" else "signoff"](client, queue, TOOL, ROUNDS)
    await wait_paused(bench.client, handle.id)
    t_paused = time.perf_counter()
    await approve(handle, "floor" if kind == "floor" else "signoff")
    await finish(handle, TOOL, ROUNDS)
    t_done = time.perf_counter()
    events = await history_events(bench.client, handle.id)
    if kind == "encrypted" and not all(
        _encrypted(e) for e in events if e.HasField("workflow_execution_started_event_attributes")
    ):
        raise BenchError(f"{handle.id}: the start input is not encrypted")
    return {"start_to_paused": t_paused - t0, "decision_to_finished": t_done - t_paused}


def _encrypted(event) -> bool:
    payloads = event.workflow_execution_started_event_attributes.input.payloads
    return bool(payloads) and all(p.metadata.get("encoding") == b"binary/encrypted" for p in payloads)


async def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="signoff-bench-observability-"))
    keys = folder / "codec.keys"
    keys.write_text(f"bench:{base64.b64encode(os.urandom(32)).decode()}\n")
    keys.chmod(0o600)  # a secret file is its owner's alone, or no worker reads it
    metrics_address = f"127.0.0.1:{free_port()}"
    queues = {kind: f"{kind}-{uuid.uuid4().hex[:8]}" for kind in KINDS}
    env = {
        queues["metrics"]: {"SIGNOFF_METRICS_ADDRESS": metrics_address},
        queues["encrypted"]: {"SIGNOFF_CODEC_KEYS": str(keys)},
    }
    specs = [("floor" if k == "floor" else "signoff", q) for k, q in queues.items()]
    samples: dict[str, list[dict[str, float]]] = {k: [] for k in queues}
    cpu: dict[str, float] = {}
    async with bench_env() as bench, workers(bench, *specs, env=env) as procs:
        sealed = await connect(
            ConnectionSettings.load(Environment({"TEMPORAL_ADDRESS": bench.address, "SIGNOFF_CODEC_KEYS": str(keys)}))
        )
        clients = {kind: sealed if kind == "encrypted" else bench.client for kind in KINDS}
        for _ in range(args.warmup):
            for kind, queue in queues.items():
                await one(bench, clients[kind], kind, queue)
        cpu_before = {kind: proc.cpu_seconds() for kind, proc in zip(KINDS, procs, strict=True)}
        for i in range(args.runs):
            for kind in list(queues) if i % 2 == 0 else list(queues)[::-1]:
                samples[kind].append(await one(bench, clients[kind], kind, queues[kind]))
        cpu = {
            kind: (proc.cpu_seconds() - cpu_before[kind]) / args.runs for kind, proc in zip(KINDS, procs, strict=True)
        }
        counted = _decisions(httpx.get(f"http://{metrics_address}/metrics").text)
    if counted != args.runs + args.warmup:
        raise BenchError(f"the metrics worker counted {counted} approvals, not {args.runs + args.warmup}")
    stats = {k: {m: summary([s[m] for s in v]) for m in v[0]} for k, v in samples.items()}
    plain = stats["plain"]["decision_to_finished"]["p50"]
    rows = [
        [
            kind,
            s["decision_to_finished"]["p50"] * 1000,
            s["decision_to_finished"]["p95"] * 1000,
            s["start_to_paused"]["p50"] * 1000,
            cpu[kind] * 1000,
            s["decision_to_finished"]["p50"] / plain,
            cpu[kind] / cpu["plain"],
        ]
        for kind, s in stats.items()
    ]
    text = table(
        f"What metrics and encryption cost: {args.runs} runs each, one approval (ms)",
        ["worker", "decision→finished p50", "p95", "start→paused p50", "worker CPU/run", "vs plain", "CPU vs plain"],
        rows,
    )
    data = {"args": vars(args), "stats": stats, "cpu_per_run": cpu, "approvals_counted": counted, "raw": samples}
    write_results("observability", data, [text])
    return data


def _decisions(exposition: str) -> int:
    found = re.findall(r'^signoff_decisions_total\{[^}]*outcome="approved"[^}]*\} (\S+)$', exposition, re.M)
    return int(sum(float(v) for v in found))


if __name__ == "__main__":
    run(main)
