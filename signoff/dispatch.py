"""Worker-side steps both drivers share: which calls need approval, and running one call.

These touch the machine (a scope resolves real paths; tools do I/O), so under
Temporal they run inside activities and their answers are recorded in history.
"""

from __future__ import annotations

from collections.abc import Iterable

from signoff.approvals import parse_arguments
from signoff.messages import ToolCall
from signoff.tools.base import ToolResult
from signoff.tools.registry import ToolRegistry


def _arguments(call: ToolCall) -> dict | None:
    parsed = parse_arguments(call.arguments)
    return parsed if isinstance(parsed, dict) else None


def gated_call_ids(registry: ToolRegistry, calls: Iterable[ToolCall]) -> list[str]:
    """Ids of the calls whose tool asks for approval with these arguments.

    Unknown tools and unreadable arguments are not gated: the loop answers them
    with `Error: ...` without asking anyone.
    """
    gated = []
    for call in calls:
        tool = registry.get(call.name)
        arguments = _arguments(call)
        if tool is not None and arguments is not None and tool.requires_approval(arguments):
            gated.append(call.id)
    return gated


async def execute_call(registry: ToolRegistry, call: ToolCall, *, approved: bool = False) -> str:
    """Run one call; the tool message text. A tool's own failure is `Error: ...`.

    Args:
        registry: the run's tools.
        call: the call to run.
        approved: a person approved this very call. Passed on only to tools that declare
            `approval_aware = True` (the file tools: an unapproved call of theirs stays
            inside the workspace however the path changed since it was judged).
    """
    tool = registry.get(call.name)
    arguments = _arguments(call)
    if tool is None:
        return f"Error: unknown tool {call.name!r}"
    if arguments is None:
        return f"Error: arguments for {call.name} are not a JSON object"
    try:
        if getattr(tool, "approval_aware", False):
            result = await tool.execute(arguments, approved=approved)  # type: ignore[call-arg]
        else:
            result = await tool.execute(arguments)
    except Exception as exc:  # a tool's bug is the model's information, not a failed run
        result = ToolResult.error(f"{type(exc).__name__}: {exc}")
    return result.to_message()
