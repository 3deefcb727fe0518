"""Sub-agents in a durable run: child `AgentRun`s, their waiting calls at the top, decisions routed down.

- A call of a sub-agent tool (its snapshot entry has `sub_agent`) starts a child `AgentRun`
  (`<workflow id>--<call id>`, parent close policy request-cancel, the parent's task queue
  unless the tool names another) with the call's `task` as its prompt and a `SubAgentLink`:
  the path from the top run, its depth, and the gates its ancestors hand it
  (`signoff.agent.subagent.inherited_gates`). Its final text is the call's result. A call
  that would nest deeper than `max_depth` is refused, nothing started.
- A child reports what waits in it (its own calls and its descendants') to its parent with the
  internal signal `signoff_child_pending`, whenever that changes (`Reporter`); the parent keeps
  the reports of the children it is running, and nobody else's (`Children.receive`), and lists
  them in its own `pending_approvals` and `status`, each with `workflow_id` and `path`.
- A decision item sent to an ancestor with a descendant's `workflow_id` is signalled to that
  run (`Children.route`): it is applied there, bound to that run and its chain like any
  decision (a signed one must name the child's workflow), and what cannot be applied is
  recorded there as `decision_ignored`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, Field
from temporalio import workflow
from temporalio.exceptions import ChildWorkflowError, FailureError

with workflow.unsafe.imports_passed_through():
    from signoff.agent.delegation import child_id, depth_refusal, inherited_gates, task_of
    from signoff.agent.snapshot import RunSnapshot, SnapshotTool
    from signoff.approval.requests import ToolApprovalRequest, parse_arguments
    from signoff.contract import (
        SIGNAL_APPROVAL,
        WORKFLOW_TYPE,
        AgentRunInput,
        AgentRunResult,
        RunOptions,
        SubAgentLink,
    )
    from signoff.messages import AgentEvent, FinishReason, SubAgentEvent, ToolCall
    from signoff.workflows import activity_options
    from signoff.workflows.feed import start_attributes

SIGNAL_CHILD_PENDING = "signoff_child_pending"
"""Internal: a child run's waiting calls, reported to its parent."""
MAX_REPORTED = 500
"""The most waiting calls one report carries up (the rest wait where they are, decided there)."""


class ChildPending(BaseModel):
    """A child run's report to its parent: what waits in it, paths relative to it."""

    workflow_id: str
    pending: list[ToolApprovalRequest] = Field(default_factory=list)


def own_view(requests: Sequence[ToolApprovalRequest], workflow_id: str) -> list[ToolApprovalRequest]:
    """A run's own waiting calls as its queries list them: its workflow id, path `[]`, `kind`."""
    return [r.viewed().model_copy(update={"workflow_id": workflow_id, "path": []}) for r in requests]


