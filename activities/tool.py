"""Where a tool runs durably: one call of a durable run (`signoff.tool`).

The activity does not take the workflow's word for anything it can check itself:

- It runs only for an `AgentRun`; an approved call, only for a genuine `AgentRun` on
  this worker's task queue (the server's description of the calling run, checked once
  per run), so a workflow of another type, one on another queue scheduling
  `signoff.tool` here, or a standalone activity, runs nothing that needs approval.
- It gates the call again, now, with the run's snapshot: a call that needs approval
  at execution (a path that leads outside the workspace since it was requested) runs
  only if the run approved it; otherwise the model is told it was not run.
- Approved file calls may leave the workspace; all others are confined to it at
  execution (`signoff.tools`), whatever happened to the file system meanwhile.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict

from temporalio import activity
from temporalio.client import WorkflowExecutionStatus
from temporalio.exceptions import ApplicationError

from signoff.activities.heartbeat import heartbeating
from signoff.activities.models import ToolInput, ToolOutput
from signoff.activities.served import ServedAgents
from signoff.approvals import parse_arguments
from signoff.contract import WORKFLOW_TYPE
from signoff.dispatch import execute_call
from signoff.gate import needs_approval

NOT_APPROVED = (
    "Error: this call needs approval now and was not approved (what it touches changed since it was "
    "requested); it was not run"
)


class Callers:
    """The runs this worker has checked are genuine `AgentRun`s on its task queue."""

    def __init__(self, size: int = 1000) -> None:
        self._size = size
        self._known: OrderedDict[str, None] = OrderedDict()
        self._asking: dict[str, asyncio.Task[None]] = {}

    def prefetch(self) -> None:
        """Start asking about the current activity's run in the background, so a later
        `check` finds the answer (or waits for the same question, never asks twice)."""
        info = activity.info()
        key = f"{info.workflow_id}/{info.workflow_run_id}"
        if key not in self._known and key not in self._asking:
            self._ask(key)

    async def check(self, approved: bool) -> None:
        """Raise a non-retryable error unless the calling run is an AgentRun, and, for an
        approved call, a genuine one on this task queue."""
        info = activity.info()
        if info.workflow_type != WORKFLOW_TYPE or not info.workflow_id:
            raise _refusal(f"it was scheduled by {info.workflow_type or 'no workflow'}")
        key = f"{info.workflow_id}/{info.workflow_run_id}"
        if not approved or key in self._known:
            return  # a call that needs no approval is the agent's to make: one round trip saved
        asking = self._asking.get(key) or self._ask(key)
        await asyncio.shield(asking)

    def _ask(self, key: str) -> asyncio.Task[None]:
        task = asyncio.ensure_future(self._describe(key))
        self._asking[key] = task
        task.add_done_callback(lambda done: self._asked(key, done))
        return task

    def _asked(self, key: str, done: asyncio.Task[None]) -> None:
        self._asking.pop(key, None)
        if not done.cancelled() and done.exception() is None:
            self._known[key] = None
            while len(self._known) > self._size:
                self._known.popitem(last=False)

    async def _describe(self, key: str) -> None:
        info = activity.info()
        handle = activity.client().get_workflow_handle(info.workflow_id or "", run_id=info.workflow_run_id)
        described = await handle.describe()
        if described.workflow_type != WORKFLOW_TYPE or described.task_queue != info.task_queue:
            raise _refusal(f"the run is a {described.workflow_type} on task queue {described.task_queue!r}")
        if described.status != WorkflowExecutionStatus.RUNNING:
            raise _refusal("the run is not running")


def _refusal(why: str) -> ApplicationError:
    return ApplicationError(
        f"signoff.tool runs calls only for AgentRun workflows on its own task queue; {why}",
        type="NotAnAgentRun",
        non_retryable=True,
    )


async def run_call(served: ServedAgents, callers: Callers, input: ToolInput) -> ToolOutput:
    """Run one call; its own failure is the message `Error: ...`."""
    call = input.call
    approved = input.approval is not None and input.approval.call_id == call.id
    await callers.check(approved)
    if not input.snapshot_digest:
        raise _refusal("it names no snapshot of the run's agent")
    run = served.own(input.agent, input.snapshot_digest)
    if run is None:  # a snapshot this worker cannot reproduce: ask the run, once it is known genuine
        await callers.check(approved=True)
        run = await served.resolve(input.agent, input.snapshot_digest)
    entry = run.model.tool(call.name)
    if entry is None:
        return ToolOutput(content=f"Error: unknown tool {call.name!r}")
    tool = run.registry.get(call.name) if run.own else None
    if not approved and needs_approval(entry, tool, parse_arguments(call.arguments)):
        return ToolOutput(content=NOT_APPROVED)
    async with heartbeating():
        output = await execute_call(run.registry, call, approved=approved, max_output=run.model.limits.max_tool_output)
    return ToolOutput(content=output)
