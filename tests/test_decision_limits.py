"""Floods and out-of-range numbers in decisions (issue 16, finding 3; CONTRACT v3 "Input limits").

One signal with 10,000 decisions wrote 10,000 events and pushed the run's start out of
the `events` query; `ttl_seconds: 1e308` passed validation and crashed the handler.
Now at most 100 decisions are taken per request and every number is bounded: over that,
the update is rejected and the signal recorded as one `decision_ignored` event.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowUpdateFailedError

from signoff.contract import AgentRunResult, RunOptions
from tests.helpers import (
    Reply,
    ScriptedModelServer,
    agents_for,
    call,
    running_worker,
    start_run,
    task_failures,
    wait_pending,
)
from tests.waiting import assert_eventually

OUT_OF_RANGE: list[tuple[str, dict[str, Any]]] = [
    ("grant ttl 1e308", {"grant": {"match": "tool", "ttl_seconds": 1e308}}),
    ("grant ttl over 366 days", {"grant": {"match": "tool", "ttl_seconds": 366 * 86400 + 1}}),
    ("grant uses over 10,000", {"grant": {"match": "tool", "max_uses": 10_001}}),
    ("edited arguments nested 65 deep", {"arguments": {"command": "ls", "x": eval("[" * 64 + "]" * 64)}}),
]


def commands(count: int) -> list[Reply]:
    return [
        Reply.tool_calls([call("run_command", f"call_{i}", command=f"echo {i}") for i in range(count)]),
        Reply.text("done"),
    ]


async def test_ten_thousand_decisions_in_one_signal_are_one_ignored_event(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    with ScriptedModelServer(commands(1)) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_run(client, task_queue)
            await wait_pending(handle)
            flood = [{"call_id": f"x{i}", "approved": True} for i in range(10_000)]
            await handle.signal("tool_approval", flood)

            async def ignored() -> list[dict[str, Any]]:
                events = await handle.query("events")
                assert [e for e in events if e["type"] == "decision_ignored"]
                return list(events)

            events = await assert_eventually(ignored)
            await handle.signal("tool_approval", {"call_id": "call_0", "approved": True})
            result: AgentRunResult = await handle.result()
            assert await task_failures(handle) == []
    [refused] = [e for e in events if e["type"] == "decision_ignored"]
    assert "10,000 decisions in one request: at most 100" in refused["reason"] and refused["payload"] is None
    assert events[0]["seq"] == 0 and len(events) < 10  # the run's own events are all still there
    assert result.approvals[0].approved


async def test_an_update_with_more_than_a_hundred_decisions_is_rejected(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    with ScriptedModelServer(commands(1)) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_run(client, task_queue)
            await wait_pending(handle)
            with pytest.raises(WorkflowUpdateFailedError) as failure:
                await handle.execute_update("submit_tool_approval", [{"call_id": "call_0", "approved": True}] * 101)
            assert len(await handle.query("pending_approvals")) == 1
            await handle.terminate()
    assert "101 decisions in one request: at most 100" in str(failure.value.cause)


@pytest.mark.parametrize(("case", "extra"), OUT_OF_RANGE, ids=[c for c, _ in OUT_OF_RANGE])
async def test_out_of_range_numbers_are_rejected_and_the_next_decision_goes_through(
    client: Client, task_queue: str, tmp_path: Path, case: str, extra: dict[str, Any]
) -> None:
    with ScriptedModelServer(commands(1)) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_run(client, task_queue)
            await wait_pending(handle)
            bad = {"call_id": "call_0", "approved": True, **extra}
            with pytest.raises(WorkflowUpdateFailedError):
                await handle.execute_update("submit_tool_approval", bad)
            await handle.signal("tool_approval", bad)
            await handle.execute_update("submit_tool_approval", {"call_id": "call_0", "approved": True})
            result: AgentRunResult = await handle.result()
            events = await handle.query("events")
            assert await task_failures(handle) == []
    assert [e["type"] for e in events].count("decision_ignored") == 1
    assert result.approvals[0].approved and result.approvals[0].approver is None


async def test_a_deadline_cannot_be_extended_past_366_days_or_to_infinity(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    with ScriptedModelServer(commands(1)) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_run(client, task_queue, options=RunOptions(approval_timeout_seconds=3600))
            await wait_pending(handle)
            for seconds in (1e308, 366 * 86400 + 1):
                with pytest.raises(WorkflowUpdateFailedError) as failure:
                    await handle.execute_update("extend_deadline", {"call_id": "call_0", "seconds": seconds})
                assert "less than or equal to 31622400" in str(failure.value.cause)
            moved = await handle.execute_update("extend_deadline", {"call_id": "call_0", "seconds": 60})
            assert moved["call_id"] == "call_0"
            assert await task_failures(handle) == []
            await handle.terminate()


@pytest.mark.parametrize(
    "options",
    [
        {"approval_timeout_seconds": 1e308},
        {"approval_timeout_seconds": float("inf")},
        {"temperature": float("inf")},
    ],
)
async def test_a_start_with_an_out_of_range_number_fails_as_invalid_input(
    client: Client, task_queue: str, tmp_path: Path, options: dict[str, Any]
) -> None:
    with ScriptedModelServer([]) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await client.start_workflow(
                "AgentRun", {"prompt": "go", "options": options}, id=f"range-{task_queue}", task_queue=task_queue
            )
            with pytest.raises(Exception) as failure:
                await handle.result()
            assert await task_failures(handle) == []
    assert "InvalidInput" in str(failure.value.cause) and model.request_count == 0  # type: ignore[attr-defined]
