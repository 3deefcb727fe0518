"""What a caller gives an in-process run: its session, its options, a way to cancel it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from signoff.approval.requests import ToolApprovalRequest, ToolApprovalResponse
from signoff.messages import ChatMessage


class CancellationToken:
    """Stops a run cleanly (finish reason `cancelled`) when `cancel()` is called."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    async def wait(self) -> None:
        await self._event.wait()


@dataclass
class AgentRunOptions:
    """Per-run options (the original `AgentRunOptions`)."""

    tool_approval_responses: list[ToolApprovalResponse] = field(default_factory=list)
    max_rounds: int | None = None
    model: str | None = None
    temperature: float | None = None
    cancellation: CancellationToken | None = None
    max_total_tokens: int | None = None
    requested_by: str | None = None


@dataclass
class AgentSession:
    """An in-memory session: keeps the transcript between runs.

    Attributes:
        messages: the transcript.
        children: the sub-agents' runs that wait for a decision, by their id
            (`<parent id>--<call id>`, the top run's id being its agent's name): each its own
            session, resumed when the parent's next `run()` takes the call up again.
        pending: what waited when the last run finished `awaiting_approval`: its own calls and
            its sub-agents' (those with `workflow_id` and `path`).
    """

    messages: list[ChatMessage] = field(default_factory=list)
    children: dict[str, AgentSession] = field(default_factory=dict)
    pending: list[ToolApprovalRequest] = field(default_factory=list)
