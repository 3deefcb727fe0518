"""Where a tool runs durably: one call of a durable run (`signoff.tool`).

The activity does not take the workflow's word for anything it can check itself:

- It runs only for a genuine `AgentRun` on this worker's task queue (the server's
  description of the calling run), so a workflow of another type, one on another
  queue scheduling `signoff.tool` here, or a standalone activity, runs nothing.
- It gates the call again, now, with the run's snapshot: a call that needs approval
  at execution (a path that leads outside the workspace since it was requested) runs
  only if the run approved it; otherwise the model is told it was not run.
- Approved file calls may leave the workspace; all others are confined to it at
  execution (`signoff.tools`), whatever happened to the file system meanwhile.
"""

from __future__ import annotations

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

    async def check(self) -> None:
        """Raise a non-retryable error unless the calling run is a genuine AgentRun here."""
        info = activity.info()
        if info.workflow_type != WORKFLOW_TYPE or not info.workflow_id:
            raise _refusal(f"it was scheduled by {info.workflow_type or 'no workflow'}")
        key = f"{info.workflow_id}/{info.workflow_run_id}"
        if key in self._known:
            return
        handle = activity.client().get_workflow_handle(info.workflow_id, run_id=info.workflow_run_id)
        described = await handle.describe()
        if described.workflow_type != WORKFLOW_TYPE or described.task_queue != info.task_queue:
            raise _refusal(f"the run is a {described.workflow_type} on task queue {described.task_queue!r}")
        if described.status != WorkflowExecutionStatus.RUNNING:
            raise _refusal("the run is not running")
        self._known[key] = None
        while len(self._known) > self._size:
            self._known.popitem(last=False)


def _refusal(why: str) -> ApplicationError:
    return ApplicationError(
        f"signoff.tool runs calls only for AgentRun workflows on its own task queue; {why}",
        type="NotAnAgentRun",
        non_retryable=True,
    )


async def run_call(served: ServedAgents, callers: Callers, input: ToolInput) -> ToolOutput:
    """Run one call; its own failure is the message `Error: ...`."""
    await callers.check()
    run = await served.resolve(input.agent, input.snapshot_digest or "")
    call = input.call
    tool = run.registry.get(call.name) if run.own else None
    approved = input.approval is not None and input.approval.call_id == call.id
    if not approved and needs_approval(run.model.tool(call.name), tool, parse_arguments(call.arguments)):
        return ToolOutput(content=NOT_APPROVED)
    limit = run.model.limits.max_tool_output
    async with heartbeating():
        return ToolOutput(content=await execute_call(run.registry, call, approved=approved, max_output=limit))
