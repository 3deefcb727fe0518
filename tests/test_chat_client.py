"""The OpenAI-compatible client against the scripted server: what a successful turn yields."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import httpx

from signoff.chat import ChatOptions, LLMConfig, OpenAIChatClient
from signoff.messages import (
    ChatMessage,
    ChatResponse,
    FinishReason,
    ToolCall,
    ToolSpec,
    Usage,
)
from signoff.testing import Reply, ScriptedModelServer

RUN = ToolSpec(name="run_command", description="Run a shell command")
PROMPT = [ChatMessage.user("hi")]


@asynccontextmanager
async def serve(*replies: Reply) -> AsyncIterator[tuple[ScriptedModelServer, OpenAIChatClient]]:
    with ScriptedModelServer(list(replies)) as server:
        async with OpenAIChatClient(LLMConfig(base_url=server.base_url, model="scripted")) as client:
            yield server, client


def sse_client(*events: str) -> OpenAIChatClient:
    """A client whose provider streams exactly these SSE `data:` payloads."""
    body = "".join(f"data: {e}\n\n" for e in events).encode()

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return OpenAIChatClient(LLMConfig(base_url="http://model.test/v1", model="m"), http_client=http)


def chunk(delta: dict | None = None, finish: str | None = None) -> str:
    return json.dumps({"choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}]})


async def test_text_streams_as_deltas_that_join_to_the_answer() -> None:
    deltas: list[str] = []
    async with serve(Reply.text("Hello, streaming world!", chunks=4)) as (_, client):
        response = await client.complete(PROMPT, [], on_text=deltas.append)
    assert len(deltas) == 4
    assert "".join(deltas) == "Hello, streaming world!"
    assert response.message == ChatMessage.assistant("Hello, streaming world!")
    assert response.finish_reason is FinishReason.STOP


async def test_tool_call_arguments_split_across_chunks_are_joined() -> None:
    async with serve(Reply.tool_calls([("run_command", {"command": "ls -la /tmp"})], chunks=5)) as (
        _,
        c,
    ):
        response = await c.complete(PROMPT, [RUN])
    call = ToolCall(id="call_1_1", name="run_command", arguments='{"command": "ls -la /tmp"}')
    assert response == ChatResponse(
        message=ChatMessage.assistant(None, [call]),
        finish_reason=FinishReason.TOOL_CALLS,
        usage=response.usage,
    )


async def test_interleaved_parallel_tool_calls_are_kept_apart_by_index() -> None:
    calls = [("run_command", {"command": "ls"}), ("read_file", {"path": "notes.txt"})]
    async with serve(Reply.tool_calls(calls, text="Two things.", interleave=True)) as (_, client):
        response = await client.complete(PROMPT, [RUN])
    assert response.message == ChatMessage.assistant(
        "Two things.",
        [
            ToolCall(id="call_1_1", name="run_command", arguments='{"command": "ls"}'),
            ToolCall(id="call_1_2", name="read_file", arguments='{"path": "notes.txt"}'),
        ],
    )


async def test_usage_from_the_final_chunk_is_reported() -> None:
    usage = Usage(prompt_tokens=12, completion_tokens=5, total_tokens=17)
    async with serve(Reply.text("ok", usage=usage)) as (_, client):
        response = await client.complete(PROMPT, [])
    assert response.usage == usage


async def test_request_asks_for_a_stream_with_usage_and_offers_the_tools() -> None:
    options = ChatOptions(model="other-model", temperature=0.2, max_tokens=64)
    async with serve(Reply.text("ok")) as (server, client):
        await client.complete(PROMPT, [RUN], options)
    raw = server.requests[0].raw
    assert raw["stream"] is True
    assert raw["stream_options"] == {"include_usage": True}
    assert raw["tools"] == [RUN.to_openai()]
    assert (raw["model"], raw["temperature"], raw["max_tokens"]) == ("other-model", 0.2, 64)


async def test_tools_and_unset_options_are_omitted() -> None:
    async with serve(Reply.text("ok")) as (server, client):
        await client.complete(PROMPT, [])
    raw = server.requests[0].raw
    assert raw["model"] == "scripted"
    assert not {"tools", "temperature", "max_tokens"} & raw.keys()


async def test_transcript_is_sent_in_openai_shape() -> None:
    call = ToolCall(id="call_9", name="run_command", arguments='{"command": "ls"}')
    transcript = [
        ChatMessage.system("be brief"),
        ChatMessage.user("list"),
        ChatMessage.assistant(None, [call]),
        ChatMessage.tool("a.txt", "call_9"),
    ]
    async with serve(Reply.text("ok")) as (server, client):
        await client.complete(transcript, [RUN])
    assert server.requests[0].messages == transcript
    assert server.requests[0].raw["messages"][2] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_9",
                "type": "function",
                "function": {"name": "run_command", "arguments": '{"command": "ls"}'},
            }
        ],
    }


async def test_json_completion_is_read_when_the_provider_ignores_stream() -> None:
    deltas: list[str] = []
    reply = Reply.tool_calls([("run_command", {"command": "ls"})], text="Listing.").ignoring_stream()
    async with serve(reply) as (_, client):
        response = await client.complete(PROMPT, [RUN], on_text=deltas.append)
    assert deltas == ["Listing."]
    assert response.message.tool_calls == [ToolCall(id="call_1_1", name="run_command", arguments='{"command": "ls"}')]
    assert response.finish_reason is FinishReason.TOOL_CALLS
    assert response.usage.total_tokens > 0


async def test_length_finish_reason_is_reported() -> None:
    async with serve(Reply.finish("length", text="cut at the limi")) as (_, client):
        response = await client.complete(PROMPT, [])
    assert (response.finish_reason, response.message.content) == (
        FinishReason.LENGTH,
        "cut at the limi",
    )


async def test_stream_without_done_after_a_finish_reason_is_complete() -> None:
    async with serve(Reply.text("whole answer").without_done()) as (_, client):
        response = await client.complete(PROMPT, [])
    assert response.message.content == "whole answer"


async def test_tool_call_without_id_gets_one_from_its_index() -> None:
    reply = Reply.tool_calls([ToolCall(id="", name="run_command", arguments="{}")])
    async with serve(reply) as (_, client):
        response = await client.complete(PROMPT, [RUN])
    assert response.message.tool_calls == [ToolCall(id="call_0", name="run_command", arguments="{}")]


async def test_legacy_function_call_finish_maps_to_tool_calls() -> None:
    fn = {"function_call": {"name": "run_command", "arguments": "{}"}}
    async with sse_client(chunk(fn), chunk(finish="function_call"), "[DONE]") as client:
        response = await client.complete(PROMPT, [RUN])
    assert response.finish_reason is FinishReason.TOOL_CALLS
    assert response.message.tool_calls == [ToolCall(id="call_0", name="run_command", arguments="{}")]


async def test_unknown_finish_reason_maps_to_stop() -> None:
    async with sse_client(chunk({"content": "hi"}), chunk(finish="eos_token"), "[DONE]") as client:
        response = await client.complete(PROMPT, [])
    assert response.finish_reason is FinishReason.STOP


async def test_stop_after_tool_calls_means_tool_calls() -> None:
    call = {"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "run_command", "arguments": "{}"}}]}
    async with sse_client(chunk(call), chunk(finish="stop"), "[DONE]") as client:
        response = await client.complete(PROMPT, [RUN])
    assert response.finish_reason is FinishReason.TOOL_CALLS


async def test_borrowed_http_client_is_left_open() -> None:
    http = httpx.AsyncClient()
    async with OpenAIChatClient(LLMConfig(base_url="http://x.test/v1", model="m"), http_client=http):
        pass
    assert not http.is_closed
    await http.aclose()


async def test_on_text_sees_each_delta_before_the_turn_returns() -> None:
    seen: list[str] = []
    on_text: Callable[[str], None] = seen.append
    async with sse_client(chunk({"content": "a"}), chunk({"content": "b"}, "stop")) as client:
        response = await client.complete(PROMPT, [], on_text=on_text)
    assert seen == ["a", "b"]
    assert response.message.content == "ab"
