"""What a caller gives an in-process run: its session, its options, a way to cancel it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from signoff.approval.requests import ToolApprovalResponse
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
    """An in-memory session: keeps the transcript between runs."""

    messages: list[ChatMessage] = field(default_factory=list)
