"""One scripted conversation through both drivers gives the same transcript."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from temporalio.client import Client

from signoff.agent.builder import AgentBuilder
from signoff.agent.defaults import default_agent
from signoff.agent.session import AgentRunOptions, AgentSession
from signoff.approval.requests import ToolApprovalResponse
from signoff.chat.config import LLMConfig
from signoff.chat.openai import OpenAIChatClient
from signoff.messages import ApprovalRequestEvent, ChatMessage
from signoff.tools.base import ToolResult
from signoff.tools.context import Context
from signoff.tools.files.scope import WorkspaceScope
from tests.helpers import (
    Reply,
    ScriptedModelServer,
    ScriptedRequest,
    agents_for,
    call,
    running_worker,
    start_run,
    wait_pending,
)


def conversation(request: ScriptedRequest) -> Reply:
    if request.round == 1:
        return Reply.tool_calls(
            [call("run_command", "call_1", command="echo one"), call("list_dir", "call_2"), call("nope", "call_3")]
        )
    if request.round == 2:
        return Reply.tool_calls([call("write_file", "call_4", path="out.txt", content="x")], text="writing")
    return Reply.text("finished")


DECISIONS = [ToolApprovalResponse.approve("call_1", arguments={"command": "echo edited"})]


async def test_agent_and_workflow_produce_the_same_transcript(client: Client, task_queue: str, tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with ScriptedModelServer(conversation) as model:
        config = LLMConfig(base_url=model.base_url, model="scripted")
        agent = default_agent(WorkspaceScope(tmp_path / "a"), OpenAIChatClient(config))
        session = AgentSession()
        [e async for e in agent.run("go", session)]
        [e async for e in agent.run([], session, AgentRunOptions(tool_approval_responses=DECISIONS))]
        in_process_requests = [r.messages[1:] for r in model.requests]

        agents = {"default": default_agent(WorkspaceScope(tmp_path / "b"))}
        async with running_worker(client, task_queue, model, agents):
            handle = await start_run(client, task_queue, "go")
            await wait_pending(handle)
            await handle.execute_update("submit_tool_approval", DECISIONS)
            result = await handle.result()
        workflow_requests = [r.messages[1:] for r in model.requests[len(in_process_requests) :]]
    assert result.messages == session.messages
    assert workflow_requests == in_process_requests
    assert result.text == "finished" and (tmp_path / "b" / "out.txt").read_text() == "x"


class Tickets:
    """A context provider: instructions from the start of the conversation, and a tool whose
    calls need approval only for big ticket numbers (a per-call gate)."""

    def __init__(self) -> None:
        self.closed: list[int] = []
        self.consulted = 0

    def on_invoking(self, messages: list[ChatMessage]) -> Context:
        self.consulted += 1
        first = messages[0].content if messages else ""
        return Context(instructions=[f"The operator said first: {first}"], tools=[CloseTicket(self)])


class CloseTicket:
    name, description, kind, idempotent = "close_ticket", "Close a ticket", "function", True

    def __init__(self, tickets: Tickets) -> None:
        self.tickets = tickets
        self.parameters: dict[str, Any] = {
            "type": "object",
            "properties": {"id": {"type": "integer"}},
            "required": ["id"],
        }

    def requires_approval(self, arguments: dict[str, object]) -> bool:
        return int(str(arguments.get("id", 0))) > 100

    async def execute(self, arguments: dict[str, object]) -> ToolResult:
        self.tickets.closed.append(int(str(arguments["id"])))
        return ToolResult(content=f"closed {arguments['id']}")


def tickets_conversation(request: ScriptedRequest) -> Reply:
    if request.round == 1:
        return Reply.tool_calls([call("close_ticket", "call_1", id=5), call("close_ticket", "call_2", id=500)])
    return Reply.text(" / ".join(m.content or "" for m in request.messages if m.role == "tool"))


async def test_context_providers_are_consulted_and_gate_the_same_way_in_both(client: Client, task_queue: str) -> None:
    approve = [ToolApprovalResponse.approve("call_2")]
    with ScriptedModelServer(tickets_conversation) as model:
        config = LLMConfig(base_url=model.base_url, model="scripted")
        local = Tickets()
        agent = AgentBuilder("tickets").with_chat_client(OpenAIChatClient(config)).with_context_provider(local).build()
        session = AgentSession()
        first = [e async for e in agent.run("close the old ones", session)]
        [e async for e in agent.run([], session, AgentRunOptions(tool_approval_responses=approve))]
        in_process = list(model.requests)

        durable = Tickets()
        served = {"tickets": AgentBuilder("tickets").with_context_provider(durable).build()}
        async with running_worker(client, task_queue, model, agents_for(Path("."), extra=list(served.values()))):
            handle = await start_run(client, task_queue, "close the old ones", agent="tickets")
            (pending,) = await wait_pending(handle)
            await handle.execute_update("submit_tool_approval", [a.model_dump() for a in approve])
            result = await handle.result()
        workflow = model.requests[len(in_process) :]
    asked = [e.request.call_id for e in first if isinstance(e, ApprovalRequestEvent)]
    assert asked == [pending["call_id"]] == ["call_2"]
    assert [r.messages for r in workflow] == [r.messages for r in in_process]  # system prompt included
    assert workflow[0].messages[0].content == "The operator said first: close the old ones"
    assert result.messages == session.messages and result.text == "closed 5 / closed 500"
    assert local.closed == durable.closed == [5, 500]
