"""A provider that echoes the API key, whole or in part, in any error: the key never leaves.

Each path by which provider text reaches an exception is driven for real: the scripted
server for HTTP errors, SSE `error` events and mid-stream error chunks, a raw transport
for malformed bodies and protocol errors. Whatever is raised is checked in full: its
message, repr and every exception in its chain.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest

from signoff.chat import LLMConfig, OpenAIChatClient
from signoff.errors import ProviderError, StreamError
from signoff.messages import ChatMessage
from signoff.testing import Reply, ScriptedModelServer

KEY = "sk-proj-Q7vR2mX9pL4kT8wN3bZ6"
KEY_ENV = "SIGNOFF_TEST_ECHO_KEY"
PROMPT = [ChatMessage.user("hi")]
ECHOES = {
    "whole": KEY,
    "minus-two": KEY[:-2],
    "minus-first-two": KEY[2:],
    "middle": KEY[6:18],
    "split": f"{KEY[:13]} ... {KEY[13:]}",
}


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, KEY)
    return KEY


def runs_of_key(text: str) -> list[str]:
    """Every 8-character run of the key found in `text` (expected: none)."""
    return [KEY[i : i + 8] for i in range(len(KEY) - 7) if KEY[i : i + 8] in text]


def everything_shown(exc: BaseException) -> str:
    """The text of `exc` and of every exception chained to it, as a log would print it."""
    shown: list[str] = []
    seen: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo:
        each = todo.pop()
        if each is not None and all(each is not s for s in seen):
            seen.append(each)
            shown += [str(each), repr(each)]
            todo += [each.__cause__, each.__context__]
    return "\n".join(shown)


async def error_from_server(reply: Reply) -> BaseException:
    with ScriptedModelServer([reply]) as server:
        cfg = LLMConfig(base_url=server.base_url, model="m", api_key_env=KEY_ENV)
        async with OpenAIChatClient(cfg) as client:
            with pytest.raises((ProviderError, StreamError)) as caught:
                await client.complete(PROMPT, [])
    return caught.value


async def error_from_transport(handler: Callable[[httpx.Request], httpx.Response]) -> BaseException:
    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    cfg = LLMConfig(base_url="http://model.test/v1", model="m", api_key_env=KEY_ENV)
    async with http, OpenAIChatClient(cfg, http_client=http) as client:
        with pytest.raises((ProviderError, StreamError)) as caught:
            await client.complete(PROMPT, [])
    return caught.value


def sse(body: str) -> Callable[[httpx.Request], httpx.Response]:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body.encode())

    return handler


def assert_masked(exc: BaseException, expected_start: str) -> None:
    shown = everything_shown(exc)
    assert runs_of_key(shown) == [], shown
    assert str(exc).startswith(expected_start), str(exc)
    assert "***" in str(exc), str(exc)  # the echo was there, and was masked


@pytest.mark.parametrize("echo", ECHOES.values(), ids=ECHOES.keys())
async def test_sse_error_event_echoing_the_key_is_masked(echo: str) -> None:
    exc = await error_from_server(Reply.failing_stream(f"invalid key {echo}", text="partial"))
    assert isinstance(exc, StreamError)
    assert_masked(exc, "provider sent an error event")


@pytest.mark.parametrize("echo", ECHOES.values(), ids=ECHOES.keys())
async def test_mid_stream_error_chunk_echoing_the_key_is_masked(echo: str) -> None:
    exc = await error_from_server(Reply.failing_stream(f"quota for {echo}", text="partial", event=False))
    assert isinstance(exc, StreamError)
    assert_masked(exc, "provider reported an error mid-stream")


@pytest.mark.parametrize("echo", ECHOES.values(), ids=ECHOES.keys())
async def test_http_error_echoing_the_key_is_masked(echo: str) -> None:
    exc = await error_from_server(Reply.error(401, f"Incorrect API key provided: {echo}"))
    assert isinstance(exc, ProviderError) and exc.status == 401
    assert_masked(exc, "provider returned HTTP 401: Incorrect API key provided: ")
    assert runs_of_key(exc.message) == []


async def test_malformed_chunk_quoting_the_key_is_masked() -> None:
    exc = await error_from_transport(sse(f"data: {{not json {KEY[:-2]}\n\n"))
    assert isinstance(exc, StreamError)
    assert_masked(exc, "provider sent malformed JSON")


async def test_chunk_of_unexpected_shape_quoting_the_key_is_masked() -> None:
    exc = await error_from_transport(sse(f"data: {json.dumps({'choices': [KEY]})}\n\n"))
    assert isinstance(exc, StreamError)
    assert_masked(exc, "provider sent a chunk of unexpected shape")


async def test_plain_json_body_quoting_the_key_is_masked() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "application/json"}, content=f"oops {KEY[1:]}".encode())

    exc = await error_from_transport(handler)
    assert isinstance(exc, StreamError)
    assert_masked(exc, "provider sent malformed JSON")


async def test_protocol_error_quoting_the_key_becomes_a_masked_stream_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        # What h11 raises for a bad header line: it quotes the line it received.
        raise httpx.RemoteProtocolError(f"illegal header line: bytearray(b'x-echo: {KEY}')", request=request)

    exc = await error_from_transport(handler)
    assert isinstance(exc, StreamError)
    assert_masked(exc, "RemoteProtocolError: illegal header line")


async def test_errors_that_do_not_quote_the_key_keep_their_type() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    cfg = LLMConfig(base_url="http://model.test/v1", model="m", api_key_env=KEY_ENV)
    async with http, OpenAIChatClient(cfg, http_client=http) as client:
        with pytest.raises(httpx.ConnectError, match="connection refused"):
            await client.complete(PROMPT, [])


async def test_a_short_dummy_key_is_not_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "ollama")
    exc = await error_from_server(Reply.error(404, "model llama-ollama-7b not found"))
    assert str(exc) == "provider returned HTTP 404: model llama-ollama-7b not found"
