"""Starting, approving and checking bench runs, and reading their histories."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import History, HistoryEvent
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryRequest
from temporalio.client import Client, WorkflowHandle

from bench.common import BenchError, check_result, check_text, expected_tool_messages, prompt_for
from signoff.contract import AgentRunInput, AgentRunResult, RunOptions
from signoff.workflows.feed import start_attributes


async def start_signoff(
    client: Client,
    queue: str,
    tool: str,
    rounds: int,
    workflow_id: str | None = None,
    tag: str = "",
    agent: str = "bench",
) -> WorkflowHandle:
    prompt = prompt_for(tool, rounds, tag)
    run_input = AgentRunInput(agent=agent, prompt=prompt, options=RunOptions(max_rounds=rounds + 1))
    return await client.start_workflow(
        "AgentRun",
        run_input,
        id=workflow_id or f"signoff-{uuid.uuid4()}",
        task_queue=queue,
        result_type=AgentRunResult,
        search_attributes=start_attributes(agent),  # as signoff's own clients start runs (`signoff run`)
    )


async def start_floor(
    client: Client, queue: str, tool: str, rounds: int, workflow_id: str | None = None, tag: str = ""
) -> WorkflowHandle:
    from bench.floor import FloorInput, FloorResult

    return await client.start_workflow(
        "FloorRun",
        FloorInput(prompt=prompt_for(tool, rounds, tag), max_rounds=rounds + 1),
        id=workflow_id or f"floor-{uuid.uuid4()}",
        task_queue=queue,
        result_type=FloorResult,
    )


# The peers' workflows (`bench.peers`), started by name: this process needs neither peer
# installed. Each takes the prompt and returns the final text, as their docs' examples do.
PEER_WORKFLOWS = {"pydantic_ai": "PydanticAIBenchRun", "openai_agents": "OpenAIAgentsBenchRun"}


def start_peer(kind: str) -> Callable[..., Awaitable[WorkflowHandle]]:
    async def start(
        client: Client, queue: str, tool: str, rounds: int, workflow_id: str | None = None, tag: str = ""
    ) -> WorkflowHandle:
        return await client.start_workflow(
            PEER_WORKFLOWS[kind],
            prompt_for(tool, rounds, tag),
            id=workflow_id or f"{kind}-{uuid.uuid4()}",
            task_queue=queue,
            result_type=str,
        )

    return start


START = {"signoff": start_signoff, "floor": start_floor, **{kind: start_peer(kind) for kind in PEER_WORKFLOWS}}


async def approve(handle: WorkflowHandle, kind: str, call_id: str = "call_1_1") -> None:
    """Approve the paused call: signoff's validated update, the floor's minimal one, or a peer's."""
    await decide(handle, kind, call_id, None)


async def deny(handle: WorkflowHandle, kind: str, reason: str, call_id: str = "call_1_1") -> None:
    """Deny the paused call with `reason`: the model is to read `Rejected: <reason>`."""
    await decide(handle, kind, call_id, reason)


async def decide(handle: WorkflowHandle, kind: str, call_id: str, denial: str | None) -> None:
    approved = denial is None
    if kind == "signoff":
        decision = {"call_id": call_id, "approved": approved, **({} if approved else {"reason": denial})}
        ack = await handle.execute_update("submit_tool_approval", decision)
        if call_id not in ack["accepted"]:
            raise BenchError(f"{handle.id}: update did not accept {call_id}: {ack}")
    elif kind == "floor" and approved:
        await handle.execute_update("approve", call_id)
    elif kind == "floor":
        await handle.execute_update("deny", args=[call_id, denial])
    else:
        await handle.execute_update("decide", {"call_id": call_id, "approved": approved, "reason": denial})


def result_text(result: Any) -> str | None:
    """The final text: a peer's result is that text, signoff's and the floor's carry it."""
    return result if isinstance(result, str) else result.text


async def finish(handle: WorkflowHandle, tool: str, rounds: int, timeout: float = 300.0) -> Any:
    """The run's result, checked: the scripted answer, and for signoff and the floor (whose
    results carry the transcript) one right tool message per round."""
    try:
        result = await asyncio.wait_for(handle.result(), timeout)
    except TimeoutError:
        raise BenchError(f"{handle.id} did not finish in {timeout}s") from None
    if isinstance(result, str):
        check_text(result, rounds, expected_tool_messages(tool, rounds)[-1], handle.id)
    else:
        check_result(result.text, result.messages, tool, rounds, handle.id)
    return result


# --- history -----------------------------------------------------------------------------


def is_paused(events: Sequence[HistoryEvent]) -> bool:
    """Waiting for a person: every activity done, a workflow task completed after the
    last, no command scheduled since, and not finished. Exact on a history snapshot,
    since a task's completion and its commands are written in one transaction."""
    scheduled = completed = 0
    last_completed = last_task = -1
    for i, event in enumerate(events):
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            scheduled += 1
        elif kind in (EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED):
            completed += 1
            last_completed = i
        elif kind == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            last_task = i
        elif kind in (
            EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
            EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
        ):
            raise BenchError("the run finished instead of waiting for approval")
    return completed >= 1 and scheduled == completed and last_task > last_completed


async def history_events(client: Client, workflow_id: str, run_id: str | None = None) -> list[HistoryEvent]:
    events: list[HistoryEvent] = []
    token = b""
    while True:
        resp = await client.workflow_service.get_workflow_execution_history(
            GetWorkflowExecutionHistoryRequest(
                namespace=client.namespace,
                execution=WorkflowExecution(workflow_id=workflow_id, run_id=run_id or ""),
                next_page_token=token,
            )
        )
        events.extend(resp.history.events)
        token = resp.next_page_token
        if not token:
            return events


async def wait_paused(client: Client, workflow_id: str, timeout: float = 60.0) -> list[HistoryEvent]:
    """Long-poll the history until the run waits for approval; returns the events so far."""
    events: list[HistoryEvent] = []
    token = b""
    deadline = time.perf_counter() + timeout
    while not is_paused(events):
        if time.perf_counter() > deadline:
            raise BenchError(f"{workflow_id} not paused in {timeout}s")
        resp = await client.workflow_service.get_workflow_execution_history(
            GetWorkflowExecutionHistoryRequest(
                namespace=client.namespace,
                execution=WorkflowExecution(workflow_id=workflow_id),
                next_page_token=token,
                wait_new_event=True,
            )
        )
        events.extend(resp.history.events)
        token = resp.next_page_token
    return events


def history_bytes(events: Sequence[HistoryEvent]) -> int:
    return History(events=list(events)).ByteSize()