class Children:
    """The child runs a run is waiting on, and what waits in each."""

    def __init__(self, changed: Callable[[], None], emit: Callable[[AgentEvent], None]) -> None:
        self._running: set[str] = set()
        self._reports: dict[str, list[ToolApprovalRequest]] = {}
        self._changed = changed
        self._emit = emit

    def pending(self) -> list[ToolApprovalRequest]:
        """What waits in the running children, paths relative to this run."""
        return [request for workflow_id in sorted(self._reports) for request in self._reports[workflow_id]]

    def waiting_in(self, workflow_id: str) -> list[ToolApprovalRequest]:
        return [r for r in self.pending() if r.workflow_id == workflow_id]

    def receive(self, report: ChildPending) -> None:
        """A running child's report (of anyone else: ignored, it cannot be one of ours)."""
        if report.workflow_id not in self._running:
            return
        pending = [
            r.model_copy(update={"path": [report.workflow_id, *(r.path or [])], "workflow_id": r.workflow_id})
            for r in report.pending[:MAX_REPORTED]
            if r.workflow_id
        ]
        if pending == self._reports.get(report.workflow_id, []):
            return
        if pending:
            self._reports[report.workflow_id] = pending
        else:
            self._reports.pop(report.workflow_id, None)
        self._changed()

    async def run(
        self, call: ToolCall, entry: SnapshotTool, snapshot: RunSnapshot | None, parent: AgentRunInput
    ) -> str:
        """Run one sub-agent call as a child `AgentRun`; its final text, or `Error: ...`."""
        assert entry.sub_agent is not None
        info = workflow.info()
        task = task_of(parse_arguments(call.arguments))
        if task is None:
            return f"Error: {call.name} takes one argument, task (a string)"
        link = parent.sub_agent
        depth = (link.depth if link else 0) + 1
        max_depth = min(entry.sub_agent.max_depth, link.max_depth if link else entry.sub_agent.max_depth)
        if depth > max_depth:
            return depth_refusal(call.name, max_depth)
        options = parent.options
        child = AgentRunInput(
            agent=entry.sub_agent.agent,
            prompt=task,
            options=RunOptions(requested_by=options.requested_by, requester_token=options.requester_token),
            sub_agent=SubAgentLink(
                parent_workflow_id=info.workflow_id,
                path=[*(link.path if link else []), info.workflow_id],
                depth=depth,
                max_depth=max_depth,
                inherited=inherited_gates(snapshot),
            ),
        )
        workflow_id = child_id(info.workflow_id, call.id)
        agent = entry.sub_agent.agent
        self._running.add(workflow_id)
        try:
            handle = await workflow.start_child_workflow(
                WORKFLOW_TYPE,
                child,
                id=workflow_id,
                task_queue=entry.sub_agent.task_queue or info.task_queue,
                result_type=AgentRunResult,
                parent_close_policy=workflow.ParentClosePolicy.REQUEST_CANCEL,
                static_summary=f"sub-agent {agent} for {call.name} ({call.id})",
                search_attributes=start_attributes(agent),  # the child needs no upsert of its own
            )
            event = SubAgentEvent(call_id=call.id, agent=agent, workflow_id=workflow_id, state="started")
            self._emit(event.model_copy(update={"chain_id": handle.first_execution_run_id}))
            result: AgentRunResult = await handle
        except (ChildWorkflowError, FailureError) as exc:  # it failed, or could not start (an id in use)
            self._ended(workflow_id)
            self._emit(SubAgentEvent(call_id=call.id, agent=agent, workflow_id=workflow_id, state="failed"))
            what = "failed" if isinstance(exc, ChildWorkflowError) else "could not run"
            return f"Error: the {agent} sub-agent {what}: {activity_options.root_message(exc)}"
        except asyncio.CancelledError:  # the run is cancelled (its close policy cancels the child too)
            self._ended(workflow_id)
            raise
        # Nothing on eviction (GeneratorExit): the instance is dropped and replayed elsewhere.
        self._ended(workflow_id)
        event = SubAgentEvent(call_id=call.id, agent=agent, workflow_id=workflow_id, state="finished")
        self._emit(event.model_copy(update={"finish_reason": result.finish_reason}))
        return answer_of(entry.sub_agent.agent, result)

    def _ended(self, workflow_id: str) -> None:
        self._running.discard(workflow_id)
        if self._reports.pop(workflow_id, None) is not None:
            self._changed()

    def route(self, items: list[Any], own_id: str) -> tuple[list[Any], dict[str, list[dict[str, Any]]]]:
        """Split decision items into this run's own and those for descendants, by `workflow_id`.

        Raises:
            ValueError: an item names a run that is not one of this run's waiting descendants.
        """
        local: list[Any] = []
        routed: dict[str, list[dict[str, Any]]] = {}
        waiting = {r.workflow_id for r in self.pending()}
        for item in items:
            target = item.get("workflow_id") if isinstance(item, dict) else None
            if target is None or target == own_id:
                local.append({k: v for k, v in item.items() if k != "workflow_id"} if isinstance(item, dict) else item)
                continue
            if target not in waiting:
                known = ", ".join(sorted(w for w in waiting if w)) or "none"
                raise ValueError(
                    f"workflow_id {str(target)[:200]!r} is not a run of this one that waits for a decision "
                    f"(waiting descendants: {known})"
                )
            routed.setdefault(str(target), []).append({k: v for k, v in item.items() if k != "workflow_id"})
        return local, routed

    async def send(self, routed: dict[str, list[dict[str, Any]]]) -> None:
        """Signal each descendant its decisions (applied there, as any signal's)."""
        for target, items in routed.items():
            await workflow.get_external_workflow_handle(target).signal(SIGNAL_APPROVAL, items)


def answer_of(agent: str, result: AgentRunResult) -> str:
    """The call's result: the child's final text (or why it has none)."""
    if result.finish_reason in (FinishReason.STOP, FinishReason.TOOL_CALLS) and result.text is not None:
        return result.text
    text = f": {result.text}" if result.text else ""
    return f"Error: the {agent} sub-agent finished {result.finish_reason.value} without an answer{text}"


class Reporter:
    """A child run's reports to its parent: sent in order, each when what waits has changed."""

    def __init__(self, link: SubAgentLink, view: Callable[[], list[ToolApprovalRequest]]) -> None:
        self._link = link
        self._view = view
        self._sent: list[ToolApprovalRequest] = []

    async def run(self) -> None:
        info = workflow.info()
        parent = workflow.get_external_workflow_handle(self._link.parent_workflow_id)
        while True:
            await workflow.wait_condition(lambda: self._view() != self._sent)
            view = self._view()
            try:
                await parent.signal(SIGNAL_CHILD_PENDING, ChildPending(workflow_id=info.workflow_id, pending=view))
            except Exception:  # the parent is gone: its close policy cancels this run; decide it here meanwhile
                workflow.logger.warning("could not report waiting calls to the parent run")
            self._sent = view
