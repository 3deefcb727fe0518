"""Where a run's bytes and RPCs go, signoff beside the floor: `python -m bench.anatomy`.

For a one-tool run ("model → noop → model") and an approval run ("model → gated_noop,
approved by update → model"), one of each kind at a time on a fresh dev server with nothing
else running: the history event by event (type, what it is, serialized bytes, payload bytes,
and for a JSON payload the bytes of each top-level field), totals by kind of event, and the
frontend RPCs the run cost (the dev server's own `service_requests` counters, read before and
after). Writes `bench/results/anatomy.json` and prints the tables.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import uuid
from collections import Counter
from typing import Any

from google.protobuf.message import Message
from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType

from bench.common import bench_env, free_port, frontend_counter, run, workers
from bench.report import table, write_results
from bench.runs import START, approve, finish, history_events, wait_paused
from signoff.agent.defaults import default_agent
from signoff.agent.snapshot import RunSnapshot
from signoff.loop.limits import DEFAULT_PAYLOAD_BUDGET, Limits
from signoff.runtime.storage import data_converter
from signoff.tools.files.scope import WorkspaceScope

RUNS = {"one-tool": ("noop", False), "approval": ("gated_noop", True)}
SETTLE = 3.0
POLLS = ("PollWorkflowTaskQueue", "PollActivityTaskQueue", "PollNexusTaskQueue")


def payloads(message: Message) -> list[Payload]:
    if isinstance(message, Payload):
        return [message]
    found: list[Payload] = []
    for descriptor, value in message.ListFields():
        if descriptor.message_type is None:
            continue
        items = (
            value.values()
            if descriptor.message_type.GetOptions().map_entry
            else ([value] if isinstance(value, Message) else value)
        )
        for item in items:
            if isinstance(item, Message):
                found += payloads(item)
    return found


def label(event: Any) -> str:
    kind = event.WhichOneof("attributes") or ""
    attrs: Any = getattr(event, kind) if kind else None
    if event.HasField("activity_task_scheduled_event_attributes"):
        return attrs.activity_type.name
    if event.HasField("marker_recorded_event_attributes"):
        return attrs.marker_name
    if event.HasField("workflow_execution_update_accepted_event_attributes"):
        return attrs.accepted_request.input.name
    if event.HasField("upsert_workflow_search_attributes_event_attributes"):
        return ",".join(sorted(attrs.search_attributes.indexed_fields))
    return ""


def fields(payload: Payload) -> dict[str, int]:
    """Bytes of each top-level field of a JSON object payload (`{}` for anything else)."""
    try:
        value = json.loads(payload.data)
    except ValueError:
        return {}
    if not isinstance(value, dict):
        return {}
    return {k: len(json.dumps(v, separators=(",", ":"))) for k, v in value.items()}


def anatomy(events: list[Any]) -> dict[str, Any]:
    rows, by_kind = [], Counter[str]()
    for event in events:
        name = EventType.Name(event.event_type).removeprefix("EVENT_TYPE_")
        found = payloads(event)
        rows.append(
            {
                "id": event.event_id,
                "type": name,
                "what": label(event),
                "bytes": event.ByteSize(),
                "payload_bytes": sum(p.ByteSize() for p in found),
                "fields": {k: v for p in found for k, v in fields(p).items()},
            }
        )
        by_kind[f"{name} {label(event)}".strip()] += event.ByteSize()
    total = sum(r["bytes"] for r in rows)
    return {"events": len(rows), "bytes": total, "rows": rows, "by_kind": dict(by_kind.most_common())}


async def rpc_counts(metrics: str) -> Counter[str]:
    """The dev server's frontend RPCs so far, by operation."""
    return await frontend_counter(metrics, "service_requests", "operation")


async def one(bench: Any, kind: str, queue: str, tool: str, gated: bool, metrics: str) -> dict[str, Any]:
    await asyncio.sleep(SETTLE)  # the server's counters are reported, not live: let earlier requests land
    before = await rpc_counts(metrics)
    handle = await START[kind](bench.client, queue, tool, 1)
    if gated:
        await wait_paused(bench.client, handle.id)
        await approve(handle, kind)
    await finish(handle, tool, 1)
    await asyncio.sleep(SETTLE)
    rpcs = await rpc_counts(metrics) - before
    result = anatomy(await history_events(bench.client, handle.id))
    result["rpcs"] = {op: n for op, n in sorted(rpcs.items()) if op not in POLLS}
    return result


