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

import asyncio
import inspect
from collections.abc import Callable, Iterable
from typing import Any

from signoff.agent.snapshot import Gate, RunSnapshot, SnapshotTool
from signoff.approval.policy import ApprovalPolicy, PolicyBook
from signoff.approval.requests import parse_arguments
from signoff.loop.limits import Limits
from signoff.loop.messages import ToolCall
from signoff.tools.base import Tool, tool_spec
from signoff.tools.registry import ToolRegistry

MAX_PREVIEW_CHARS = 16_000
"""A preview longer than this is cut, saying so."""
MAX_TURN_PREVIEW_CHARS = 128_000
"""The previews of one model turn together: they travel in its activity's answer and in queries."""
PREVIEW_SECONDS = 10.0
"""How long one turn's previews may take together (well below the chat activity's heartbeat timeout)."""


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


def configured_gate(tool: Tool, book: PolicyBook) -> Gate:
    """The tool's own gate, made `always` when configuration says so (`PolicyBook.gated`:
    configuration adds gates, never removes one)."""
    return "always" if book.gated(tool.name) else tool_gate(tool)


def configured_policy(tool: Tool, book: PolicyBook) -> ApprovalPolicy:
    """The policy file's entry for the tool over its own policy (never less strict), else
    its own, else the file's `*`, else anyone."""
    return book.for_tool(tool.name, tool_policy(tool))


def snapshot_tool(tool: Tool, book: PolicyBook) -> SnapshotTool:
    """How one tool is gated and governed in a run's snapshot."""
    return SnapshotTool(
        spec=tool_spec(tool),
        idempotent=bool(tool.idempotent),
        gate=configured_gate(tool, book),
        policy=_unless_default(configured_policy(tool, book)),
    )


def snapshot_of(
    agent: str, instructions: str, registry: ToolRegistry, limits: Limits, book: PolicyBook | None = None
) -> RunSnapshot:
    """The run snapshot of an agent's instructions and tools, each gated and governed as
    `snapshot_tool` says."""
    book = book or PolicyBook()
    tools = [snapshot_tool(tool, book) for tool in registry]
    return RunSnapshot(agent=agent, instructions=instructions, tools=tools, limits=limits)


def _unless_default(policy: ApprovalPolicy) -> ApprovalPolicy | None:
    return None if policy.is_default else policy


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


async def previews(
    registry: ToolRegistry | None, calls: Iterable[ToolCall], gated: Iterable[str], *, seconds: float = PREVIEW_SECONDS
) -> dict[str, str]:
    """What each gated call would do, for tools that can say (`preview(arguments)`).

    A preview may block (a file tool's reads a file or walks a tree), so each runs off the
    event loop, at once with the others: on the executor its tool names
    (`preview_executor`: the file tools' own pool), else on asyncio's default one; an
    awaitable it returns is awaited. A preview is an aid, so none may hold up the request:
    one that fails, or is not done within `seconds` (for all of them together), says so
    instead. Each is cut at `MAX_PREVIEW_CHARS`, and together at `MAX_TURN_PREVIEW_CHARS`.
    """
    wanted, jobs = set(gated), {}
    for call in calls:
        tool = registry.get(call.name) if registry and call.id in wanted else None
        preview = getattr(tool, "preview", None)
        arguments = parse_arguments(call.arguments)
        if preview is not None and isinstance(arguments, dict):
            jobs[call.id] = asyncio.ensure_future(_run_preview(tool, preview, arguments))
    if not jobs:
        return {}
    try:
        await asyncio.wait(jobs.values(), timeout=seconds)
    finally:
        for job in jobs.values():
            job.cancel()  # a thread already running one goes on; its answer is not wanted
    found, left = {}, MAX_TURN_PREVIEW_CHARS
    for call_id, job in jobs.items():
        text = _outcome(job, seconds)
        if text:
            text = _cut(text, min(MAX_PREVIEW_CHARS, max(left, 0)))
            found[call_id], left = text, left - len(text)
    return found


async def _run_preview(tool: Any, preview: Callable[[dict[str, Any]], Any], arguments: dict[str, Any]) -> str | None:
    executor = getattr(tool, "preview_executor", None)
    text = await asyncio.get_running_loop().run_in_executor(executor, preview, arguments)
    if inspect.isawaitable(text):
        text = await text
    return None if text is None else str(text)


def _outcome(job: asyncio.Future[str | None], seconds: float) -> str | None:
    if not job.done() or job.cancelled():
        return f"(no preview: not ready within {seconds:g} s)"
    error = job.exception()
    if error is not None:  # a preview is an aid; its failure must not block the request
        return f"(no preview: {type(error).__name__}: {error})"
    return job.result()


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    if limit < 200:
        return f"(no preview: this turn's previews reached their {MAX_TURN_PREVIEW_CHARS:,}-character budget)"
    return text[: limit - 100] + f"\n[preview cut: {len(text) - limit + 100:,} more characters]"
