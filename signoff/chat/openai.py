"""The OpenAI-compatible chat client: one streamed chat completion per call.

Works with any `/chat/completions` endpoint (OpenAI, DeepSeek, Ollama, vLLM, ...).
It never retries: Temporal owns retries, and the activity maps errors to retry behaviour.

How a response ends:
- `data: [DONE]` ends the stream. A finish reason must have been seen by then.
- The body ending cleanly without `[DONE]` is accepted only after a finish reason: some
  providers omit `[DONE]`, and a finish reason means the answer is whole (at worst the
  trailing usage chunk is lost). Without a finish reason it is a `StreamError`: a cut
  stream is an error, never a short answer.
- A JSON body (a provider ignoring `stream: true`) is read as a plain completion.

What is raised:
- `ProviderError(status, message, retry_after)`: the provider answered non-2xx.
- `StreamError`: after the response started, the body broke off (read error, cut
  connection), was malformed JSON, or ended without a finish reason. Retryable.
- `httpx.ConnectError`, `httpx.TimeoutException` (including a read timeout between two
  chunks) and other transport errors propagate as they are; they are retryable too.

No error leaving `complete` holds 8 or more consecutive characters of the API key
(`signoff.chat.masking`): a provider that echoes the key, whole or in part, in an error
body, an SSE `error` event, a mid-stream error chunk or a malformed chunk is masked, and
an exception whose chain quotes it is replaced by a masked `StreamError`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from datetime import UTC
from email.utils import parsedate_to_datetime
from typing import Any, Self

import httpx
from httpx_sse import EventSource, aconnect_sse

from signoff.chat.base import ChatOptions, OnText
from signoff.chat.config import LLMConfig
from signoff.chat.masking import mask_secret, masked_exception
from signoff.errors import ProviderError, StreamError
from signoff.messages import (
    ChatMessage,
    ChatResponse,
    FinishReason,
    ToolCall,
    ToolSpec,
    Usage,
)

_FINISH_REASONS = {
    "stop": FinishReason.STOP,
    "tool_calls": FinishReason.TOOL_CALLS,
    "function_call": FinishReason.TOOL_CALLS,  # the legacy single-function API
    "length": FinishReason.LENGTH,
    "content_filter": FinishReason.CONTENT_FILTER,
}
_MAX_ERROR_TEXT = 500
# Errors reading a body that has started: the answer is incomplete, so retrying is right.
_BROKEN_BODY = (httpx.ReadError, httpx.RemoteProtocolError, httpx.DecodingError)


class OpenAIChatClient:
    """A `ChatClient` for OpenAI-compatible chat-completion endpoints.

    Args:
        config: endpoint, model and timeouts. The API key is read from the environment
            variable `config.api_key_env` at each request and never stored here.
        http_client: an `httpx.AsyncClient` to borrow (left open by `aclose`); when None
            the client makes and owns one.
    """

    def __init__(self, config: LLMConfig, http_client: httpx.AsyncClient | None = None) -> None:
        self.config = config
        # A connect-bounded write; no pool timeout, since waiting for a free connection
        # under load is bounded by the caller (the activity's timeout), not a provider fault.
        self._timeout = httpx.Timeout(
            connect=config.connect_timeout,
            read=config.read_timeout,
            write=config.connect_timeout,
            pool=None,
        )
        self._owns_http = http_client is None
        self._http = http_client or httpx.AsyncClient(timeout=self._timeout)

    def __repr__(self) -> str:
        return f"OpenAIChatClient(base_url={self.config.base_url!r}, model={self.config.model!r})"

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP client if this client made it."""
        if self._owns_http:
            await self._http.aclose()

    async def complete(
        self,
        messages: list[ChatMessage],
        tools: list[ToolSpec],
        options: ChatOptions | None = None,
        on_text: OnText | None = None,
    ) -> ChatResponse:
        """Send the transcript; return the whole assistant turn.

        Args:
            messages: the transcript so far.
            tools: the tools the model may call (omitted from the request when empty).
            options: per-request model, temperature, max_tokens.
            on_text: called with each text delta as it arrives.

        Raises:
            ProviderError: the provider answered non-2xx.
            StreamError: the body broke off, was malformed, or had no finish reason.
            httpx.TransportError: connecting failed or a timeout expired.
        """
        key = self.config.api_key()
        try:
            return await self._complete(key, messages, tools, options or ChatOptions(), on_text)
        except Exception as exc:
            # The one exit for errors: whatever quotes the provider is checked for the key.
            masked = masked_exception(exc, key)
            if masked is None:
                raise
        # Raised outside the handler, so not even a suppressed __context__ holds the original.
        raise masked

    async def _complete(
        self,
        key: str | None,
        messages: list[ChatMessage],
        tools: list[ToolSpec],
        options: ChatOptions,
        on_text: OnText | None,
    ) -> ChatResponse:
        url = f"{self.config.base_url}/chat/completions"
        body = self._body(messages, tools, options)
        async with aconnect_sse(
            self._http, "POST", url, json=body, headers=self._headers(key), timeout=self._timeout
        ) as source:
            response = source.response
            if not response.is_success:
                raise await _provider_error(response, key)
            turn = _Turn(on_text)
            try:
                if "text/event-stream" not in response.headers.get("content-type", ""):
                    return turn.from_completion(_loads(await response.aread()))
                await _read_stream(source, turn)
            except _BROKEN_BODY as exc:
                raise StreamError(f"response stream broke off: {exc}; retry the request") from exc
            return turn.response()

    def _body(
        self, messages: list[ChatMessage], tools: list[ToolSpec], options: ChatOptions
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": options.model or self.config.model,
            "messages": [message_to_openai(m) for m in messages],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            body["tools"] = [t.to_openai() for t in tools]
        if options.temperature is not None:
            body["temperature"] = options.temperature
        if options.max_tokens is not None:
            body["max_tokens"] = options.max_tokens
        return body

    def _headers(self, key: str | None) -> dict[str, str]:
        headers = dict(self.config.headers)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers


async def _read_stream(source: EventSource, turn: _Turn) -> None:
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
                raise StreamError(f"provider sent an error event: {event.data[:_MAX_ERROR_TEXT]}")
            else:
                turn.add_chunk(_loads(event.data))
    except httpx.TransportError:
        if not done:  # after [DONE] the answer is whole; a failing goodbye does not matter
            raise


class _Turn:
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
            raise StreamError(f"provider reported an error mid-stream: {_error_text(chunk)}")
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
        reason = _FINISH_REASONS.get(self._finish, FinishReason.STOP)
        # Some servers (Ollama, vLLM) say "stop" after tool calls; the calls are what count.
        if calls and reason is FinishReason.STOP:
            reason = FinishReason.TOOL_CALLS
        elif not calls and reason is FinishReason.TOOL_CALLS:
            reason = FinishReason.STOP
        message = ChatMessage.assistant("".join(self._text) or None, calls)
        return ChatResponse(message=message, finish_reason=reason, usage=self._usage)


def message_to_openai(message: ChatMessage) -> dict[str, Any]:
    """One message in the OpenAI request shape, without null fields it does not need."""
    data: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        data["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in message.tool_calls
        ]
    elif data["content"] is None:
        data["content"] = ""  # only an assistant message with tool calls may have null content
    if message.tool_call_id is not None:
        data["tool_call_id"] = message.tool_call_id
    return data


def message_from_openai(data: Mapping[str, Any]) -> ChatMessage:
    """Parse an OpenAI-shaped message (as sent in a request) back into a `ChatMessage`."""
    calls = [
        ToolCall(
            id=c.get("id") or "",
            name=(c.get("function") or {}).get("name") or "",
            arguments=(c.get("function") or {}).get("arguments") or "",
        )
        for c in data.get("tool_calls") or []
    ]
    return ChatMessage(
        role=data["role"],
        content=data.get("content"),
        tool_calls=calls or None,
        tool_call_id=data.get("tool_call_id"),
    )


def _loads(text: str | bytes) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise StreamError(f"provider sent malformed JSON ({exc}): {str(text)[:100]!r}") from exc


def _usage(data: Mapping[str, Any]) -> Usage:
    prompt = int(data.get("prompt_tokens") or 0)
    completion = int(data.get("completion_tokens") or 0)
    total = int(data.get("total_tokens") or prompt + completion)
    return Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=total)


