"""AgentRun decisions: edits, batches, partial decisions, `*`, malformed input, deadlines."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError

from signoff.contract import RunOptions
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


def two_commands(request: ScriptedRequest) -> Reply:
    if request.round == 1:
        return Reply.tool_calls(
            [call("run_command", "call_a", command="echo a"), call("run_command", "call_b", command="echo b")]
        )
    return Reply.text("|".join(m.content or "" for m in request.messages if m.role == "tool"))


def gated_and_auto(request: ScriptedRequest) -> Reply:
    if request.round == 1:
        return Reply.tool_calls([call("run_command", "call_a", command="echo a"), call("list_dir", "call_b")])
    return Reply.text("done")


@asynccontextmanager
async def paused_with_two_calls(client: Client, task_queue: str, tmp_path: Path) -> AsyncIterator[WorkflowHandle]:
    """A run of `two_commands` paused with call_a and call_b pending."""
    with ScriptedModelServer(two_commands) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_run(client, task_queue)
            await wait_pending(handle, 2)
            yield handle


async def test_edited_arguments_run_and_audit_keeps_both(client: Client, task_queue: str, tmp_path: Path) -> None:
    async with paused_with_two_calls(client, task_queue, tmp_path) as handle:
        edit = {"call_id": "call_a", "approved": True, "arguments": {"command": "echo edited"}}
        ack = await handle.execute_update("submit_tool_approval", edit)
        assert (ack["accepted"], ack["pending"]) == (["call_a"], ["call_b"])
        assert ack["decided"][0]["name"] == "run_command" and ack["decided"][0]["outcome"] == "approved"
        await handle.execute_update("submit_tool_approval", {"call_id": "call_b", "approved": False})
        result = await handle.result()
    told = (
        "exit code: 0\nedited\n\n[signoff: the approver edited this call's arguments before it ran; "
        'it ran with {"command": "echo edited"}]'
    )
    assert [m.content for m in result.messages[2:4]] == [told, "Rejected: User denied"]
    record = result.approvals[0]
    assert (record.arguments, record.edited_arguments) == ({"command": "echo a"}, {"command": "echo edited"})


async def test_auto_call_runs_while_gated_call_waits_and_order_is_kept(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    (tmp_path / "f.txt").write_text("x")
    with ScriptedModelServer(gated_and_auto) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_run(client, task_queue)
            await wait_pending(handle)

            async def auto_call_answered() -> None:
                events = await handle.query("events", 0)
                assert any(e["type"] == "tool_result" and e["call_id"] == "call_b" for e in events)

            from tests.helpers import assert_eventually

            await assert_eventually(auto_call_answered)
            await handle.signal("tool_approval", [{"call_id": "call_a", "approved": True}])
            result = await handle.result()
    assert [(m.role, m.tool_call_id) for m in result.messages[2:4]] == [("tool", "call_a"), ("tool", "call_b")]
    assert result.messages[3].content == "f.txt"


async def test_star_decides_all_pending_calls(client: Client, task_queue: str, tmp_path: Path) -> None:
    async with paused_with_two_calls(client, task_queue, tmp_path) as handle:
        ack = await handle.execute_update("submit_tool_approval", {"call_id": "*", "approved": True})
        result = await handle.result()
    assert (ack["accepted"], ack["pending"]) == (["call_a", "call_b"], [])
    assert result.text == "exit code: 0\na\n|exit code: 0\nb\n"


@pytest.mark.parametrize(
    "payload, problem",
    [
        ({"call_id": "call_a", "aproved": True}, "aproved"),
        ({"call_id": "zzz", "approved": True}, "no pending call with id 'zzz'"),
        ("yes please", "ToolApprovalResponse"),
        ([], "no decision given"),
    ],
)
async def test_update_rejects_bad_decisions_naming_pending_ids(
    client: Client, task_queue: str, tmp_path: Path, payload: object, problem: str
) -> None:
    async with paused_with_two_calls(client, task_queue, tmp_path) as handle:
        with pytest.raises(WorkflowUpdateFailedError) as failure:
            await handle.execute_update("submit_tool_approval", payload)
        message = str(failure.value.cause)
        assert problem in message and "pending call ids: call_a, call_b" in message
        assert len(await handle.query("pending_approvals")) == 2
        await handle.terminate()


async def test_update_rejects_a_second_decision_for_the_same_call(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with paused_with_two_calls(client, task_queue, tmp_path) as handle:
        await handle.execute_update("submit_tool_approval", {"call_id": "call_a", "approved": False})
        with pytest.raises(WorkflowUpdateFailedError) as failure:
            await handle.execute_update("submit_tool_approval", {"call_id": "call_a", "approved": True})
        assert "already decided" in str(failure.value.cause)
        await handle.terminate()


async def test_malformed_signal_is_recorded_and_the_run_survives(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with paused_with_two_calls(client, task_queue, tmp_path) as handle:
        await handle.signal("tool_approval", {"call_id": "call_a", "aproved": True})
        await handle.signal("tool_approval", 42)
        await handle.signal("tool_approval", {"call_id": "nope", "approved": True})
        await handle.signal("tool_approval", {"call_id": "*", "approved": False, "reason": "later"})
        result = await handle.result()
        events = await handle.query("events", 0)
    ignored = [e for e in events if e["type"] == "decision_ignored"]
    assert len(ignored) == 3
    assert "aproved" in ignored[0]["reason"] and ignored[0]["payload"] == {"call_id": "call_a", "aproved": True}
    assert "no pending call with id 'nope'" in ignored[2]["reason"]
    assert result.text == "Rejected: later|Rejected: later"


async def test_undecided_calls_are_denied_when_the_deadline_passes(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    with ScriptedModelServer(two_commands) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            options = RunOptions(approval_timeout_seconds=1)
            handle = await start_run(client, task_queue, options=options)
            (first, _) = await wait_pending(handle, 2)
            assert first["expires_at"] is not None
            await handle.signal("tool_approval", {"call_id": "call_a", "approved": False, "reason": "no"})
            result = await handle.result()
    assert [m.content for m in result.messages[2:4]] == ["Rejected: no", "Rejected: No decision within 1s"]
    assert [(a.call_id, a.timed_out) for a in result.approvals] == [("call_a", False), ("call_b", True)]


async def test_queries_report_status_messages_and_pending(client: Client, task_queue: str, tmp_path: Path) -> None:
    with ScriptedModelServer(two_commands) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_run(client, task_queue, "hello")
            await wait_pending(handle, 2)
            status = await handle.query("status")
            messages = await handle.query("messages")
            metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
            description = await handle.describe()
            await handle.terminate()
    assert status["status"] == "AwaitingApproval" and [p["call_id"] for p in status["pending"]] == ["call_a", "call_b"]
    assert messages[0] == ChatMessage.user("hello").model_dump()
    info = description.raw_description.workflow_execution_info
    attributes = {k: v for k, v in info.search_attributes.indexed_fields.items()}
    assert json.loads(attributes["SignoffStatus"].data) == "AwaitingApproval"
    assert json.loads(attributes["SignoffPendingTools"].data) == ["run_command"]
    details = metadata.current_details  # what the Web UI shows as the run's current details
    assert "call_a" in details and "submit_tool_approval" in details
    assert f"signoff approve {handle.id} call_a" in details


async def test_stateless_resume_from_messages_with_responses(client: Client, task_queue: str, tmp_path: Path) -> None:
    transcript = [
        ChatMessage.user("two things"),
        ChatMessage.assistant(
            None, [call("run_command", "call_a", command="echo a"), call("run_command", "call_b", command="echo b")]
        ),
    ]
    with ScriptedModelServer(two_commands) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_run(
                client,
                task_queue,
                None,
                messages=transcript,
                options=RunOptions(tool_approval_responses=[{"call_id": "call_a", "approved": False, "reason": "no"}]),
            )
            (pending,) = await wait_pending(handle)
            assert pending["call_id"] == "call_b"
            await handle.execute_update("submit_tool_approval", {"call_id": "call_b", "approved": True})
            result = await handle.result()
    assert result.text == "Rejected: no|exit code: 0\nb\n"
    assert model.request_count == 1


async def test_responses_for_calls_that_are_not_open_fail_the_run(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    from temporalio.client import WorkflowFailureError

    with ScriptedModelServer(two_commands) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            options = RunOptions(tool_approval_responses=[{"call_id": "call_x", "approved": True}])
            handle = await start_run(client, task_queue, "hi", options=options)
            with pytest.raises(WorkflowFailureError) as failure:
                await handle.result()
    assert "invalid tool_approval_responses" in str(failure.value.cause)
