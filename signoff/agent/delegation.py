"""What delegation to a sub-agent is, without running anything: a call's task, how deep it may
go, and the gates a parent hands its child (used by the workflow and the in-process agent alike;
pure, so the workflow may import it). See `signoff.agent.subagent`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from signoff.agent.snapshot import RunSnapshot
from signoff.approval.policy import ApprovalPolicy, Gate, tightened
from signoff.contract import InheritedGate

DEFAULT_MAX_DEPTH = 3
"""How deep delegation goes below the top run (depth 0) unless a sub-agent tool says otherwise."""
_ORDER: dict[Gate, int] = {"never": 0, "per_call": 1, "always": 2}


def child_id(parent_id: str, call_id: str) -> str:
    """The id of the child run a sub-agent call starts: `<parent's id>--<call id>` (a durable
    parent's id is its workflow id; an in-process top run's is its agent's name)."""
    return f"{parent_id}--{call_id}"


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
