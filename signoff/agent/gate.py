"""The one gate: which calls need approval, answered from the run's snapshot for both drivers.

A run's snapshot (`RunSnapshot`) records each tool's gate: `always`, `never`, or
`per_call`, where the tool itself looks at the arguments (a file tool asks its workspace
scope where the path really leads). A tool declares its gate and policy in its
capabilities (`signoff.tools.base.ToolCapabilities`); the worker's policy file may add a
gate and tighten a policy. Both drivers — the in-process agent and the chat activity of a
durable run — ask `gated_call_ids` with the run's snapshot and the registry it was taken
from, and the tool activity asks again, once, before a call runs (`needs_approval_now`:
the run's snapshot and the worker's own configuration, whichever asks more). When a worker
cannot reproduce that registry (its configuration changed since the run started),
`per_call` tools are gated: asking a person is the safe answer. What a gated call would do
is `signoff.tools.preview.gather`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from signoff.agent.snapshot import RunSnapshot, SnapshotTool
from signoff.approval.policy import ApprovalPolicy, Gate, PolicyBook
from signoff.loop.limits import Limits
from signoff.messages import ToolCall
from signoff.tools.base import Tool, ToolCapabilities, capabilities_of, tool_spec
from signoff.tools.registry import ToolRegistry


@dataclass(frozen=True)
class Configured:
    """How a worker's configuration gates and governs one tool: what the tool declares
    (`capabilities_of`, read once), its gate, and its policy."""

    capabilities: ToolCapabilities
    gate: Gate
    """The tool's own gate, made `always` when configuration says so (`PolicyBook.gated`:
    configuration adds gates, never removes one)."""
    policy: ApprovalPolicy
    """The policy file's entry for the tool over its own policy (never less strict), else its
    own, else the file's `*`, else anyone."""


def configured(tool: Tool, book: PolicyBook) -> Configured:
    """How `book` and the tool's own declaration gate and govern `tool`."""
    declared = capabilities_of(tool)
    gate: Gate = "always" if book.gated(tool.name) else declared.gate
    return Configured(declared, gate, book.for_tool(tool.name, declared.policy))


def snapshot_tool(tool: Tool, book: PolicyBook) -> SnapshotTool:
    """How one tool is gated and governed in a run's snapshot."""
    own = configured(tool, book)
    return SnapshotTool(
        spec=tool_spec(tool),
        idempotent=bool(tool.idempotent),
        gate=own.gate,
        policy=None if own.policy.is_default else own.policy,
    )


def snapshot_of(
    agent: str, instructions: str, registry: ToolRegistry, limits: Limits, book: PolicyBook | None = None
) -> RunSnapshot:
    """The run snapshot of an agent's instructions and tools, each gated and governed as
    `snapshot_tool` says."""
    book = book or PolicyBook()
    tools = [snapshot_tool(tool, book) for tool in registry]
    return RunSnapshot(agent=agent, instructions=instructions, tools=tools, limits=limits)


def needs_approval(entry: SnapshotTool | Gate | None, tool: Tool | None, arguments: Any) -> bool:
    """Whether a call must wait for a person, by its snapshot entry (or a gate); unknown
    tools and non-object arguments never do (the loop answers them with `Error: ...`)."""
    if entry is None or not isinstance(arguments, dict):
        return False
    gate = entry if isinstance(entry, str) else entry.gate
    if gate != "per_call":
        return gate == "always"
    return True if tool is None else _asked(tool, arguments)


def needs_approval_now(entry: SnapshotTool, own: Gate, tool: Tool, arguments: Any, *, reproduced: bool) -> bool:
    """Whether a call about to run must have been approved: by the run's snapshot `entry` or by
    the worker's `own` gate for `tool` now, whichever asks more. The tool is asked at most once;
    when this worker could not reproduce the run's snapshot (`reproduced` False), a `per_call`
    entry needs approval without asking it (what the run's registry would answer is unknown)."""
    if not isinstance(arguments, dict):
        return False
    gates = {entry.gate, own}
    if "always" in gates or (entry.gate == "per_call" and not reproduced):
        return True
    return "per_call" in gates and _asked(tool, arguments)


def _asked(tool: Tool, arguments: dict[str, Any]) -> bool:
    try:
        return bool(tool.requires_approval(arguments))
    except Exception:  # a tool that cannot tell is asked about, not run
        return True


def gated_call_ids(snapshot: RunSnapshot, registry: ToolRegistry | None, calls: Iterable[ToolCall]) -> list[str]:
    """Ids of the calls that need approval under the run's snapshot."""
    return [
        call.id
        for call in calls
        if needs_approval(
            snapshot.tool(call.name), registry.get(call.name) if registry else None, call.parsed_arguments
        )
    ]
