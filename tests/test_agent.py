"""The in-process agent: the original design's three examples, resume, cancellation, rendering."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from signoff.agent.builder import AgentBuilder, ChatClientAgent
from signoff.agent.session import AgentRunOptions, AgentSession, CancellationToken
from signoff.approval.requests import ToolApprovalResponse
from signoff.chat.config import LLMConfig
from signoff.chat.openai import OpenAIChatClient
from signoff.messages import ApprovalRequestEvent, ChatMessage, FinishEvent, FinishReason, TextEvent
from signoff.testing import Reply, ScriptedModelServer, ScriptedRequest
from signoff.tools import ApprovalRequiredTool, RunCommand, WorkspaceScope, tool
from signoff.views.render import AgentResponseConverter
from tests.helpers import call

RM = call("run_command", "call_1", command="rm -rf logs")


def reply_with_tool_messages(request: ScriptedRequest) -> Reply:
    if request.round == 1:
        return Reply.tool_calls([RM])
    return Reply.text(" / ".join(m.content or "" for m in request.messages if m.role == "tool"))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "logs").mkdir()
    return tmp_path


def build(server: ScriptedModelServer, workspace: Path) -> ChatClientAgent:
    client = OpenAIChatClient(LLMConfig(base_url=server.base_url, model="scripted"))
    return (
        AgentBuilder("ops")
        .with_instructions("Be careful.")
        .with_chat_client(client)
        .with_tool(ApprovalRequiredTool(RunCommand(WorkspaceScope(workspace))))
        .build()
    )


async def collect(agent: ChatClientAgent, *args: object, **kwargs: object) -> list:
    return [event async for event in agent.run(*args, **kwargs)]  # type: ignore[arg-type]


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(reply_with_tool_messages) as s:
        yield s


async def test_basic_approval_pauses_then_resumes(server: ScriptedModelServer, workspace: Path) -> None:
    agent, session = build(server, workspace), AgentSession()
    events = await collect(agent, "Delete the logs directory", session)
    (request,) = [e.request for e in events if isinstance(e, ApprovalRequestEvent)]
    assert (request.call_id, request.name, request.arguments) == ("call_1", "run_command", {"command": "rm -rf logs"})
    assert events[-1].type == "finish" and events[-1].reason is FinishReason.AWAITING_APPROVAL
    assert (workspace / "logs").exists()

    resumed = await collect(agent, [], session, AgentRunOptions([ToolApprovalResponse.approve("call_1")]))
    assert isinstance(resumed[-1], FinishEvent) and resumed[-1].reason is FinishReason.STOP
    assert not (workspace / "logs").exists()
    assert session.messages == [
        ChatMessage.user("Delete the logs directory"),
        ChatMessage.assistant(None, [RM]),
        ChatMessage.tool("exit code: 0\n", "call_1"),
        ChatMessage.assistant("exit code: 0\n"),
    ]
    assert server.requests[0].messages[0] == ChatMessage.system(server.requests[0].messages[0].content or "")


async def test_denial_reason_reaches_the_model(server: ScriptedModelServer, workspace: Path) -> None:
    agent, session = build(server, workspace), AgentSession()
    await collect(agent, "Delete the logs directory", session)
    deny = ToolApprovalResponse.deny("call_1", "Back up the logs first")
    events = await collect(agent, [], session, AgentRunOptions([deny]))
    assert server.requests[-1].messages[-1] == ChatMessage.tool("Rejected: Back up the logs first", "call_1")
    assert "".join(e.text for e in events if isinstance(e, TextEvent)) == "Rejected: Back up the logs first"
    assert (workspace / "logs").exists()


async def test_two_approvals_in_one_batch_one_approved_one_denied(workspace: Path) -> None:
    def script(request: ScriptedRequest) -> Reply:
        if request.round == 1:
            return Reply.tool_calls(
                [call("run_command", "call_a", command="echo a"), call("run_command", "call_b", command="echo b")]
            )
        return Reply.text("ok")

    with ScriptedModelServer(script) as server:
        agent, session = build(server, workspace), AgentSession()
        first = await collect(agent, "two things", session)
        assert [e.request.call_id for e in first if isinstance(e, ApprovalRequestEvent)] == ["call_a", "call_b"]
        decisions = [ToolApprovalResponse.approve("call_a"), ToolApprovalResponse.deny("call_b", "not b")]
        await collect(agent, [], session, AgentRunOptions(decisions))
    assert [m.content for m in session.messages[2:4]] == ["exit code: 0\na\n", "Rejected: not b"]


async def test_stateless_resume_from_a_transcript(server: ScriptedModelServer, workspace: Path) -> None:
    agent = build(server, workspace)
    transcript = [ChatMessage.user("Delete the logs directory"), ChatMessage.assistant(None, [RM])]
    events = await collect(agent, transcript, None, AgentRunOptions([ToolApprovalResponse.deny("call_1")]))
    assert events[-1].reason is FinishReason.STOP
    assert server.requests[-1].messages[-1] == ChatMessage.tool("Rejected: User denied", "call_1")


async def test_cancellation_stops_a_running_tool_and_finishes_cancelled(workspace: Path) -> None:
    started = asyncio.Event()

    @tool
    async def wait_forever() -> str:
        """Waits until cancelled."""
        started.set()
        await asyncio.Event().wait()  # never set: only cancellation ends this
        return "never"

    with ScriptedModelServer([Reply.tool_calls([call("wait_forever", "call_w")])]) as server:
        client = OpenAIChatClient(LLMConfig(base_url=server.base_url, model="scripted"))
        agent = AgentBuilder("a").with_chat_client(client).with_tool(wait_forever).build()
        token, session = CancellationToken(), AgentSession()

        async def cancel_when_started() -> None:
            await started.wait()
            token.cancel()

        canceller = asyncio.ensure_future(cancel_when_started())
        events = await collect(agent, "go", session, AgentRunOptions(cancellation=token))
        await canceller
    assert events[-1].type == "finish" and events[-1].reason is FinishReason.CANCELLED
    assert session.messages[-1] == ChatMessage.tool("Rejected: Run cancelled", "call_w")


async def test_text_streams_as_deltas_and_renders(workspace: Path) -> None:
    with ScriptedModelServer([Reply.tool_calls([RM]), Reply.text("hello there", chunks=3)]) as server:
        events = await collect(build(server, workspace), "hi")
    assert '[Approval required: run_command({"command": "rm -rf logs"})]' in AgentResponseConverter.to_text(events)
    assert events[-1].reason is FinishReason.AWAITING_APPROVAL


async def test_streamed_text_arrives_in_several_events(workspace: Path) -> None:
    with ScriptedModelServer([Reply.text("hello there", chunks=3)]) as server:
        events = await collect(build(server, workspace), "hi")
    texts = [e.text for e in events if isinstance(e, TextEvent)]
    assert len(texts) == 3 and "".join(texts) == "hello there"
