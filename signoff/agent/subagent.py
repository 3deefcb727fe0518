"""Sub-agents: a tool whose call is another agent's run, gated no less than its parent's.

`AgentBuilder.with_sub_agent(name, agent, description=...)` declares a `SubAgentTool`: one
argument, `task` (a string). In a durable run a call starts a child `AgentRun` (the workflow
does it, never the tool activity: `signoff.workflows.children`); in process the child agent
runs inline. Either way its final text is the call's result.

Gates only tighten across the boundary: the child's snapshot is taken with its ancestors'
gates by tool name (`inherited_gates`, carried in the child's input) applied over its own
(`tightened_by`): a tool the parent gates is gated in the child whatever the child's code
says, under a policy at least as strict as both. The worker's policy file applies at every
depth because every child's snapshot is taken with it, as any run's is. Grants are a run's
own: one made in the parent is never in the child's state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from signoff.agent.snapshot import RunSnapshot, SubAgentInfo
from signoff.approval.policy import ApprovalPolicy, Gate, tightened
from signoff.contract import InheritedGate
from signoff.errors import UsageError
from signoff.tools.base import ToolCapabilities

if TYPE_CHECKING:
    from signoff.agent.builder import ChatClientAgent

DEFAULT_MAX_DEPTH = 3
"""How deep delegation goes below the top run (depth 0) unless a sub-agent tool says otherwise."""
TASK_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"task": {"type": "string", "description": "What the sub-agent is asked to do."}},
    "required": ["task"],
    "additionalProperties": False,
}
_ORDER: dict[Gate, int] = {"never": 0, "per_call": 1, "always": 2}


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
    parameters = TASK_PARAMETERS

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

    async def execute(self, arguments: dict[str, Any]) -> str:
        """In process: run the child agent inline (`delegate`), with no gates inherited."""
        return await self.delegate(arguments, {}, 0)

    async def delegate(self, arguments: dict[str, Any], inherited: Mapping[str, InheritedGate], depth: int) -> str:
        """Run the child agent in process on the call's task, its tools gated at least as `inherited`.

        A call of the child that needs approval cannot be routed to a person from inside a tool
        call in process: it is not run, and the result says so (fail closed)."""
        task = task_of(arguments)
        if task is None:
            return f"Error: {self.name} takes one argument, task (a string)"
        if depth + 1 > self.max_depth:
            return depth_refusal(self.name, self.max_depth)
        if isinstance(self.agent, str):
            return f"Error: sub-agent {self.agent!r} is served by a worker: in process, with_sub_agent needs the agent built"
        return await self.agent.delegated(task, inherited, depth + 1)


def depth_refusal(name: str, max_depth: int) -> str:
    """What the model reads when a call would delegate deeper than `max_depth`."""
    return (
        f"Error: {name} was not started: sub-agents may nest at most {max_depth} deep below the top run, "
        "and this call would go deeper; do the task without delegating it"
    )


def task_of(arguments: Any) -> str | None:
    """The call's `task`, or None when the arguments are not `{"task": string}`."""
    if not isinstance(arguments, dict):
        return None
    task = arguments.get("task")
    return task if isinstance(task, str) and set(arguments) <= {"task"} else None


def inherited_gates(snapshot: RunSnapshot | None) -> dict[str, InheritedGate]:
    """The gates a run hands its children: its own tools' (sub-agent tools aside) over what
    its ancestors handed it, the stricter of the two for a name both have."""
    if snapshot is None:
        return {}
    gates = dict(snapshot.inherited or {})
    for tool in snapshot.tools:
        if tool.sub_agent is not None:
            continue
        own = InheritedGate(gate=tool.gate, policy=tool.policy)
        name = tool.spec.name
        gates[name] = stricter(gates[name], own) if name in gates else own
    return {name: gate for name, gate in gates.items() if gate.gate != "never" or gate.policy is not None}


def stricter(a: InheritedGate, b: InheritedGate) -> InheritedGate:
    """A gate at least as strict as both: the stricter gate (a per-call gate one side's tool
    judges and the other's does not is `always`), and one policy tightened by the other."""
    gate = a.gate if _ORDER[a.gate] >= _ORDER[b.gate] else b.gate
    return InheritedGate(gate=gate, policy=_policy(a.policy, b.policy))


def tightened_by(snapshot: RunSnapshot, inherited: Mapping[str, InheritedGate]) -> RunSnapshot:
    """`snapshot` with its tools gated at least as `inherited` says for their names, recorded
    in it (`inherited`), so any worker that rebuilds the child's snapshot gets the same one."""
    if not inherited:
        return snapshot
    tools = []
    for tool in snapshot.tools:
        parent = inherited.get(tool.spec.name)
        if parent is None or tool.sub_agent is not None:
            tools.append(tool)
            continue
        gate = tool.gate
        if parent.gate == "always" or (parent.gate == "per_call" and tool.gate == "never"):
            gate = "always"  # the parent's tool judged its calls; this one may not judge them alike
        policy = _policy(tool.policy, parent.policy)
        if policy is not None and gate == "never":
            gate = "always"  # the parent governs calls of this name: none runs unasked
        tools.append(tool.model_copy(update={"gate": gate, "policy": policy}))
    return snapshot.model_copy(update={"tools": tools, "inherited": dict(inherited)})


def _policy(own: ApprovalPolicy | None, parent: ApprovalPolicy | None) -> ApprovalPolicy | None:
    if parent is None or parent.is_default:
        return own
    if own is None or own.is_default:
        return parent
    return tightened(own, parent)[0]
