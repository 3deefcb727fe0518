"""Diagnostic: server-side timelines of approval runs, signoff vs the floor.

`python -m bench.experiments.timeline --runs 15`: runs approval runs (ABBA), fetches each
history and prints, per event (by position), the median time since the decision
(the pause observed by the client), and the median duration of each step.
Honours `BENCH_WORKER_PREFIX` like the benches; `--server-arg` passes dev-server flags, e.g.
`--server-arg=--dynamic-config-value --server-arg=history.transferProcessorMaxPollRPS=10000`
(the default, 20, lets the history service read its transfer queue once per 50 ms: a workflow
task scheduled just after a read waits up to 50 ms to be dispatched). `TIMELINE_DUMP=<file>`
writes every run's events (ms from the update's workflow task) as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import uuid
from typing import Any

from temporalio.api.enums.v1 import EventType

from bench.approval_latency import ROUNDS, TOOL
from bench.common import bench_env, run, workers
from bench.runs import START, approve, finish, history_events, wait_paused


def _t(e) -> float:
    return e.event_time.seconds + e.event_time.nanos / 1e9


async def one(bench, kind, queue):
    client = bench.client
    handle = await START[kind](client, queue, TOOL, ROUNDS)
    await wait_paused(client, handle.id)
    t_paused = time.perf_counter()
    await approve(handle, kind)
    await finish(handle, TOOL, ROUNDS)
    wall = time.perf_counter() - t_paused
    events = await history_events(client, handle.id)
    accepted = next(
        i for i, e in enumerate(events) if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
    )
    # the update's workflow task started is the last WFT started before accepted
    anchor = max(i for i in range(accepted) if events[i].event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED)
    t0 = _t(events[anchor - 1])  # the WFT scheduled for the update

    def name(e):
        n = EventType.Name(e.event_type).replace("EVENT_TYPE_", "")
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
            n += "@" + ("sticky" if e.workflow_task_scheduled_event_attributes.task_queue.kind == 2 else "normal")
        return n

    rows = [(name(e), (_t(e) - t0) * 1000) for e in events]
    return wall, rows


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=15)
    p.add_argument("--kinds", default="signoff,floor")
    p.add_argument("--server-arg", action="append", default=[], help="extra `temporal server start-dev` argument")
    args = p.parse_args()
    kinds = args.kinds.split(",")
    queues = {k: f"{k}-{uuid.uuid4().hex[:8]}" for k in kinds}
    out: dict[str, list[Any]] = {k: [] for k in kinds}
    async with bench_env(*args.server_arg) as bench, workers(bench, *queues.items()):
        for k in kinds:
            for _ in range(3):
                await one(bench, k, queues[k])
        for i in range(args.runs):
            for k in kinds if i % 2 == 0 else kinds[::-1]:
                out[k].append(await one(bench, k, queues[k]))
    dump = os.environ.get("TIMELINE_DUMP")
    if dump:
        with open(dump, "w") as file:
            file.write(json.dumps(out))
    for k in kinds:
        walls = [w for w, _ in out[k]]
        print(f"\n== {k}: decision→finished p50 {statistics.median(walls) * 1000:.1f} ms")
        print("   walls:", sorted(round(w * 1000) for w in walls))
        out[k] = [(w, r[next(i for i, x in enumerate(r) if x[1] == 0.0) :]) for w, r in out[k]]
        n = min(len(r) for _, r in out[k])
        prev = 0.0
        for j in range(n):
            names = {r[j][0] for _, r in out[k]}
            med = statistics.median(r[j][1] for _, r in out[k])
            print(f"  {j:2d} {'/'.join(sorted(names)):45s} {med:7.1f}  (+{med - prev:5.1f})")
            prev = med


if __name__ == "__main__":
    run(main)
