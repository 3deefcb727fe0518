"""One model turn's previews: what each gated call would do, for tools that can say.

Tools declare a preview in their capabilities (`ToolCapabilities.preview`, and where it
runs, `preview_executor`). Both drivers ask `previews` for the calls the gate
(`signoff.agent.gate`) holds, worker-side, when the model asks: the answers travel in
the approval requests. A preview is an aid, so none may hold up a request, and every one
is bounded by `MAX_PREVIEW_CHARS`, the one size limit of a preview.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterable
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any

from signoff.approval.requests import parse_arguments
from signoff.messages import ToolCall
from signoff.tools.base import NO_CAPABILITIES, Preview, capabilities_of

if TYPE_CHECKING:
    from signoff.tools.registry import ToolRegistry

MAX_PREVIEW_CHARS = 16_000
"""The most one preview may hold; a longer one is cut, saying so (a diff cuts itself to fit)."""
MAX_TURN_PREVIEW_CHARS = 128_000
"""The previews of one model turn together: they travel in its activity's answer and in queries."""
PREVIEW_SECONDS = 10.0
"""How long one turn's previews may take together (well below the chat activity's heartbeat timeout)."""
CUT_NOTE_CHARS = 100
"""Room a cut preview keeps, within its limit, for the note saying what was left out."""


async def previews(
    registry: ToolRegistry | None, calls: Iterable[ToolCall], gated: Iterable[str], *, seconds: float = PREVIEW_SECONDS
) -> dict[str, str]:
    """What each gated call would do, for tools that declare a preview.

    A preview may block (a file tool's reads a file or walks a tree), so each runs off the
    event loop, at once with the others: on the executor its tool declares (the file
    tools' own pool), else on asyncio's default one; an awaitable it returns is awaited.
    A preview is an aid, so none may hold up the request: one that fails, or is not done
    within `seconds` (for all of them together), says so instead. Each is cut at
    `MAX_PREVIEW_CHARS`, and together at `MAX_TURN_PREVIEW_CHARS`.
    """
    wanted, jobs = set(gated), {}
    for call in calls:
        tool = registry.get(call.name) if registry and call.id in wanted else None
        declared = capabilities_of(tool) if tool is not None else NO_CAPABILITIES
        arguments = parse_arguments(call.arguments)
        if declared.preview is not None and isinstance(arguments, dict):
            run = _run_preview(declared.preview, declared.preview_executor, arguments)
            jobs[call.id] = asyncio.ensure_future(run)
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


async def _run_preview(preview: Preview, executor: Executor | None, arguments: dict[str, Any]) -> str | None:
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
    if limit < 2 * CUT_NOTE_CHARS:
        return f"(no preview: this turn's previews reached their {MAX_TURN_PREVIEW_CHARS:,}-character budget)"
    cut = limit - CUT_NOTE_CHARS
    return text[:cut] + f"\n[preview cut: {len(text) - cut:,} more characters]"


__all__ = ["CUT_NOTE_CHARS", "MAX_PREVIEW_CHARS", "MAX_TURN_PREVIEW_CHARS", "PREVIEW_SECONDS", "previews"]
