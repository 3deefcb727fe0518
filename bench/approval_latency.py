"""Bench 2, approval round trip: `python -m bench.approval_latency [--runs 50]`.

Sequential runs that each wait for one approval, approved by an update as soon as the
pause is in the history (long-poll), alternating signoff and the floor's minimal update.
Reports start→paused, decision→finished (p50/p95), and the server-side gap between the
update's `UpdateAccepted` event and the tool activity's `ActivityTaskStarted`.
"""

from __future__ import annotations

import argparse
import time
import uuid

from temporalio.api.enums.v1 import EventType

from bench.common import BenchEnv, BenchError, bench_env, run, workers
from bench.report import summary, table, write_results
from bench.runs import START, approve, finish, history_events, wait_paused

TOOL, ROUNDS = "gated_noop", 1
TOOL_ACTIVITY = {"signoff": "signoff.tool", "floor": "floor.tool"}


def _seconds(event) -> float:
    return event.event_time.seconds + event.event_time.nanos / 1e9


def decision_gap(events, activity: str) -> dict[str, float]:
    """UpdateAccepted → the tool activity's scheduled and started events, in seconds."""
    accepted = next(e for e in events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED)
    scheduled = next(
        e
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name == activity
    )
    started = next(
        e
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
        and e.activity_task_started_event_attributes.scheduled_event_id == scheduled.event_id
    )
    if not accepted.event_id < scheduled.event_id:
        raise BenchError("the tool ran before the decision was accepted")
    return {
        "to_scheduled": _seconds(scheduled) - _seconds(accepted),
        "to_started": _seconds(started) - _seconds(accepted),
    }


async def one(bench: BenchEnv, kind: str, queue: str) -> dict[str, float]:
    client = bench.client
    t0 = time.perf_counter()
    handle = await START[kind](client, queue, TOOL, ROUNDS)
    await wait_paused(client, handle.id)
    t_paused = time.perf_counter()
    await approve(handle, kind)
    t_ack = time.perf_counter()
    await finish(handle, TOOL, ROUNDS)
    t_done = time.perf_counter()
    gap = decision_gap(await history_events(client, handle.id), TOOL_ACTIVITY[kind])
    return {
        "start_to_paused": t_paused - t0,
        "decision_to_ack": t_ack - t_paused,
        "decision_to_finished": t_done - t_paused,
        "accepted_to_tool_scheduled": gap["to_scheduled"],
        "accepted_to_tool_started": gap["to_started"],
    }


async def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args(argv)
    queues = {"signoff": f"bench-{uuid.uuid4().hex[:8]}", "floor": f"floor-{uuid.uuid4().hex[:8]}"}
    samples: dict[str, list[dict[str, float]]] = {k: [] for k in queues}
    async with bench_env() as bench, workers(bench, *queues.items()):
        for _ in range(args.warmup):
            for kind, queue in queues.items():
                await one(bench, kind, queue)
        for i in range(args.runs):
            for kind in list(queues) if i % 2 == 0 else list(queues)[::-1]:
                samples[kind].append(await one(bench, kind, queues[kind]))
    metrics = list(samples["signoff"][0])
    stats = {k: {m: summary([s[m] for s in v]) for m in metrics} for k, v in samples.items()}
    rows = []
    for m in metrics:
        s, f = stats["signoff"][m], stats["floor"][m]
        rows.append([m, s["p50"] * 1000, s["p95"] * 1000, f["p50"] * 1000, f["p95"] * 1000, s["p50"] / f["p50"]])
    text = table(
        f"Approval round trip: {args.runs} sequential runs, approved by update at the pause (ms)",
        ["interval", "signoff p50", "signoff p95", "floor p50", "floor p95", "p50 ratio"],
        rows,
    )
    data = {"args": vars(args), "stats": stats, "ratios_p50": {r[0]: r[-1] for r in rows}, "raw": samples}
    write_results("approval_latency", data, [text])
    return data


if __name__ == "__main__":
    run(main)
