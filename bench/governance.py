"""Bench 7, what governance costs: `python -m bench.governance [--runs 30]`.

Runs that each wait for one approval (the `gated_noop` tool), approved by an update as
soon as they pause, on four workers of the same run, alternating:

- `plain`: signoff as configured by default (anyone may decide);
- `verified`: a policy file making `gated_noop` need a verified approver, and a JWKS with a
  person's Ed25519 key (as `signoff keys new` makes it); each decision is signed for its call
  as a signer signs it, once the run pauses (its request instance is drawn then; signing and
  the two questions it asks are not timed): verified by the update's validator and again by
  the tool activity before the tool runs, which also spends it (`signoff.activities.spent`);
- `notify`: notifications to a webhook served by this process (`approval_requested` and
  `approval_decided` per run: two `signoff.notify` activities);
- `floor`: the hand-written floor workflow with its minimal update.

Reports decision → finished and start → paused (p50/p95), history events per run, and the
tool activity's own time on the server's clock (started → completed: for `verified` it holds
the signature check), with ratios against `plain` and against the floor measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle

from bench.common import BenchEnv, BenchError, bench_env, run, workers
from bench.report import summary, table, write_results
from bench.runs import START, approve, finish, history_events, wait_paused
from signoff.operator import run_client
from signoff.signing.derived import ServedRuns
from signoff.signing.keys import SigningKey, new_key_pair, signed_decision

TOOL, ROUNDS = "gated_noop", 1


class _Hook(BaseHTTPRequestHandler):
    received = 0

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).received += 1
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


async def signed_approval(client: Client, key: SigningKey, handle: WorkflowHandle[Any, Any]) -> dict[str, Any]:
    """The decision on the bench's gated call, signed as a signer signs it: for the call the run
    shows, in the run as the server describes it (`signoff.signing.derived`)."""
    (request,) = await run_client.pending(handle)
    facts = await run_client.run_facts(client, handle.id)
    return signed_decision(key, request, run=facts, served=ServedRuns(("*",)))


def tool_seconds(events: list[Any]) -> float:
    """The tool activity's started → completed, on the server's clock."""
    started = next(
        e
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
        and e.activity_task_started_event_attributes.scheduled_event_id == _tool_scheduled(events)
    )
    completed = next(
        e
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
        and e.activity_task_completed_event_attributes.scheduled_event_id == _tool_scheduled(events)
    )
    return completed.event_time.ToNanoseconds() / 1e9 - started.event_time.ToNanoseconds() / 1e9


def _tool_scheduled(events: list[Any]) -> int:
    names = ("signoff.tool", "floor.tool")
    return next(
        e.event_id
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name in names
    )


async def one(bench: BenchEnv, kind: str, queue: str, key: SigningKey) -> dict[str, float]:
    client = bench.client
    t0 = time.perf_counter()
    handle = await START["floor" if kind == "floor" else "signoff"](client, queue, TOOL, ROUNDS)
    await wait_paused(client, handle.id)
    t_paused = time.perf_counter()
    decision = await signed_approval(client, key, handle) if kind == "verified" else None
    t_decided = time.perf_counter()  # signing (and the two questions it asks) is not timed
    if decision is not None:
        await handle.execute_update("submit_tool_approval", decision)
    else:
        await approve(handle, "floor" if kind == "floor" else "signoff")
    result = await finish(handle, TOOL, ROUNDS)
    t_done = time.perf_counter()
    if kind == "verified" and not result.approvals[0].verified:
        raise BenchError(f"{handle.id}: the verified run's approval was not verified")
    events = await history_events(client, handle.id)
    return {
        "start_to_paused": t_paused - t0,
        "decision_to_finished": t_done - t_decided,
        "events": float(len(events)),
        "tool_activity": tool_seconds(events),
    }


async def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="signoff-bench-governance-"))
    pem, entry = new_key_pair("bench", kid="bench-1")
    (folder / "bench.pem").write_bytes(pem)
    (folder / "bench.pem").chmod(0o600)
    (folder / "approvers.json").write_text(json.dumps({"keys": [entry]}))
    (folder / "policies.json").write_text(json.dumps({TOOL: {"verified": True}}))
    key = SigningKey.load(folder / "bench.pem", "bench-1")
    hook = ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    threading.Thread(target=hook.serve_forever, daemon=True).start()
    queues = {kind: f"{kind}-{uuid.uuid4().hex[:8]}" for kind in ("plain", "verified", "notify", "floor")}
    env = {
        queues["verified"]: {
            "SIGNOFF_POLICY_FILE": str(folder / "policies.json"),
            "SIGNOFF_APPROVER_KEYS": str(folder / "approvers.json"),
        },
        queues["notify"]: {"SIGNOFF_NOTIFY_URLS": f"http://127.0.0.1:{hook.server_address[1]}/hook"},
    }
    specs = [("floor" if k == "floor" else "signoff", q) for k, q in queues.items()]
    samples: dict[str, list[dict[str, float]]] = {k: [] for k in queues}
    async with bench_env() as bench, workers(bench, *specs, env=env):
        for _ in range(args.warmup):
            for kind, queue in queues.items():
                await one(bench, kind, queue, key)
        for i in range(args.runs):
            order = list(queues) if i % 2 == 0 else list(queues)[::-1]
            for kind in order:
                samples[kind].append(await one(bench, kind, queues[kind], key))
    hook.shutdown()
    stats = {k: {m: summary([s[m] for s in v]) for m in v[0]} for k, v in samples.items()}
    rows = []
    for kind, s in stats.items():
        d = s["decision_to_finished"]["p50"]
        rows.append(
            [
                kind,
                d * 1000,
                s["decision_to_finished"]["p95"] * 1000,
                s["start_to_paused"]["p50"] * 1000,
                s["events"]["p50"],
                s["tool_activity"]["p50"] * 1000,
                d / stats["plain"]["decision_to_finished"]["p50"],
                d / stats["floor"]["decision_to_finished"]["p50"],
            ]
        )
    text = table(
        f"What governance costs: {args.runs} runs each, one approval (ms); notices received: {_Hook.received}",
        [
            "worker",
            "decision→finished p50",
            "p95",
            "start→paused p50",
            "events/run",
            "tool activity p50",
            "vs plain",
            "vs floor",
        ],
        rows,
    )
    data = {"args": vars(args), "stats": stats, "notices_received": _Hook.received, "raw": samples}
    write_results("governance", data, [text])
    return data


if __name__ == "__main__":
    run(main)
