"""The OpenAI-compatible chat client: one streamed chat completion per call.

Works with any `/chat/completions` endpoint (OpenAI, DeepSeek, Ollama, vLLM, ...).
It never retries: Temporal owns retries, and the activity maps errors to retry behaviour.

How an answer is read (and how it ends) is `signoff.chat.stream`; a JSON body (a
provider ignoring `stream: true`) is read as a plain completion.

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
from httpx_sse import aconnect_sse

from signoff.chat.base import ChatOptions, OnText
from signoff.chat.config import LLMConfig
from signoff.chat.masking import mask_secret, masked_exception
from signoff.chat.stream import MAX_ERROR_TEXT, Turn, provider_error_text, provider_json, read_stream
from signoff.errors import ProviderError, StreamError
from signoff.messages import (
    ChatMessage,
    ChatResponse,
    ToolCall,
    ToolSpec,
)

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
            turn = Turn(on_text)
            try:
                if "text/event-stream" not in response.headers.get("content-type", ""):
                    return turn.from_completion(provider_json(await response.aread()))
                await read_stream(source, turn)
            except _BROKEN_BODY as exc:
                raise StreamError(f"response stream broke off: {exc}; retry the request") from exc
            return turn.response()

    def _body(self, messages: list[ChatMessage], tools: list[ToolSpec], options: ChatOptions) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": options.model or self.config.model,
            "messages": messages_to_openai(messages),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            body["tools"] = [t.to_openai() for t in tools]
        if options.temperature is not None:
            body["temperature"] = options.temperature
        if options.max_tokens is not None:
            body["max_tokens"] = options.max_tokens
        if options.response_format is not None:
            body["response_format"] = options.response_format
        return body

    def _headers(self, key: str | None) -> dict[str, str]:
        headers = dict(self.config.headers)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers


def messages_to_openai(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """A transcript in the OpenAI request shape, with each call under the id the model gave it.

    Where signoff gave a call an id of its own (`ToolCall.model_id`, `signoff.loop.answer`), the
    model is shown its own id again, in its message's calls and in their tool messages alike:
    so the ids it reads are the ones it wrote, and match each other."""
    shown: dict[str, str] = {}
    data = []
    for message in messages:
        if message.role == "assistant" and message.tool_calls:
            shown = {c.id: c.shown_id for c in message.tool_calls}
        item = message_to_openai(message)
        if message.tool_call_id is not None:
            item["tool_call_id"] = shown.get(message.tool_call_id, message.tool_call_id)
        data.append(item)
    return data


def message_to_openai(message: ChatMessage) -> dict[str, Any]:
    """One message in the OpenAI request shape, without null fields it does not need."""
    data: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        data["tool_calls"] = [
            {"id": c.shown_id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
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


async def _provider_error(response: httpx.Response, key: str | None) -> ProviderError:
    text = (await response.aread()).decode("utf-8", "replace")
    try:
        message = provider_error_text(json.loads(text))
    except ValueError:
        message = text.strip() or response.reason_phrase
    # Some providers echo the key they rejected, whole or in part.
    message = mask_secret(message, key)
    retry_after = _retry_after(response.headers)
    return ProviderError(response.status_code, message[:MAX_ERROR_TEXT], retry_after)


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
