"""One scripted conversation through both drivers gives the same transcript."""

from __future__ import annotations

from pathlib import Path

from temporalio.client import Client

from signoff.agent import AgentRunOptions, AgentSession
from signoff.approvals import ToolApprovalResponse
from signoff.chat.config import LLMConfig
from signoff.chat.openai import OpenAIChatClient
from signoff.defaults import default_agent
from signoff.tools.scope import WorkspaceScope
from tests.helpers import Reply, ScriptedModelServer, ScriptedRequest, call, running_worker, start_run, wait_pending


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
