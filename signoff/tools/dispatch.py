"""Running one tool call, the same way for both drivers (in-process agent, tool activity).

Runs touch the machine, so under Temporal they happen inside the tool activity and
their answers are recorded in history. Which calls need approval is `signoff.agent.gate`.
"""

from __future__ import annotations

from typing import Any

from signoff.approval.requests import parse_arguments
from signoff.loop.limits import cap_text
from signoff.messages import ToolCall
from signoff.tools.base import Tool, ToolCapabilities, ToolResult, capabilities_of
from signoff.tools.registry import ToolRegistry


def _arguments(call: ToolCall) -> dict[str, Any] | None:
    parsed = parse_arguments(call.arguments)
    return parsed if isinstance(parsed, dict) else None


async def execute_call(
    registry: ToolRegistry, call: ToolCall, *, approved: bool = False, max_output: int | None = None
) -> str:
    """Run one call; the tool message text (`execute_result`'s, whatever a server asked)."""
    return (await execute_result(registry, call, approved=approved, max_output=max_output)).content


async def execute_result(
    registry: ToolRegistry, call: ToolCall, *, approved: bool = False, max_output: int | None = None
) -> ToolResult:
    """Run one call; the tool message text. A tool's own failure is `Error: ...`.

    Args:
        approved: whether a person approved this call. Tools that look at it
            (`ToolCapabilities.approval_aware`, e.g. file tools leaving the workspace)
            are told.
        max_output: cut the text to about this many characters, with a note.
    """
    tool = registry.get(call.name)
    arguments = _arguments(call)
    if tool is None:
        return ToolResult(content=f"Error: unknown tool {call.name!r}")
    if arguments is None:
        return ToolResult(content=f"Error: arguments for {call.name} are not a JSON object")
    return await run_tool(tool, arguments, approved=approved, max_output=max_output)


async def run_tool(
    tool: Tool,
    arguments: dict[str, Any],
    capabilities: ToolCapabilities | None = None,
    *,
    approved: bool = False,
    max_output: int | None = None,
) -> ToolResult:
    """Run `tool` with `arguments` (an object), told `approved` if its `capabilities` (None:
    `capabilities_of(tool)`) say it looks at it; the tool message text, cut at `max_output`
    (a tool's failure, or its declaring no `ToolCapabilities`: `Error: ...`), and what a server
    asked, if it did (`ToolResult.input`)."""
    try:
        aware = (capabilities or capabilities_of(tool)).approval_aware
        result = await (tool.execute(arguments) if aware is None else aware(arguments, approved=approved))
    except Exception as exc:  # a tool's bug is the model's information, not a failed run
        result = ToolResult.error(f"{type(exc).__name__}: {exc}")
    text = result.to_message()
    return ToolResult(content=cap_text(text, max_output) if max_output else text, input=result.input)
