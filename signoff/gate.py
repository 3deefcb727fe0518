"""The one gate: which calls need approval, answered from the run's snapshot for both drivers.

A run's snapshot (`RunSnapshot`) records each tool's gate: `always`, `never`, or
`per_call`, where the tool itself looks at the arguments (a file tool asks its workspace
scope where the path really leads). Both drivers — the in-process agent and the chat
activity of a durable run — ask `gated_call_ids` with the run's snapshot and the
registry it was taken from. When a worker cannot reproduce that registry (its
configuration changed since the run started), `per_call` tools are gated: asking a
person is the safe answer.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from signoff.approvals import parse_arguments
from signoff.limits import Limits
from signoff.messages import ToolCall
from signoff.policy import ApprovalPolicy, PolicyBook
from signoff.snapshot import Gate, RunSnapshot, SnapshotTool
from signoff.tools.base import Tool, tool_spec
from signoff.tools.registry import ToolRegistry

MAX_PREVIEW_CHARS = 16_000


def tool_gate(tool: Tool) -> Gate:
    """How `tool` decides whether a call needs approval (its `gate` attribute, else `per_call`)."""
    gate = getattr(tool, "gate", "per_call")
    if gate == "always" or gate == "never":
        return "always" if gate == "always" else "never"
    return "per_call"


def tool_policy(tool: Tool) -> ApprovalPolicy | None:
    """The approval policy declared with the tool, if any."""
    policy = getattr(tool, "approval_policy", None)
    return policy if isinstance(policy, ApprovalPolicy) else None


def snapshot_of(
    agent: str, instructions: str, registry: ToolRegistry, limits: Limits, book: PolicyBook | None = None
) -> RunSnapshot:
    """The run snapshot of an agent's instructions and tools, with each tool's policy:
    the policy file's entry for it, else the tool's own, else the file's `*`."""
    book = book or PolicyBook()
    tools = [
        SnapshotTool(
            spec=tool_spec(tool),
            idempotent=bool(tool.idempotent),
            gate=tool_gate(tool),
            policy=book.for_tool(tool.name, tool_policy(tool)),
        )
        for tool in registry
    ]
    return RunSnapshot(agent=agent, instructions=instructions, tools=tools, limits=limits)


def needs_approval(entry: SnapshotTool | None, tool: Tool | None, arguments: Any) -> bool:
    """Whether a call must wait for a person; unknown tools and non-object arguments never
    do (the loop answers them with `Error: ...`)."""
    if entry is None or not isinstance(arguments, dict):
        return False
    if entry.gate != "per_call":
        return entry.gate == "always"
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
        if needs_approval(snapshot.tool(call.name), registry.get(call.name) if registry else None,
                          parse_arguments(call.arguments))
    ]  # fmt: skip


def previews(registry: ToolRegistry | None, calls: Iterable[ToolCall], gated: Iterable[str]) -> dict[str, str]:
    """What each gated call would do, for tools that can say (`preview(arguments)`)."""
    wanted, found = set(gated), {}
    for call in calls:
        tool = registry.get(call.name) if registry and call.id in wanted else None
        preview = getattr(tool, "preview", None)
        arguments = parse_arguments(call.arguments)
        if preview is None or not isinstance(arguments, dict):
            continue
        try:
            text = preview(arguments)
        except Exception as exc:  # a preview is an aid; its failure must not block the request
            text = f"(no preview: {type(exc).__name__}: {exc})"
        if text:
            found[call.id] = text if len(text) <= MAX_PREVIEW_CHARS else text[:MAX_PREVIEW_CHARS] + "\n[preview cut]"
    return found
