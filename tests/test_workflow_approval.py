"""AgentRun end to end: approvals by update and signal, on a real dev server."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowUpdateFailedError

from signoff.approval.requests import ToolApprovalResponse
from signoff.contract import AgentRunResult
from signoff.messages import ChatMessage
from tests.helpers import (
    Reply,
    ScriptedModelServer,
    ScriptedRequest,
    agents_for,
    call,
    running_worker,
    start_run,
    wait_pending,
)


def echo_then_report(request: ScriptedRequest) -> Reply:
    if request.round == 1:
        return Reply.tool_calls([call("run_command", "call_1", command="echo hi")])
    return Reply.text(f"saw: {request.last.content}")


async def test_approved_command_runs_and_model_sees_output(client: Client, task_queue: str, tmp_path: Path) -> None:
    with ScriptedModelServer(echo_then_report) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_run(client, task_queue, "say hi")
            (pending,) = await wait_pending(handle)
            assert (pending["call_id"], pending["name"], pending["arguments"]) == (
                "call_1",
                "run_command",
                {"command": "echo hi"},
            )
            ack = await handle.execute_update(
                "submit_tool_approval", ToolApprovalResponse.approve("call_1", approver="alice")
            )
            result: AgentRunResult = await handle.result()
            attributes = (await handle.describe()).raw_description.workflow_execution_info.search_attributes
    assert (ack["accepted"], ack["pending"]) == (["call_1"], [])
    # Only a wait is advertised: once the run stops waiting, the status attributes are removed.
    assert set(attributes.indexed_fields) & {"SignoffStatus", "SignoffPendingTools"} == set()
    assert "SignoffAgent" in attributes.indexed_fields
    assert result.finish_reason == "stop"
    assert result.messages == [
        ChatMessage.user("say hi"),
        ChatMessage.assistant(None, [call("run_command", "call_1", command="echo hi")]),
        ChatMessage.tool("exit code: 0\nhi\n", "call_1"),
        ChatMessage.assistant("saw: exit code: 0\nhi\n"),
    ]
    assert [(a.call_id, a.approved, a.approver) for a in result.approvals] == [("call_1", True, "alice")]


async def test_denied_by_signal_reaches_model_as_rejection(client: Client, task_queue: str, tmp_path: Path) -> None:
    with ScriptedModelServer(echo_then_report) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_run(client, task_queue)
            await wait_pending(handle)
            await handle.signal("tool_approval", {"call_id": "call_1", "approved": False, "reason": "Back up first"})
            result = await handle.result()
    assert result.messages[2] == ChatMessage.tool("Rejected: Back up first", "call_1")
    assert result.text == "saw: Rejected: Back up first"


async def test_update_for_unknown_id_is_rejected_naming_pending_ids(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    with ScriptedModelServer(echo_then_report) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_run(client, task_queue)
            await wait_pending(handle)
            with pytest.raises(WorkflowUpdateFailedError) as failure:
                await handle.execute_update("submit_tool_approval", {"call_id": "nope", "approved": True})
            assert "pending call ids: call_1" in str(failure.value.cause)
            await handle.signal("tool_approval", {"call_id": "*", "approved": False})
            result = await handle.result()
    assert result.messages[2].content == "Rejected: User denied"
