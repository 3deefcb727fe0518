"""Continue-as-new: a long run stays bounded, and a paused run survives it."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from signoff.contract import AgentRunResult
from tests.conftest import start_dev_server
from tests.helpers import (
    Reply,
    ScriptedModelServer,
    ScriptedRequest,
    agents_for,
    assert_eventually,
    call,
    running_worker,
    start_run,
    wait_pending,
)
from tests.test_forgery import STATE_KEY, UNSANDBOXED, Attacker

SUGGEST_AFTER_EVENTS = 30


@pytest.fixture(scope="module")
async def small_history_env() -> AsyncIterator[WorkflowEnvironment]:
    """A dev server that suggests continue-as-new after a few events."""
    env = await start_dev_server(
        "--dynamic-config-value", f"limit.historyCount.suggestContinueAsNew={SUGGEST_AFTER_EVENTS}"
    )
    yield env
    await env.shutdown()


def rounds_then_gate(auto_rounds: int):
    def script(request: ScriptedRequest) -> Reply:
        if request.round <= auto_rounds:
            return Reply.tool_calls([call("list_dir", f"call_{request.round}")])
        if request.round == auto_rounds + 1:
            return Reply.tool_calls([call("run_command", "call_gate", command="echo gated")])
        return Reply.text(f"{sum(m.role == 'tool' for m in request.messages)} tool messages")

    return script


async def run_ids(client: Client, workflow_id: str) -> list[str]:
    return [w.run_id async for w in client.list_workflows(f'WorkflowId="{workflow_id}"')]


async def test_long_run_continues_as_new_and_keeps_its_transcript(
    small_history_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    client, queue = small_history_env.client, f"tq-{uuid.uuid4()}"
    with ScriptedModelServer(rounds_then_gate(8)) as model:
        async with running_worker(client, queue, model, agents_for(tmp_path)):
            handle = await start_run(client, queue, options={"max_rounds": 20})
            latest = client.get_workflow_handle(handle.id)
            await wait_pending(latest, 1, timeout=20)
            await latest.execute_update("submit_tool_approval", {"call_id": "call_gate", "approved": True})
            result: AgentRunResult = await handle.result()
    assert result.text == "9 tool messages"
    assert result.rounds == 10 and len(result.messages) == 1 + 9 * 2 + 1
    assert [a.call_id for a in result.approvals] == ["call_gate"]

    async def several_runs() -> None:
        assert len(await run_ids(client, handle.id)) > 1

    await assert_eventually(several_runs)


async def test_run_paused_across_continue_as_new_resumes_with_one_decision(
    small_history_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    client, queue = small_history_env.client, f"tq-{uuid.uuid4()}"
    with ScriptedModelServer(rounds_then_gate(3)) as model:
        async with running_worker(client, queue, model, agents_for(tmp_path)):
            handle = await start_run(client, queue, options={"approval_timeout_seconds": 3600})
            latest = client.get_workflow_handle(handle.id)
            (before,) = await wait_pending(latest, 1, timeout=20)
            first_run = (await latest.describe()).run_id
            for _ in range(SUGGEST_AFTER_EVENTS):  # each signal is a workflow task: history grows past the limit
                await latest.signal("tool_approval", {"call_id": "not-a-call", "approved": True})

            async def continued() -> None:
                assert (await latest.describe()).run_id != first_run
                assert await latest.query("pending_approvals") == [before]

            await assert_eventually(continued, 20)
            await latest.execute_update("submit_tool_approval", {"call_id": "call_gate", "approved": True})
            result: AgentRunResult = await handle.result()
    assert result.messages[-2].content == "exit code: 0\ngated\n"
    assert result.approvals[0].requested_at is not None and result.approvals[0].approved


async def test_with_a_state_key_a_run_adopts_the_state_it_sealed_and_a_copy_elsewhere_is_refused(
    small_history_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """The state a run continues with is sealed for its workflow id and chain: the run it
    starts adopts it; the same genuine state continued into another workflow is refused."""
    client, queue = small_history_env.client, f"tq-{uuid.uuid4()}"
    attacker_queue = f"attacker-{uuid.uuid4()}"
    with ScriptedModelServer(rounds_then_gate(8)) as model:
        async with (
            running_worker(client, queue, model, agents_for(tmp_path), state_key=STATE_KEY),
            Worker(client, task_queue=attacker_queue, workflows=[Attacker], workflow_runner=UNSANDBOXED),
        ):
            handle = await start_run(client, queue, options={"max_rounds": 20})
            latest = client.get_workflow_handle(handle.id)
            await wait_pending(latest, 1, timeout=20)
            sealed = await _continued_state(client.get_workflow_handle(handle.id, run_id=handle.result_run_id))
            copy = await client.start_workflow(
                Attacker.run, args=[sealed, queue], id=f"copy-{uuid.uuid4()}", task_queue=attacker_queue
            )
            with pytest.raises(WorkflowFailureError) as failure:
                await copy.result()
            await latest.execute_update("submit_tool_approval", {"call_id": "call_gate", "approved": True})
            result: AgentRunResult = await handle.result()
    assert sealed["seal"] and result.text == "9 tool messages"
    assert "seal does not hold" in str(failure.value.cause) and "nothing of it was adopted" in str(failure.value.cause)


async def _continued_state(first: WorkflowHandle[Any, Any]) -> dict[str, Any]:
    """The state the first run continued as new with, as its history holds it."""
    history = await first.fetch_history()
    (event,) = [e for e in history.events if e.HasField("workflow_execution_continued_as_new_event_attributes")]
    (payload,) = event.workflow_execution_continued_as_new_event_attributes.input.payloads
    state: dict[str, Any] = json.loads(payload.data)
    return state
