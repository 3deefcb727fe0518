"""Bench 7, what governance costs: `python -m bench.governance [--runs 30]`.

Runs that each wait for one approval (the `gated_noop` tool), approved by an update as
soon as they pause, on four workers of the same run, alternating:

- `plain`: signoff as configured by default (anyone may decide);
- `verified`: a policy file making `gated_noop` need a verified approver, and HS256 approver
  keys; each decision carries a token (verified by the `signoff.identify` local activity,
  recorded in history);
- `notify`: notifications to a webhook served by this process (`approval_requested` and
  `approval_decided` per run: two `signoff.notify` activities);
- `floor`: the hand-written floor workflow with its minimal update.

Reports decision → finished and start → paused (p50/p95) and history events per run, with
ratios against `plain` and against the floor measured in the same run.
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

from bench.common import BenchEnv, bench_env, run, workers
from bench.report import summary, table, write_results
from bench.runs import START, approve, finish, history_events, wait_paused
from signoff.identity import issue_token

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


async def one(bench: BenchEnv, kind: str, queue: str, token: str) -> dict[str, float]:
    client = bench.client
    t0 = time.perf_counter()
    handle = await START["floor" if kind == "floor" else "signoff"](client, queue, TOOL, ROUNDS)
    await wait_paused(client, handle.id)
    t_paused = time.perf_counter()
    if kind == "verified":
        await handle.execute_update("submit_tool_approval", {"call_id": "call_1_1", "approved": True, "token": token})
    else:
        await approve(handle, "floor" if kind == "floor" else "signoff")
    await finish(handle, TOOL, ROUNDS)
    t_done = time.perf_counter()
    events = await history_events(client, handle.id)
    return {"start_to_paused": t_paused - t0, "decision_to_finished": t_done - t_paused, "events": float(len(events))}


async def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="signoff-bench-governance-"))
    (folder / "approver.key").write_text("k" * 48)
    (folder / "policies.json").write_text(json.dumps({TOOL: {"verified": True}}))
    token = issue_token(folder / "approver.key", "bench", ttl=__import__("datetime").timedelta(hours=2))
    hook = ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    threading.Thread(target=hook.serve_forever, daemon=True).start()
    queues = {kind: f"{kind}-{uuid.uuid4().hex[:8]}" for kind in ("plain", "verified", "notify", "floor")}
    env = {
        queues["verified"]: {"SIGNOFF_POLICY_FILE": str(folder / "policies.json"),
                             "SIGNOFF_APPROVER_KEYS": str(folder / "approver.key")},
        queues["notify"]: {"SIGNOFF_NOTIFY_URLS": f"http://127.0.0.1:{hook.server_address[1]}/hook"},
    }  # fmt: skip
    specs = [("floor" if k == "floor" else "signoff", q) for k, q in queues.items()]
    samples: dict[str, list[dict[str, float]]] = {k: [] for k in queues}
    async with bench_env() as bench, workers(bench, *specs, env=env):
        for _ in range(args.warmup):
            for kind, queue in queues.items():
                await one(bench, kind, queue, token)
        for i in range(args.runs):
            order = list(queues) if i % 2 == 0 else list(queues)[::-1]
            for kind in order:
                samples[kind].append(await one(bench, kind, queues[kind], token))
    hook.shutdown()
    stats = {k: {m: summary([s[m] for s in v]) for m in v[0]} for k, v in samples.items()}
    rows = []
    for kind, s in stats.items():
        d = s["decision_to_finished"]["p50"]
        rows.append([kind, d * 1000, s["decision_to_finished"]["p95"] * 1000, s["start_to_paused"]["p50"] * 1000,
                     s["events"]["p50"], d / stats["plain"]["decision_to_finished"]["p50"],
                     d / stats["floor"]["decision_to_finished"]["p50"]])  # fmt: skip
    text = table(
        f"What governance costs: {args.runs} runs each, one approval (ms); notices received: {_Hook.received}",
        ["worker", "decision→finished p50", "p95", "start→paused p50", "events/run", "vs plain", "vs floor"],
        rows,
    )
    data = {"args": vars(args), "stats": stats, "notices_received": _Hook.received, "raw": samples}
    write_results("governance", data, [text])
    return data


if __name__ == "__main__":
    run(main)
