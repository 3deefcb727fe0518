"""Sub-agents: a tool whose call is another agent's run, gated no less than its parent's.

`AgentBuilder.with_sub_agent(name, agent, description=...)` declares a `SubAgentTool`: one
argument, `task` (a string). In a durable run a call starts a child `AgentRun` (the workflow
does it, never the tool activity: `signoff.workflows.children`); in process the child agent
runs inline (`ChildRun`): a call of it that waits for a person stops the child, and the parent
finishes `awaiting_approval` with the child's requests (each with `workflow_id` and `path`),
the child's session kept in the parent's until a next `run()` decides them. Either way its
final text is the call's result.

Gates only tighten across the boundary: the child's snapshot is taken with its ancestors'
gates by tool name (`inherited_gates`, carried in the child's input) applied over its own
(`tightened_by`): a tool the parent gates is gated in the child whatever the child's code
says, under a policy at least as strict as both. The worker's policy file applies at every
depth because every child's snapshot is taken with it, as any run's is. Grants are a run's
own: one made in the parent is never in the child's state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from signoff.agent.delegation import DEFAULT_MAX_DEPTH, depth_refusal, inherited_gates, task_of, tightened_by
from signoff.agent.session import AgentSession, CancellationToken
from signoff.agent.snapshot import SubAgentInfo
from signoff.approval.policy import ApprovalPolicy
from signoff.approval.requests import ToolApprovalRequest, ToolApprovalResponse
from signoff.contract import InheritedGate
from signoff.errors import UsageError
from signoff.tools.base import ToolCapabilities, ToolResult

if TYPE_CHECKING:
    from signoff.agent.builder import ChatClientAgent

_TASK_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"task": {"type": "string", "description": "What the sub-agent is asked to do."}},
    "required": ["task"],
    "additionalProperties": False,
}


@dataclass
class ChildRun:
    """An in-process sub-agent call's run, as its parent's driver hands it over.

    Attributes:
        id: the child's id (`<parent's id>--<call id>`), what its requests' `workflow_id` say.
        session: its session: new for a new call, the parked one when the parent resumes it.
        responses: the decisions the parent's caller sent for what waits in it (or below it).
        cancellation: the parent's, so cancelling the parent ends the child.
        requested_by: who asked for the parent's run (the child's requester too).
    """

    id: str
    session: AgentSession = field(default_factory=AgentSession)
    responses: list[ToolApprovalResponse] = field(default_factory=list)
    cancellation: CancellationToken | None = None
    requested_by: str | None = None


@dataclass(frozen=True)
class Delegation:
    """What an in-process sub-agent call came to: its answer, or (`text` None) what waits in
    the child, paths relative to the parent."""

    text: str | None
    waiting: list[ToolApprovalRequest] = field(default_factory=list)


def _stopped_for_approval(agent: str, waiting: list[ToolApprovalRequest]) -> str:
    """The result of a call whose child waits for a person where nobody can be asked (the
    sub-agent tool executed on its own, outside a run's driver): it fails closed."""
    return (
        f"Error: the {agent} sub-agent stopped: its call of {', '.join(r.name for r in waiting)} "
        "needs approval, which a sub-agent run outside an agent's run cannot ask a person for; it was not run"
    )


class SubAgentTool:
    """A tool that delegates its call's `task` to another agent (see the module).

    Args:
        name: the tool's name (what the parent's model calls).
        agent: the agent built, or the name of another agent the worker serves.
        description: what the parent's model is told the sub-agent does.
        task_queue: where the child run goes (None: the parent's task queue).
        max_depth: how deep delegation may go below the top run through this tool.
        policy: gate the call itself (a person decides whether to delegate); None: not gated,
            unless the worker's policy file says so.
    """

    kind = "sub_agent"
    idempotent = False
    parameters = _TASK_PARAMETERS

    def __init__(
        self,
        name: str,
        agent: ChatClientAgent | str,
        description: str = "",
        *,
        task_queue: str | None = None,
        max_depth: int = DEFAULT_MAX_DEPTH,
        policy: ApprovalPolicy | None = None,
    ) -> None:
        if max_depth < 1:
            raise UsageError("a sub-agent's max_depth must be at least 1")
        agent_name = agent if isinstance(agent, str) else agent.name
        if not agent_name:
            raise UsageError(f"sub-agent tool {name!r} names no agent")
        self.name = name
        self.agent = agent
        self.agent_name = agent_name
        self.description = description or f"Delegate a task to the {agent_name} agent; it answers with its result."
        self.task_queue = task_queue
        self.max_depth = max_depth
        self.capabilities = ToolCapabilities(gate="always" if policy else "never", policy=policy)

    @property
    def info(self) -> SubAgentInfo:
        """What a run's snapshot records of it."""
        return SubAgentInfo(agent=self.agent_name, task_queue=self.task_queue, max_depth=self.max_depth)

    def requires_approval(self, arguments: dict[str, Any]) -> bool:
        return self.capabilities.gate == "always"

    async def execute(self, arguments: dict[str, Any]) -> ToolResult:
        """Run the child agent inline (`delegate`), no gates inherited and nobody to ask: a
        call of it that needs approval is not run, and the result says so (fail closed)."""
        done = await self.delegate(arguments, {}, 0, ChildRun(id=self.agent_name))
        return ToolResult(
            content=done.text if done.text is not None else _stopped_for_approval(self.agent_name, done.waiting)
        )

    async def delegate(
        self, arguments: dict[str, Any], inherited: Mapping[str, InheritedGate], depth: int, child: ChildRun
    ) -> Delegation:
        """Run the child agent in process on the call's task (or resume `child.session` with
        `child.responses`), its tools gated at least as `inherited`."""
        task = task_of(arguments)
        if task is None:
            return Delegation(f"Error: {self.name} takes one argument, task (a string)")
        if depth + 1 > self.max_depth:
            return Delegation(depth_refusal(self.name, self.max_depth))
        if isinstance(self.agent, str):
            return Delegation(
                f"Error: sub-agent {self.agent!r} is a worker's: in process, with_sub_agent needs the agent built"
            )
        return await self.agent.delegated(task, inherited, depth + 1, child)


__all__ = ["DEFAULT_MAX_DEPTH", "ChildRun", "Delegation", "SubAgentTool", "inherited_gates", "tightened_by"]
