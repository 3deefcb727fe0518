"""The one gate: which calls need approval, answered from the run's snapshot for both drivers.

A run's snapshot (`RunSnapshot`) records each tool's gate: `always`, `never`, or
`per_call`, where the tool itself looks at the arguments (a file tool asks its workspace
scope where the path really leads). A tool declares its gate and policy in its
capabilities (`signoff.tools.base.ToolCapabilities`); the worker's policy file may add a
gate and tighten a policy. Both drivers — the in-process agent and the chat activity of a
durable run — ask `gated_call_ids` with the run's snapshot and the registry it was taken
from, and the tool activity asks `needs_approval` again before a call runs. When a worker
cannot reproduce that registry (its configuration changed since the run started),
`per_call` tools are gated: asking a person is the safe answer. What a gated call would do
is `signoff.tools.preview.gather`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from signoff.agent.snapshot import RunSnapshot, SnapshotTool
from signoff.approval.policy import ApprovalPolicy, Gate, PolicyBook
from signoff.approval.requests import parse_arguments
from signoff.loop.limits import Limits
from signoff.messages import ToolCall
from signoff.tools.base import Tool, capabilities_of, tool_spec
from signoff.tools.registry import ToolRegistry


def configured_gate(tool: Tool, book: PolicyBook) -> Gate:
    """The tool's own gate, made `always` when configuration says so (`PolicyBook.gated`:
    configuration adds gates, never removes one)."""
    return "always" if book.gated(tool.name) else capabilities_of(tool).gate


def configured_policy(tool: Tool, book: PolicyBook) -> ApprovalPolicy:
    """The policy file's entry for the tool over its own policy (never less strict), else
    its own, else the file's `*`, else anyone."""
    return book.for_tool(tool.name, capabilities_of(tool).policy)


def snapshot_tool(tool: Tool, book: PolicyBook) -> SnapshotTool:
    """How one tool is gated and governed in a run's snapshot."""
    policy = configured_policy(tool, book)
    return SnapshotTool(
        spec=tool_spec(tool),
        idempotent=bool(tool.idempotent),
        gate=configured_gate(tool, book),
        policy=None if policy.is_default else policy,
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
    if tool is None:
        return True
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
            snapshot.tool(call.name), registry.get(call.name) if registry else None, parse_arguments(call.arguments)
        )
    ]
