"""Cases the fuzzer (tests/fuzz/) found, each kept as a named test.

1. A signal of 150 copies of a decision carrying a 20,000-character token is over
   Temporal's 2 MB blob limit: the server refuses it before the run sees it (the fuzzer's
   harness had not expected the client's error). The run must be untouched by it.
2. Decisions signalled while a run continued as new (the fuzz server suggests it every
   40 events) made the server fail that workflow task with UNHANDLED_COMMAND: Temporal
   keeping the signals, not the workflow's code failing. The decisions must all be applied
   in the new run and no other task failure appear.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import WorkflowTaskFailedCause
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment

from signoff.contract import AgentRunResult
from tests.conftest import start_dev_server
from tests.helpers import (
    Reply,
    ScriptedModelServer,
    ScriptedRequest,
    agents_for,
    call,
    running_worker,
    start_run,
    task_failures,
    wait_pending,
)

UNHANDLED_COMMAND = WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND


async def test_a_signal_over_the_blob_limit_is_refused_by_the_server_and_the_run_goes_on(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    with ScriptedModelServer(
        [Reply.tool_calls([call("run_command", "call_1", command="echo hi")]), Reply.text("done")]
    ) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_run(client, task_queue)
            await wait_pending(handle)
            flood = [{"call_id": "call_1", "approved": True, "token": "x" * 20_000}] * 150
            with pytest.raises(RPCError) as refused:
                await handle.signal("tool_approval", flood)
            assert len(await handle.query("pending_approvals")) == 1
            await handle.signal("tool_approval", {"call_id": "call_1", "approved": True})
            result: AgentRunResult = await handle.result()
            assert await task_failures(handle) == []
    assert "exceeds limit" in refused.value.message and result.text == "done"


@pytest.fixture(scope="module")
async def early_continue_as_new() -> AsyncIterator[WorkflowEnvironment]:
    env = await start_dev_server("--dynamic-config-value", "limit.historyCount.suggestContinueAsNew=20")
    yield env
    await env.shutdown()


async def test_decisions_signalled_while_a_run_continues_as_new_are_all_applied(
    early_continue_as_new: WorkflowEnvironment, tmp_path: Path
) -> None:
    client, queue = early_continue_as_new.client, f"tq-{uuid.uuid4()}"

    def script(request: ScriptedRequest) -> Reply:  # five rounds of two gated calls each
        if request.round <= 5:
            return Reply.tool_calls([call("run_command", f"call_{request.round}_{n}", command="true") for n in (1, 2)])
        return Reply.text("done")

    with ScriptedModelServer(script) as model:
        async with running_worker(client, queue, model, agents_for(tmp_path)):
            handle = await start_run(client, queue)
            latest = client.get_workflow_handle(handle.id)
            result_task = asyncio.ensure_future(handle.result())
            while not result_task.done():  # deny whatever waits, as fast as it comes, across continue-as-new
                try:
                    await latest.signal("tool_approval", {"call_id": "*", "approved": False, "reason": "no"})
                except RPCError as exc:  # the run finished between the check and the signal: the loop ends
                    if exc.status != RPCStatusCode.NOT_FOUND:
                        raise
                await asyncio.wait({result_task}, timeout=0.05)
            result: AgentRunResult = result_task.result()
            causes, runs = await _failed_task_causes(client, handle.id, handle.result_run_id)
    assert len(runs) > 1  # it did continue as new while decisions kept coming
    assert result.text == "done" and len(result.approvals) == 10
    assert all(not a.approved for a in result.approvals)
    assert set(causes) <= {UNHANDLED_COMMAND}  # Temporal keeping a signal; never the workflow's own failure


async def _failed_task_causes(client: Client, workflow_id: str, run_id: str | None) -> tuple[list[int], list[str]]:
    """The causes of every failed workflow task of the chain from `run_id`, and the chain's run ids."""
    causes: list[int] = []
    runs: list[str] = []
    while run_id:
        runs.append(run_id)
        current, run_id = run_id, None
        async for event in client.get_workflow_handle(workflow_id, run_id=current).fetch_history_events():
            if event.HasField("workflow_task_failed_event_attributes"):
                causes.append(event.workflow_task_failed_event_attributes.cause)
            if event.HasField("workflow_execution_continued_as_new_event_attributes"):
                run_id = event.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
    return causes, runs


@pytest.mark.parametrize(
    ("answered", "message"),
    [
        (["call_2", "call_2"], "messages[3] is a tool message for 'call_2'"),  # found by the fuzzer
        (["call_9"], "messages[2] is a tool message for 'call_9'"),
    ],
)
async def test_a_start_transcript_whose_tool_message_answers_no_call_fails_at_once(
    client: Client, task_queue: str, tmp_path: Path, answered: list[str], message: str
) -> None:
    """Found by the fuzzer: a call answered twice reached the model, whose provider refused it
    (HTTP 400: a tool message for an unknown call), after a model request and as ProviderError."""
    messages = [
        {"role": "user", "content": "resume"},
        {"role": "assistant", "tool_calls": [{"id": "call_2", "name": "list_dir", "arguments": "{}"}]},
        *({"role": "tool", "content": "an earlier answer", "tool_call_id": i} for i in answered),
    ]
    with ScriptedModelServer([Reply.text("done")]) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await client.start_workflow(
                "AgentRun",
                {"agent": "default", "messages": messages},
                id=f"resumed-{uuid.uuid4()}",
                task_queue=task_queue,
            )
            with pytest.raises(WorkflowFailureError) as failed:
                await handle.result()
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "InvalidInput" and message in cause.message
    assert model.requests == []  # refused before the model was asked
