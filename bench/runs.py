"""Starting, approving and checking bench runs, and reading their histories."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Sequence
from typing import Any

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import History, HistoryEvent
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryRequest
from temporalio.client import Client, WorkflowHandle

from bench.common import BenchError, check_result, prompt_for
from signoff.contract import AgentRunInput, AgentRunResult, RunOptions


async def start_signoff(
    client: Client, queue: str, tool: str, rounds: int, workflow_id: str | None = None, agent: str = "bench"
) -> WorkflowHandle:
    run_input = AgentRunInput(agent=agent, prompt=prompt_for(tool, rounds), options=RunOptions(max_rounds=rounds + 1))
    return await client.start_workflow(
        "AgentRun", run_input, id=workflow_id or f"signoff-{uuid.uuid4()}", task_queue=queue, result_type=AgentRunResult
    )


async def start_floor(
    client: Client, queue: str, tool: str, rounds: int, workflow_id: str | None = None
) -> WorkflowHandle:
    from bench.floor import FloorInput, FloorResult

    return await client.start_workflow(
        "FloorRun",
        FloorInput(prompt=prompt_for(tool, rounds), max_rounds=rounds + 1),
        id=workflow_id or f"floor-{uuid.uuid4()}",
        task_queue=queue,
        result_type=FloorResult,
    )


START = {"signoff": start_signoff, "floor": start_floor}


async def approve(handle: WorkflowHandle, kind: str, call_id: str = "call_1_1") -> None:
    """Approve the paused call: signoff's validated update, or the floor's minimal one."""
    if kind == "signoff":
        ack = await handle.execute_update("submit_tool_approval", {"call_id": call_id, "approved": True})
        if call_id not in ack["accepted"]:
            raise BenchError(f"{handle.id}: update did not accept {call_id}: {ack}")
    else:
        await handle.execute_update("approve", call_id)


async def finish(handle: WorkflowHandle, tool: str, rounds: int, timeout: float = 300.0) -> Any:
    try:
        result = await asyncio.wait_for(handle.result(), timeout)
    except TimeoutError:
        raise BenchError(f"{handle.id} did not finish in {timeout}s") from None
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