def side_by_side(name: str, signoff: dict[str, Any], floor: dict[str, Any]) -> list[str]:
    kinds = sorted(set(signoff["by_kind"]) | set(floor["by_kind"]), key=lambda k: -signoff["by_kind"].get(k, 0))
    rows = [[k, signoff["by_kind"].get(k, 0), floor["by_kind"].get(k, 0)] for k in kinds]
    rows.append(["total", signoff["bytes"], floor["bytes"]])
    ops = sorted(set(signoff["rpcs"]) | set(floor["rpcs"]))
    texts = [
        table(
            f"{name}: history bytes by event ({signoff['events']} vs {floor['events']} events, "
            f"{signoff['bytes'] / floor['bytes']:.2f}×)",
            ["event", "signoff B", "floor B"],
            rows,
        ),
        table(
            f"{name}: frontend RPCs (polls left out)",
            ["operation", "signoff", "floor"],
            [[op, signoff["rpcs"].get(op, 0), floor["rpcs"].get(op, 0)] for op in ops],
        ),
    ]
    big = [r for r in signoff["rows"] if r["fields"] and r["payload_bytes"] >= 200]
    texts.append(
        table(
            f"{name}: signoff's payloads over 200 B, by field",
            ["event", "what", "payload B", "fields (B)"],
            [
                [
                    f"{r['id']} {r['type']}",
                    r["what"],
                    r["payload_bytes"],
                    ", ".join(f"{k} {v}" for k, v in sorted(r["fields"].items(), key=lambda kv: -kv[1])),
                ]
                for r in big
            ],
        )
    )
    return texts


def default_snapshot() -> RunSnapshot:
    """The `default` agent's snapshot (its five tools and instructions) as a worker with no
    MCP servers and no payload store takes it."""
    with tempfile.TemporaryDirectory() as workspace:
        snapshot = default_agent(WorkspaceScope(workspace), mcp_servers=[]).definition([]).snapshot("default", Limits())
    snapshot.payload_budget = DEFAULT_PAYLOAD_BUDGET
    return snapshot


def default_agent_run(one_tool: dict[str, Any], floor: dict[str, Any]) -> dict[str, Any]:
    """A one-tool run of the `default` agent, from the bench agent's: the same events, with
    `default_snapshot()` recorded in place of the bench agent's. Computed, not run: the bench's
    scripted model calls the bench agent's tools."""
    written = len(data_converter(None).payload_converter.to_payloads([default_snapshot()])[0].data)
    bench = next(r["fields"]["snapshot"] for r in one_tool["rows"] if r["fields"].get("snapshot"))
    total = one_tool["bytes"] - bench + written
    return {"snapshot_bytes": written, "bench_snapshot_bytes": bench, "bytes": total, "ratio": total / floor["bytes"]}


async def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.parse_args(argv)
    port = free_port()
    metrics = f"http://127.0.0.1:{port}/metrics"
    results: dict[str, dict[str, Any]] = {}
    queues = {"signoff": f"anatomy-s-{uuid.uuid4().hex[:6]}", "floor": f"anatomy-f-{uuid.uuid4().hex[:6]}"}
    async with bench_env("--metrics-port", str(port)) as bench, workers(bench, *queues.items()):
        for kind, queue in queues.items():  # warm both up before anything is counted
            for tool, gated in RUNS.values():
                await one(bench, kind, queue, tool, gated, metrics)
        for name, (tool, gated) in RUNS.items():
            results[name] = {k: await one(bench, k, queue, tool, gated, metrics) for k, queue in queues.items()}
    texts = [t for name, pair in results.items() for t in side_by_side(name, pair["signoff"], pair["floor"])]
    default = default_agent_run(results["one-tool"]["signoff"], results["one-tool"]["floor"])
    texts.append(
        table(
            "one-tool run of the `default` agent (computed: its snapshot in place of the bench agent's)",
            ["snapshot B (default / bench)", "history B", "floor B", "ratio"],
            [
                [
                    f"{default['snapshot_bytes']:,} / {default['bench_snapshot_bytes']:,}",
                    default["bytes"],
                    results["one-tool"]["floor"]["bytes"],
                    f"{default['ratio']:.2f}×",
                ]
            ],
        )
    )
    write_results("anatomy", {"runs": results, "default_agent_one_tool": default}, texts)
    return results


if __name__ == "__main__":
    run(main)
