"""What a scripted model sees (`ScriptedRequest`) and answers (`Reply`)."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from signoff.messages import ChatMessage, ToolCall, Usage

CallSpec = ToolCall | tuple[str, dict[str, Any] | str]
"""A tool call to send: a `ToolCall` (explicit id) or `(name, arguments)`."""


@dataclass(frozen=True)
class ScriptedRequest:
    """One chat-completion request as the server received it.

    Attributes:
        messages: the transcript, parsed back from the OpenAI JSON.
        tools: the names of the tools offered.
        model: the requested model.
        raw: the whole JSON body.
        headers: the HTTP headers, names lower-cased.
    """

    messages: list[ChatMessage]
    tools: list[str]
    model: str
    raw: dict[str, Any]
    headers: dict[str, str]

    @property
    def last(self) -> ChatMessage:
        """The last message of the transcript."""
        return self.messages[-1]

    @property
    def round(self) -> int:
        """1 for the first model turn of a conversation, 2 for the next, ..."""
        return 1 + sum(m.role == "assistant" for m in self.messages)


@dataclass(frozen=True)
class Reply:
    """What the server answers; build one with the class methods."""

    content: str | None = None
    calls: tuple[CallSpec, ...] = ()
    chunks: int = 3
    finish_reason: str = "stop"
    usage: Usage | None = None
    status: int = 200
    error_message: str = ""
    retry_after: float | str | None = None
    broken: bool = False  # stop before the finish reason
    close: bool = True  # with `broken`: drop the connection (else end the body cleanly)
    done: bool = True  # send `data: [DONE]`
    interleave: bool = False  # interleave the deltas of parallel tool calls
    ignore_stream: bool = False  # answer plain JSON even to `stream: true`
    stream_error: str | None = None  # after the text deltas, report this error in the stream
    error_event: bool = True  # with `stream_error`: an SSE `event: error` (else a data chunk)
    pause: float = 0.0  # seconds between streamed chunks (a model that writes slowly)

    @classmethod
    def text(cls, text: str, chunks: int = 3, usage: Usage | None = None) -> Reply:
        """A text answer streamed in `chunks` deltas."""
        return cls(content=text, chunks=chunks, usage=usage)

    @classmethod
    def tool_calls(
        cls,
        calls: Sequence[CallSpec],
        text: str | None = None,
        chunks: int = 3,
        usage: Usage | None = None,
        interleave: bool = False,
    ) -> Reply:
        """Tool calls, each call's arguments split over `chunks` deltas."""
        return cls(
            content=text,
            calls=tuple(calls),
            chunks=chunks,
            finish_reason="tool_calls",
            usage=usage,
            interleave=interleave,
        )

    @classmethod
    def error(cls, status: int, message: str, retry_after: float | str | None = None) -> Reply:
        """An HTTP error with an OpenAI-shaped body and optional `Retry-After`."""
        return cls(status=status, error_message=message, retry_after=retry_after)

    @classmethod
    def cut(cls, text: str = "partial answer", chunks: int = 3, close: bool = True) -> Reply:
        """Some text deltas, then the connection closes (or, `close=False`, the body
        ends cleanly) with neither finish reason nor `[DONE]`."""
        return cls(content=text, chunks=chunks, broken=True, close=close, done=False)

    @classmethod
    def failing_stream(cls, message: str, text: str = "", event: bool = True) -> Reply:
        """A 200 stream of `text` that then reports an error and ends: an SSE
        `event: error` whose data is `{"error": {"message": ...}}`, or (`event=False`)
        that object as an ordinary `data:` chunk, as some providers do mid-stream."""
        return cls(content=text, stream_error=message, error_event=event, done=False)

    @classmethod
    def finish(cls, reason: str = "length", text: str = "") -> Reply:
        """A text answer ending with the given finish reason (`length`, `content_filter`...)."""
        return cls(content=text, finish_reason=reason)

    def without_done(self) -> Reply:
        """The same reply with no `data: [DONE]` line, as some providers do."""
        return replace(self, done=False)

    def ignoring_stream(self) -> Reply:
        """The same reply as one JSON completion even when streaming was asked for."""
        return replace(self, ignore_stream=True)


Script = Callable[[ScriptedRequest], Reply]


def _from_list(replies: Sequence[Reply]) -> Script:
    queue, lock = deque(replies), threading.Lock()

    def script(request: ScriptedRequest) -> Reply:
        with lock:
            if queue:
                return queue.popleft()
        # 400, not 5xx: a script that ran out is a test bug and must not be retried.
        return Reply.error(400, f"scripted server has no reply left ({len(replies)} given)")

    return script
