"""The OpenAI-compatible client's failures: provider errors, broken streams, transport errors."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from email.utils import formatdate
from typing import Any

import httpx
import pytest

from signoff.chat import LLMConfig, OpenAIChatClient
from signoff.errors import ProviderError, StreamError
from signoff.messages import ChatMessage
from signoff.testing import Reply, ScriptedModelServer, ScriptedRequest

PROMPT = [ChatMessage.user("hi")]


@asynccontextmanager
async def serve(*replies: Reply, **config: Any) -> AsyncIterator[OpenAIChatClient]:
    with ScriptedModelServer(list(replies)) as server:
        cfg = LLMConfig(base_url=server.base_url, model="scripted", **config)
        async with OpenAIChatClient(cfg) as client:
            yield client


def raw_sse_client(body: str) -> OpenAIChatClient:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body.encode())

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return OpenAIChatClient(LLMConfig(base_url="http://model.test/v1", model="m"), http_client=http)


async def test_cut_connection_raises_stream_error_not_a_short_answer() -> None:
    async with serve(Reply.cut("partial answ")) as client:
        with pytest.raises(StreamError, match="broke off"):
            await client.complete(PROMPT, [])


async def test_body_ending_without_finish_reason_raises_stream_error() -> None:
    async with serve(Reply.cut("partial answ", close=False)) as client:
        with pytest.raises(StreamError, match="finish reason"):
            await client.complete(PROMPT, [])


async def test_done_without_finish_reason_raises_stream_error() -> None:
    delta = json.dumps({"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": None}]})
    async with raw_sse_client(f"data: {delta}\n\ndata: [DONE]\n\n") as client:
        with pytest.raises(StreamError, match="finish reason"):
            await client.complete(PROMPT, [])


async def test_malformed_json_chunk_raises_stream_error() -> None:
    async with raw_sse_client('data: {"choices": [\n\n') as client:
        with pytest.raises(StreamError, match="malformed JSON"):
            await client.complete(PROMPT, [])


async def test_chunk_of_unexpected_shape_raises_stream_error() -> None:
    async with raw_sse_client('data: {"choices": [1, 2]}\n\n') as client:
        with pytest.raises(StreamError, match="unexpected shape"):
            await client.complete(PROMPT, [])


async def test_error_object_inside_a_200_stream_raises_stream_error() -> None:
    body = 'data: {"error": {"message": "upstream overloaded"}}\n\n'
    async with raw_sse_client(body) as client:
        with pytest.raises(StreamError, match="upstream overloaded"):
            await client.complete(PROMPT, [])


async def test_429_carries_retry_after_seconds() -> None:
    async with serve(Reply.error(429, "Rate limit reached", retry_after=7)) as client:
        with pytest.raises(ProviderError) as caught:
            await client.complete(PROMPT, [])
    assert (caught.value.status, caught.value.retry_after) == (429, 7.0)
    assert caught.value.retryable


async def test_retry_after_as_http_date_becomes_seconds() -> None:
    date = formatdate(time.time() + 30, usegmt=True)
    async with serve(Reply.error(503, "busy", retry_after=date)) as client:
        with pytest.raises(ProviderError) as caught:
            await client.complete(PROMPT, [])
    assert caught.value.retry_after is not None and 25 <= caught.value.retry_after <= 30


async def test_500_is_a_retryable_provider_error() -> None:
    async with serve(Reply.error(500, "internal error")) as client:
        with pytest.raises(ProviderError) as caught:
            await client.complete(PROMPT, [])
    assert (caught.value.status, caught.value.retryable, caught.value.retry_after) == (
        500,
        True,
        None,
    )


async def test_400_carries_the_providers_message_and_is_not_retryable() -> None:
    async with serve(Reply.error(400, "Invalid 'messages': too short")) as client:
        with pytest.raises(ProviderError) as caught:
            await client.complete(PROMPT, [])
    assert caught.value.status == 400
    assert caught.value.message == "Invalid 'messages': too short"
    assert not caught.value.retryable
    assert "HTTP 400: Invalid 'messages': too short" in str(caught.value)


async def test_non_json_error_body_becomes_the_message() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(502, text="<html>Bad gateway</html>")

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    async with OpenAIChatClient(LLMConfig(base_url="http://m.test/v1", model="m"), http) as client:
        with pytest.raises(ProviderError) as caught:
            await client.complete(PROMPT, [])
    assert (caught.value.status, caught.value.message) == (502, "<html>Bad gateway</html>")


async def test_connection_refused_propagates_as_httpx_connect_error() -> None:
    with ScriptedModelServer([]) as server:
        base_url = server.base_url  # a port that was free a moment ago and is closed now
    async with OpenAIChatClient(LLMConfig(base_url=base_url, model="m")) as client:
        with pytest.raises(httpx.ConnectError):
            await client.complete(PROMPT, [])


async def test_silent_provider_times_out_as_httpx_read_timeout() -> None:
    gave_up = threading.Event()

    def silent(request: ScriptedRequest) -> Reply:
        gave_up.wait(timeout=10)  # in the server's thread: answer only once the client gave up
        return Reply.text("too late")

    with ScriptedModelServer(silent) as server:
        cfg = LLMConfig(base_url=server.base_url, model="m", read_timeout=0.05)
        try:
            async with OpenAIChatClient(cfg) as client:
                with pytest.raises(httpx.ReadTimeout):
                    await client.complete(PROMPT, [])
        finally:
            gave_up.set()
