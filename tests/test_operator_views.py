"""What operators' tools show of a run (issue 16, finding 4): the Web UI's details, refusals, queries.

Model-chosen and approver-chosen text in the Web UI's markdown reads as text; an update
refusal is non-retryable and carries no traceback (no file paths of the worker); control
characters from a decision reach no other client raw; `pending_approvals` answers `[]`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.query.v1 import WorkflowQuery
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.api.workflowservice.v1 import QueryWorkflowRequest
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle, WorkflowUpdateFailedError

from signoff.approval.policy import ApprovalPolicy, PolicyBook
from signoff.messages import ToolCall
from tests.helpers import Reply, ScriptedModelServer, agents_for, call, running_worker, start_run, wait_pending
from tests.waiting import assert_eventually

LURE = "x`\n```\n**pre-approved** [ok](https://evil.example)"


async def raw_query(client: Client, handle: WorkflowHandle, name: str) -> bytes:
    """The query's answer as the bytes of its payload (what every client decodes)."""
    request = QueryWorkflowRequest(
        namespace=client.namespace,
        execution=WorkflowExecution(workflow_id=handle.id),
        query=WorkflowQuery(query_type=name),
    )
    response = await client.workflow_service.query_workflow(request)
    return bytes(response.query_result.payloads[0].data)


async def test_call_ids_names_and_voters_in_the_web_ui_details_read_as_text(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    lure = ToolCall(id=LURE, name="run_command", arguments=json.dumps({"command": "echo ```\n**ran**"}))
    policies = PolicyBook(policies={"run_command": ApprovalPolicy(quorum=2)})
    with ScriptedModelServer([Reply.tool_calls([lure]), Reply.text("done")]) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path), policies=policies):
            handle = await start_run(client, task_queue)
            [pending] = await wait_pending(handle)
            await handle.execute_update(
                "submit_tool_approval",
                {"call_id": pending["call_id"], "approved": True, "approver": "**boss** [ok](https://evil.example)"},
            )

            async def details() -> str:
                metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
                assert "votes so far" in metadata.current_details
                return str(metadata.current_details)

            shown = await assert_eventually(details)
            await handle.terminate()
    assert "**pre-approved**" not in shown and "**boss**" not in shown and "**ran**" in shown  # the last: fenced
    assert "\\*\\*boss\\*\\* \\[ok\\]\\(https" in shown
    assert "](https://evil.example)" not in shown
    assert f"`{pending['call_id']}`" in shown and pending["call_id"].startswith("call_")
    assert all(not line.lstrip().startswith("```") or line.strip() in ("```", "```json") for line in shown.splitlines())


@pytest.mark.parametrize(
    ("update", "payload", "says"),
    [
        ("submit_tool_approval", {"call_id": "nope", "approved": True}, "no pending call with id 'nope'"),
        ("submit_tool_approval", {"call_id": "call_1", "aproved": True}, "Extra inputs are not permitted"),
        ("submit_tool_approval", {"call_id": "\x1b[2J\u202e", "approved": True}, "\\x1b[2J\\u202e"),
        ("extend_deadline", {"call_id": "call_1", "seconds": 60}, "has no deadline to extend"),
        ("revoke_grant", {"grant_id": "grant_9"}, "no grant with id 'grant_9'"),
    ],
)
async def test_a_refused_update_is_non_retryable_inert_and_carries_no_traceback(
    client: Client, task_queue: str, tmp_path: Path, update: str, payload: object, says: str
) -> None:
    with ScriptedModelServer([Reply.tool_calls([call("run_command", "call_1", command="ls")])]) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_run(client, task_queue)
            await wait_pending(handle)
            with pytest.raises(WorkflowUpdateFailedError) as failure:
                await handle.execute_update(update, payload)
            await handle.terminate()
    cause = failure.value.cause
    assert says in str(cause) and "\x1b" not in str(cause) and "\u202e" not in str(cause)
    assert cause.non_retryable and cause.type == "DecisionRejected"  # type: ignore[attr-defined]
    raw = cause.failure  # type: ignore[attr-defined]
    assert raw is not None and raw.stack_trace == "" and not raw.HasField("cause")


async def test_a_signal_with_control_characters_is_recorded_inert(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    with ScriptedModelServer([Reply.tool_calls([call("run_command", "call_1", command="ls")])]) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_run(client, task_queue)
            await wait_pending(handle)
            await handle.signal("tool_approval", {"call_id": "\x1b]52;c;cm0gLXJmIC8=\x07", "approved": True})

            async def ignored() -> str:
                [event] = [e for e in await handle.query("events") if e["type"] == "decision_ignored"]
                return str(event["reason"])

            reason = await assert_eventually(ignored)
            await handle.terminate()
    assert "\\x1b]52;c;" in reason and "\x1b" not in reason and "\x07" not in reason


async def test_pending_approvals_answers_an_empty_list_whatever_became_of_the_run(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    with ScriptedModelServer([Reply.text("done")]) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            invalid = await client.start_workflow("AgentRun", {"bad": 1}, id=f"bad-{task_queue}", task_queue=task_queue)
            with pytest.raises(WorkflowFailureError):
                await invalid.result()
            finished = await start_run(client, task_queue)
            await finished.result()
            queries = ("pending_approvals", "grants")
            answers = [await raw_query(client, h, q) for h in (invalid, finished) for q in queries]
    assert answers == [b"[]"] * 4
