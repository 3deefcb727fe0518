"""ScriptedModelServer: a real OpenAI-compatible server answering from a script."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any

import httpx
import pytest

from signoff.chat import LLMConfig, OpenAIChatClient
from signoff.errors import ProviderError
from signoff.messages import ChatMessage, ToolCall, ToolSpec
from signoff.testing import Reply, ScriptedModelServer, ScriptedRequest, demo_script

RUN = ToolSpec(name="run_command")


_http = httpx.Client(timeout=5)  # one client: building an SSL context per request is slow


def post(base_url: str, messages: list[dict], **body: object) -> httpx.Response:
    payload = {"model": "m", "messages": messages, **body}
    return _http.post(f"{base_url}/chat/completions", json=payload)


def test_sync_non_streaming_request_gets_a_json_completion() -> None:
    with ScriptedModelServer([Reply.text("plain")]) as server:
        response = post(server.base_url, [{"role": "user", "content": "hi"}], stream=False)
    assert response.headers["content-type"] == "application/json"
    choice = response.json()["choices"][0]
    assert choice == {
        "index": 0,
        "message": {"role": "assistant", "content": "plain"},
        "finish_reason": "stop",
    }


def test_streaming_request_gets_sse_ending_with_usage_and_done() -> None:
    with ScriptedModelServer([Reply.text("abc", chunks=3)]) as server:
        response = post(server.base_url, [{"role": "user", "content": "hi"}], stream=True)
    assert response.headers["content-type"] == "text/event-stream"
    lines = [line.removeprefix("data: ") for line in response.text.split("\n\n") if line]
    assert lines[-1] == "[DONE]"
    assert json.loads(lines[-2])["choices"] == [] and "usage" in json.loads(lines[-2])
    assert json.loads(lines[-3])["choices"][0]["finish_reason"] == "stop"


def test_list_script_is_used_in_order_then_answers_400() -> None:
    with ScriptedModelServer([Reply.text("one"), Reply.text("two")]) as server:
        answers = [post(server.base_url, [{"role": "user", "content": "x"}]) for _ in range(3)]
    assert [a.json()["choices"][0]["message"]["content"] for a in answers[:2]] == ["one", "two"]
    assert answers[2].status_code == 400
    assert "no reply left" in answers[2].json()["error"]["message"]
    assert server.request_count == 3


def test_generated_ids_follow_the_round_of_the_conversation() -> None:
    transcript: list[dict[str, Any]] = [
        {"role": "user", "content": "x"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1_1",
                    "type": "function",
                    "function": {"name": "run_command", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1_1", "content": "done"},
    ]
    reply = Reply.tool_calls([("run_command", {}), ("run_command", "{}")])
    with ScriptedModelServer([reply]) as server:
        message = post(server.base_url, transcript).json()["choices"][0]["message"]
    assert [c["id"] for c in message["tool_calls"]] == ["call_2_1", "call_2_2"]


def test_unanswered_tool_call_is_refused_like_openai_does() -> None:
    transcript: list[dict[str, Any]] = [
        {"role": "user", "content": "x"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "run_command", "arguments": "{}"},
                }
            ],
        },
        {"role": "user", "content": "and?"},
    ]
    with ScriptedModelServer([Reply.text("never")]) as server:
        response = post(server.base_url, transcript)
    assert response.status_code == 400
    assert "c1" in response.json()["error"]["message"]


def test_a_failing_script_answers_500_naming_the_exception() -> None:
    def script(request: ScriptedRequest) -> Reply:
        raise LookupError("no rule for this")

    with ScriptedModelServer(script) as server:
        response = post(server.base_url, [{"role": "user", "content": "x"}])
    assert response.status_code == 500
    assert "no rule for this" in response.json()["error"]["message"]


async def test_many_concurrent_streams_are_all_served() -> None:
    count = 120  # more than httpx's 100 pooled connections, so some wait for reuse
    with ScriptedModelServer(lambda request: Reply.text(f"echo {request.last.content}")) as server:
        async with OpenAIChatClient(LLMConfig(base_url=server.base_url, model="m")) as client:
            answers = await asyncio.gather(*(client.complete([ChatMessage.user(str(i))], []) for i in range(count)))
    assert [a.message.content for a in answers] == [f"echo {i}" for i in range(count)]
    assert server.request_count == count


async def test_demo_script_asks_to_run_a_harmless_command_about_the_prompt() -> None:
    with ScriptedModelServer(demo_script) as server:
        async with OpenAIChatClient(LLMConfig(base_url=server.base_url, model="m")) as client:
            first = await client.complete([ChatMessage.user("Delete the directory /tmp/logs.")], [RUN])
    assert first.message.tool_calls == [
        ToolCall(id="call_1_1", name="run_command", arguments='{"command": "ls -la /tmp/logs"}')
    ]


@pytest.mark.parametrize(
    ("tool_result", "expected"),
    [
        ("Rejected: Back up the logs first", "not run. Rejected: Back up the logs first"),
        ("a.log\nb.log", "a.log\nb.log"),
    ],
)
def test_demo_script_summarises_the_tool_result(tool_result: str, expected: str) -> None:
    call = ToolCall(id="call_1_1", name="run_command", arguments="{}")
    messages = [
        ChatMessage.user("x"),
        ChatMessage.assistant(None, [call]),
        ChatMessage.tool(tool_result, "call_1_1"),
    ]
    request = ScriptedRequest(messages=messages, tools=["run_command"], model="m", raw={}, headers={})
    reply = demo_script(request)
    assert reply.calls == () and expected in (reply.content or "")


def test_module_entry_point_serves_the_demo_script_until_killed() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "signoff.testing", "--port", "0"], stdout=subprocess.PIPE, text=True)
    try:
        base_url = proc.stdout.readline().strip()  # type: ignore[union-attr]
        response = post(base_url, [{"role": "user", "content": "hello"}])
        assert response.json()["choices"][0]["message"]["content"] == "Hello from the scripted model."
    finally:
        proc.terminate()
        proc.wait(timeout=5)


async def test_client_surfaces_a_scripted_error_as_provider_error() -> None:
    with ScriptedModelServer([Reply.error(401, "bad key")]) as server:
        async with OpenAIChatClient(LLMConfig(base_url=server.base_url, model="m")) as client:
            with pytest.raises(ProviderError, match="HTTP 401: bad key"):
                await client.complete([ChatMessage.user("x")], [])
