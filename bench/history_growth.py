"""Bench 5, history growth: `python -m bench.history_growth [--rounds 1,10,50,200]`.

One run per length, signoff and the floor, each round "model → noop". Follows
continue-as-new and reports, per run length: runs in the chain, events and bytes
(largest single run and total), bytes per round over the previous length, and which
event types the bytes are in. Bytes are the serialized size of the history protos.
"""

from __future__ import annotations

import argparse
import json
import uuid
from collections import Counter
from typing import Any

from temporalio.api.enums.v1 import EventType

from bench.common import bench_env, run, workers
from bench.report import table, target, write_results
from bench.runs import START, finish, history_events
from signoff.messages import ChatMessage, ToolCall

TOOL = "noop"
TARGET_RATIO = 2.0


async def chain(client, workflow_id: str) -> list[list]:
    """The histories of every run of `workflow_id`, first to last."""
    runs, run_id = [], ""
    first = await client.get_workflow_handle(workflow_id).describe()
    run_id = first.run_id
    # describe() gives the latest run: walk back from the first run instead.
    async for w in client.list_workflows(f'WorkflowId="{workflow_id}"'):
        run_id = w.run_id  # visibility lists newest first; the last one seen is the first run
    while run_id:
        events = await history_events(client, workflow_id, run_id)
        runs.append(events)
        last = events[-1]
        cont = last.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW
        run_id = last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id if cont else ""
    return runs


def new_message_bytes(round_: int) -> int:
    """The JSON size of what one round adds to the transcript: the call and its answer."""
    arguments = json.dumps({"x": str(round_)})
    call = ChatMessage.assistant(None, [ToolCall(id=f"call_{round_}_1", name=TOOL, arguments=arguments)])
    answer = ChatMessage.tool(f"noop:{round_}", f"call_{round_}_1")
    return len(call.model_dump_json()) + len(answer.model_dump_json())


def by_type(events) -> dict[str, int]:
    sizes: Counter[str] = Counter()
    for e in events:
        sizes[EventType.Name(e.event_type).removeprefix("EVENT_TYPE_")] += e.ByteSize()
    return dict(sizes.most_common())


async def measure(bench, kind: str, queue: str, rounds: int) -> dict:
    handle = await START[kind](bench.client, queue, TOOL, rounds)
    await finish(handle, TOOL, rounds)
    runs = await chain(bench.client, handle.id)
    sizes = [sum(e.ByteSize() for e in events) for events in runs]
    return {
        "kind": kind,
        "rounds": rounds,
        "runs": len(runs),
        "events_total": sum(len(r) for r in runs),
        "events_max_run": max(len(r) for r in runs),
        "bytes_total": sum(sizes),
        "bytes_max_run": max(sizes),
        "bytes_by_event_type": by_type([e for r in runs for e in r]),
    }


async def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", default="1,10,50,200")
    parser.add_argument(
        "--server-arg",
        action="append",
        default=[],
        help="extra dev-server flag, e.g. --server-arg=--dynamic-config-value "
        "--server-arg=limit.historySize.suggestContinueAsNew=1000000",
    )
    args = parser.parse_args(argv)
    lengths = [int(r) for r in args.rounds.split(",")]
    queues = {"signoff": f"bench-{uuid.uuid4().hex[:8]}", "floor": f"floor-{uuid.uuid4().hex[:8]}"}
    rows = []
    async with bench_env(*args.server_arg) as bench, workers(bench, *queues.items()):
        for n in lengths:
            for kind, queue in queues.items():
                rows.append(await measure(bench, kind, queue, n))
    lines = []
    prev: dict[str, dict[str, Any]] = {}
    for r in rows:
        floor = next(f for f in rows if f["kind"] == "floor" and f["rounds"] == r["rounds"])
        p = prev.get(r["kind"])
        per_round = (r["bytes_total"] - p["bytes_total"]) / (r["rounds"] - p["rounds"]) if p else None
        r["bytes_per_round_marginal"] = per_round
        prev[r["kind"]] = r
        lines.append(
            [
                r["kind"],
                r["rounds"],
                r["runs"],
                r["events_total"],
                r["events_max_run"],
                r["bytes_total"],
                r["bytes_max_run"],
                per_round if per_round is not None else "-",
                new_message_bytes(r["rounds"]),
                f"{r['bytes_total'] / floor['bytes_total']:.2f}×",
            ]
        )
    one = {r["kind"]: r for r in rows if r["rounds"] == min(lengths)}
    ratio = one["signoff"]["bytes_total"] / one["floor"]["bytes_total"]
    text = table(
        f"History growth (model → noop per round). {min(lengths)}-round run vs floor: {ratio:.2f}× bytes "
        f"(target ≤ {TARGET_RATIO}: {target(ratio <= TARGET_RATIO)})",
        [
            "workflow",
            "rounds",
            "runs (CAN)",
            "events",
            "events max run",
            "bytes total",
            "bytes max run",
            "bytes/round (marginal)",
            "new msg bytes/round",
            "bytes vs floor",
        ],
        lines,
    )
    longest = [r for r in rows if r["rounds"] == max(lengths)]
    breakdown = table(
        f"Where the bytes are, {max(lengths)}-round run (bytes by event type)",
        ["event type", *(r["kind"] for r in longest)],
        [[t, *(r["bytes_by_event_type"].get(t, 0) for r in longest)] for t in longest[0]["bytes_by_event_type"]],
    )
    data = {
        "args": vars(args),
        "rows": rows,
        "one_tool_ratio": ratio,
        "target": {"one_tool_ratio": TARGET_RATIO, "met": ratio <= TARGET_RATIO},
    }
    write_results("history_growth", data, [text, breakdown])
    return data


if __name__ == "__main__":
    run(main)
