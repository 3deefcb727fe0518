"""Payloads without the defaults (`signoff.text.wire`): smaller histories, the same runs.

Activity inputs and results, the agent snapshot and the start input leave out the fields
at their defaults in the payloads signoff's converter writes. What must not change: what
every reader decodes (the defaults come back), every digest and seal (`model_dump` keeps
every field), and the JSON shapes the contract names (the run's result, query answers).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from signoff.activities.models import ChatInput, ChatTurn, Requester, ToolInput
from signoff.agent.snapshot import RunSnapshot, SnapshotTool
from signoff.approval.requests import ToolApprovalRequest
from signoff.contract import AgentRunInput, AgentRunResult, RunOptions
from signoff.loop.limits import Limits
from signoff.loop.transcript import TranscriptDelta
from signoff.messages import ChatMessage, ChatResponse, ToolCall, ToolSpec, Usage
from signoff.runtime.storage import data_converter
from tests.helpers import Reply, ScriptedModelServer, agents_for, call, running_worker, start_run, wait_pending

CONVERTER = data_converter(None).payload_converter
HISTORIES = Path(__file__).parent / "histories"


def written(value: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(CONVERTER.to_payloads([value])[0].data)
    return data


def round_trip(value: Any) -> Any:
    return CONVERTER.from_payloads(CONVERTER.to_payloads([value]), [type(value)])[0]


def snapshot() -> RunSnapshot:
    spec = ToolSpec(name="noop", description="nothing", parameters={"type": "object"})
    return RunSnapshot(agent="a", tools=[SnapshotTool(spec=spec), SnapshotTool(spec=spec, gate="always")])


def test_defaults_are_left_out_of_payloads_and_come_back_when_read() -> None:
    start = AgentRunInput(agent="default", prompt="go", options=RunOptions(max_rounds=3))
    assert written(start) == {"prompt": "go", "options": {"max_rounds": 3}}
    chat = ChatInput(agent="a", transcript=TranscriptDelta(messages=[ChatMessage.user("hi")]), requester=Requester())
    assert written(chat) == {
        "agent": "a",
        "transcript": {"messages": [chat.transcript.messages[0].model_dump()]},
        "requester": {},
    }
    turn = ChatTurn(response=ChatResponse(message=ChatMessage.assistant("done")))
    assert set(written(turn)) == {"response"}
    spec = snapshot().tools[0].spec.model_dump()
    assert written(snapshot()) == {
        "agent": "a",
        "tools": [
            {"spec": spec},
            {"spec": spec, "gate": "always"},
        ],
    }
    for value in (start, chat, turn, snapshot()):
        assert round_trip(value) == value


def test_values_that_are_not_the_defaults_are_kept() -> None:
    chat = ChatInput(agent="a", transcript=TranscriptDelta(), model="m", temperature=0.0, snapshot_digest="d")
    assert {"model": "m", "temperature": 0.0, "snapshot_digest": "d"}.items() <= written(chat).items()
    limits = Limits(max_tool_output=2_048)
    assert written(limits) == {"max_tool_output": 2_048}
    tool = ToolInput(agent="a", call=ToolCall(id="c", name="n", arguments="{}"), tokens=["t"])
    assert written(tool)["tokens"] == ["t"]
    assert round_trip(chat) == chat and round_trip(limits) == limits and round_trip(tool) == tool


def test_digests_and_dumps_keep_every_field() -> None:
    """`model_dump` is what digests and seals are computed over: it does not leave defaults out."""
    dumped = snapshot().model_dump(mode="json")
    assert dumped["limits"] == Limits().model_dump() and dumped["tools"][0]["policy"] is None
    assert "mcp" not in dumped["tools"][0]  # absent, as it always was (so digests stay what they were)
    recorded = 0
    for event in json.loads((HISTORIES / "approved.json").read_text())["events"]:
        done = event.get("activityTaskCompletedEventAttributes")
        for payload in done["result"]["payloads"] if done else []:
            result = json.loads(base64.b64decode(payload["data"]))
            if result.get("snapshot"):
                assert RunSnapshot.model_validate(result["snapshot"]).digest() == result["snapshot_digest"]
                assert (
                    RunSnapshot.model_validate(written(RunSnapshot.model_validate(result["snapshot"]))).digest()
                    == (result["snapshot_digest"])
                )
                recorded += 1
    assert recorded == 1


def test_contract_shapes_keep_every_field() -> None:
    """The run's result and query answers are the contract's JSON: nulls and empty lists stay."""
    result = AgentRunResult(
        finish_reason="stop", messages=[ChatMessage.user("hi")], rounds=1, usage=Usage(), approvals=[]
    )
    assert written(result)["text"] is None and written(result)["messages"][0]["tool_calls"] is None
    request = ToolApprovalRequest(call_id="c", name="n")
    assert set(written(request)) == set(request.model_dump())


async def test_a_run_records_compact_payloads_and_its_snapshot_query_answers_every_field(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    with ScriptedModelServer(
        [Reply.tool_calls([call("run_command", "call_1", command="echo hi")]), Reply.text("done")]
    ) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_run(client, task_queue)
            await wait_pending(handle)
            answered = await handle.query("agent_snapshot")
            await handle.execute_update("submit_tool_approval", {"call_id": "call_1", "approved": True})
            result: AgentRunResult = await handle.result()
            events = [e async for e in handle.fetch_history_events()]
    assert result.text == "done"
    assert answered["limits"] == Limits().model_dump() and all("policy" in t for t in answered["tools"])
    started = json.loads(events[0].workflow_execution_started_event_attributes.input.payloads[0].data)
    assert started == {"prompt": "go"}
    scheduled = [
        json.loads(e.activity_task_scheduled_event_attributes.input.payloads[0].data)
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    assert len(scheduled) == 3 and not any({"model", "temperature", "tokens"} & set(s) for s in scheduled)
    first = next(
        json.loads(e.activity_task_completed_event_attributes.result.payloads[0].data)
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
    )
    assert (
        "limits" not in first["snapshot"]
        and RunSnapshot.model_validate(first["snapshot"]).digest() == (first["snapshot_digest"])
    )