def _error_text(body: Any) -> str:
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return str(body["error"].get("message") or body["error"])
    if isinstance(body, dict) and "error" in body:
        return str(body["error"])
    return str(body)


async def _provider_error(response: httpx.Response, key: str | None) -> ProviderError:
    text = (await response.aread()).decode("utf-8", "replace")
    try:
        message = _error_text(json.loads(text))
    except ValueError:
        message = text.strip() or response.reason_phrase
    # Some providers echo the key they rejected, whole or in part.
    message = mask_secret(message, key)
    retry_after = _retry_after(response.headers)
    return ProviderError(response.status_code, message[:_MAX_ERROR_TEXT], retry_after)


def _retry_after(headers: httpx.Headers) -> float | None:
    """Seconds to wait from `retry-after-ms` (OpenAI) or `Retry-After` (seconds or a date)."""
    try:
        if "retry-after-ms" in headers:
            return max(0.0, float(headers["retry-after-ms"]) / 1000)
        value = headers.get("retry-after")
        if value is None:
            return None
        if value.strip().replace(".", "", 1).isdigit():
            return float(value)
        when = parsedate_to_datetime(value)
        if when.tzinfo is None:  # "-0000" parses naive; HTTP dates are always UTC
            when = when.replace(tzinfo=UTC)
        return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, IndexError):
        return None
