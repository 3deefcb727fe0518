"""The ChatClient protocol: one model turn from a transcript and tool specs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from signoff.messages import ChatMessage, ChatResponse, ToolSpec


class ChatOptions(BaseModel):
    """Per-request options; None means the client's configured default."""

    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    response_format: dict[str, Any] | None = None
    """OpenAI's `response_format` (a JSON schema the answer must fit), sent as given."""


OnText = Callable[[str], None]
"""Called with each text delta while a response streams (also a liveness tick)."""


@runtime_checkable
class ChatClient(Protocol):
    """Anything that turns a transcript into one complete model turn."""

    async def complete(
        self,
        messages: list[ChatMessage],
        tools: list[ToolSpec],
        options: ChatOptions | None = None,
        on_text: OnText | None = None,
    ) -> ChatResponse:
        """Send the transcript; return the whole assistant turn.

        Raises:
            ProviderError: the provider answered non-2xx.
            StreamError: the stream ended before its finish reason / `[DONE]`.
        """
        ...
