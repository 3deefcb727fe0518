"""Reading an OpenAI-compatible answer: SSE chunks (or one JSON completion) into one turn.

How a response ends: `data: [DONE]` ends the stream, and a finish reason must have been
seen by then; a body that ends cleanly without `[DONE]` is accepted only after a finish
reason (some providers omit `[DONE]`); without one it is a `StreamError`: a cut stream is
an error, never a short answer. `event: error` and `{"error": ...}` chunks are errors.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx
from httpx_sse import EventSource

from signoff.chat.base import OnText
from signoff.errors import StreamError
from signoff.messages import ChatMessage, ChatResponse, FinishReason, ToolCall, Usage

FINISH_REASONS = {
    "stop": FinishReason.STOP,
    "tool_calls": FinishReason.TOOL_CALLS,
    "function_call": FinishReason.TOOL_CALLS,  # the legacy single-function API
    "length": FinishReason.LENGTH,
    "content_filter": FinishReason.CONTENT_FILTER,
}
MAX_ERROR_TEXT = 500


async def read_stream(source: EventSource, turn: Turn) -> None:
    done = False
    try:
        async for event in source.aiter_sse():
            # Past [DONE] the body is read to its end rather than abandoned: an abandoned
            # body makes httpx close the connection instead of reusing it.
            if done:
                continue
            if event.data.strip() == "[DONE]":
                done = True
            elif event.event == "error":
                raise StreamError(f"provider sent an error event: {event.data[:MAX_ERROR_TEXT]}")
            else:
                turn.add_chunk(provider_json(event.data))
    except httpx.TransportError:
        if not done:  # after [DONE] the answer is whole; a failing goodbye does not matter
            raise


class Turn:
    """Accumulates one assistant turn from stream chunks (or one whole completion)."""

    def __init__(self, on_text: OnText | None) -> None:
        self._on_text = on_text
        self._text: list[str] = []
        self._calls: dict[int, dict[str, Any]] = {}  # by the delta's index
        self._finish: str | None = None
        self._usage = Usage()

    def add_chunk(self, chunk: Any) -> None:
        """Fold one parsed chunk in, then pass its text (if any) to `on_text`."""
        try:
            text = self._fold(chunk)
        except (AttributeError, TypeError, KeyError) as exc:
            shown = str(chunk)[:100]
            raise StreamError(f"provider sent a chunk of unexpected shape: {shown}") from exc
        # Outside the try: an error in the caller's callback is theirs, not a stream error.
        if text and self._on_text is not None:
            self._on_text(text)

    def from_completion(self, data: Any) -> ChatResponse:
        """Read a non-streaming completion body through the same accumulator."""
        if not isinstance(data, dict) or not data.get("choices"):
            raise StreamError("provider returned a JSON body with no choices")
        choice = data["choices"][0]
        # A whole completion cannot be cut short, so a missing finish reason means stop.
        finish = choice.get("finish_reason") or "stop"
        delta = choice.get("message") or {}
        chunk = {"choices": [{"delta": delta, "finish_reason": finish}], "usage": data.get("usage")}
        self.add_chunk(chunk)
        return self.response()

    def _fold(self, chunk: dict[str, Any]) -> str:
        if "error" in chunk:  # some providers report failures inside a 200 stream
            raise StreamError(f"provider reported an error mid-stream: {provider_error_text(chunk)}")
        if chunk.get("usage"):
            self._usage = _usage(chunk["usage"])
        text = ""
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) == 0:  # we ask for one choice; ignore any others
                delta = choice.get("delta") or {}
                text += delta.get("content") or ""
                self._add_calls(delta)
                self._finish = choice.get("finish_reason") or self._finish
        self._text.append(text)
        return text

    def _add_calls(self, delta: dict[str, Any]) -> None:
        pieces = delta.get("tool_calls") or []
        if delta.get("function_call"):  # the legacy single-function shape
            pieces = [{"index": 0, "function": delta["function_call"]}]
        for position, piece in enumerate(pieces):
            # Only the first piece for an index carries id and name; later ones carry
            # argument fragments. Parallel calls may interleave, hence keyed by index.
            index = piece.get("index", position)
            slot = self._calls.setdefault(index, {"id": "", "name": "", "args": []})
            function = piece.get("function") or {}
            slot["id"] = slot["id"] or piece.get("id") or ""
            slot["name"] = slot["name"] or function.get("name") or ""
            arguments = function.get("arguments") or ""
            slot["args"].append(arguments if isinstance(arguments, str) else json.dumps(arguments))

    def response(self) -> ChatResponse:
        """The whole turn; a `StreamError` if no finish reason was seen."""
        if self._finish is None:
            raise StreamError("response stream ended before its finish reason; retry the request")
        calls = [
            ToolCall(id=c["id"] or f"call_{index}", name=c["name"], arguments="".join(c["args"]))
            for index, c in sorted(self._calls.items())
        ]
        reason = FINISH_REASONS.get(self._finish, FinishReason.STOP)
        # Some servers (Ollama, vLLM) say "stop" after tool calls; the calls are what count.
        if calls and reason is FinishReason.STOP:
            reason = FinishReason.TOOL_CALLS
        elif not calls and reason is FinishReason.TOOL_CALLS:
            reason = FinishReason.STOP
        message = ChatMessage.assistant("".join(self._text) or None, calls)
        return ChatResponse(message=message, finish_reason=reason, usage=self._usage)


def provider_json(text: str | bytes) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise StreamError(f"provider sent malformed JSON ({exc}): {str(text)[:100]!r}") from exc


def _usage(data: Mapping[str, Any]) -> Usage:
    prompt = _count(data.get("prompt_tokens"))
    completion = _count(data.get("completion_tokens"))
    total = _count(data.get("total_tokens")) or prompt + completion
    return Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=total)


def _count(value: Any) -> int:
    """A token count as the provider gave it; 0 for one that is not a count (NaN, text, a list)."""
    try:
        return max(int(value or 0), 0)
    except (TypeError, ValueError, OverflowError):
        return 0


def provider_error_text(body: Any) -> str:
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return str(body["error"].get("message") or body["error"])
    if isinstance(body, dict) and "error" in body:
        return str(body["error"])
    return str(body)
