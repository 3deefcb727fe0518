"""What visibility and the task queue say of a run when the run itself cannot answer.

Read from the server directly: the SDK's `describe()` and listing cannot read the status
of a paused run (Server 1.30+), and a query needs a worker. `describe_run` says whether
the run exists, is open or paused, and what its search attributes say it waits on;
`no_worker` whether any worker has polled the run's task queue lately.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import TaskQueueType, WorkflowExecutionStatus
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflow.v1 import WorkflowExecutionInfo
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest, DescribeWorkflowExecutionRequest
from temporalio.client import Client
from temporalio.converter import decode_typed_search_attributes
from temporalio.service import RPCError

from signoff.errors import CommandError
from signoff.operator import run_client
from signoff.views.text import safe
from signoff.workflows.feed import SIGNOFF_PENDING_TOOLS

POLLED_LATELY = timedelta(seconds=90)
"""A worker long-polls for up to a minute at a time: one not seen for longer is gone."""
_RUNNING = WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING
_PAUSED = WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_PAUSED


@dataclass(frozen=True)
class RunInfo:
    """A run as visibility knows it."""

    workflow_id: str
    task_queue: str
    tools: list[str]
    open: bool
    paused: bool


def run_info(info: WorkflowExecutionInfo) -> RunInfo:
    tools = list(decode_typed_search_attributes(info.search_attributes).get(SIGNOFF_PENDING_TOOLS) or [])
    return RunInfo(
        info.execution.workflow_id, info.task_queue, tools, info.status in (_RUNNING, _PAUSED), info.status == _PAUSED
    )


async def describe_run(client: Client, workflow_id: str) -> RunInfo:
    """The run's latest execution; CommandError (exit 1) when there is none with that id."""
    request = DescribeWorkflowExecutionRequest(
        namespace=client.namespace, execution=WorkflowExecution(workflow_id=workflow_id)
    )
    try:
        response = await client.workflow_service.describe_workflow_execution(request)
    except RPCError as exc:
        raise CommandError(f"{run_client.rpc_text(exc, workflow_id)} (namespace {client.namespace})") from None
    return run_info(response.workflow_execution_info)


async def no_worker(client: Client, task_queue: str) -> str | None:
    """`no worker polls task queue ...` when none has lately; None when one has, or it cannot be told."""
    request = DescribeTaskQueueRequest(
        namespace=client.namespace,
        task_queue=TaskQueue(name=task_queue),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    )
    try:
        pollers = (await client.workflow_service.describe_task_queue(request)).pollers
    except RPCError:
        return None
    now = datetime.now(UTC)
    if any(now - p.last_access_time.ToDatetime(UTC) < POLLED_LATELY for p in pollers):
        return None
    return (
        f"no worker polls task queue {task_queue!r}: start one (python worker.py, or signoff-worker, "
        f"with SIGNOFF_TASK_QUEUE={task_queue})"
    )


async def waiting_for(client: Client, handle: run_client.Handle, info: RunInfo) -> str:
    """What an open run waits for, in words: a decision on which calls, being unpaused, a worker..."""
    if info.paused:
        return "being unpaused (temporal workflow unpause)"
    if (problem := await no_worker(client, info.task_queue)) is not None:
        return f"a worker: {problem}"
    try:
        pending = await run_client.pending(handle)
    except CommandError as exc:
        return f"its worker to answer ({exc})"
    if pending:
        return "a decision on " + ", ".join(f"{safe(r.call_id)} ({safe(r.name)})" for r in pending)
    return "the model or its tools (it is working)"
