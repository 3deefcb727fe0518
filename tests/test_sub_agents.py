"""Sub-agents on a real dev server: a child AgentRun's gated call waits at the top run, is decided
there (update or signal) and runs once in the child; denial reaches the child's model; depth is
bounded; cancelling the parent ends the child; a worker restarted mid-wait resumes; the parent's
grants do not cover the child's calls; the worker's policy file gates at every depth; a child can
never run a call the parent's policy gates, whatever its own code says."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowHandle
from temporalio.common import SearchAttributeKey

from signoff import AgentBuilder
from signoff.agent.builder import ChatClientAgent
from signoff.approval.policy import ApprovalPolicy, PolicyBook
from signoff.messages import FinishReason, ToolCall
from signoff.tools.function import tool
from tests.cli_harness import Cli, cli, cli_environ  # noqa: F401 - fixtures, taken by name
from tests.governance import refusal
from tests.helpers import (
    Reply,
    ScriptedModelServer,
    ScriptedRequest,
    assert_eventually,
    running_worker,
    start_run,
)
from tests.processes import READY, Processes
from tests.test_durability import worker_env

STATUS = SearchAttributeKey.for_keyword("SignoffStatus")
PENDING_TOOLS = SearchAttributeKey.for_keyword_list("SignoffPendingTools")


def agents(ran: list[str], *, child_gated: bool = False, parent_gated: bool = True) -> dict[str, ChatClientAgent]:
    """`lead` (its own `run_command` gated, unless not `parent_gated`) delegating `research` to
    `researcher`, whose own code leaves its `run_command` ungated (unless `child_gated`)."""

    @tool(name="run_command", approval=ApprovalPolicy() if child_gated else None)
    def child_command(command: str) -> str:
        """Run a shell command."""
        ran.append(command)
        return f"ran {command}"

    @tool(name="run_command", approval=ApprovalPolicy() if parent_gated else None)
    def parent_command(command: str) -> str:
        """Run a shell command."""
        ran.append(f"parent:{command}")
        return f"parent ran {command}"

    @tool(name="lookup")
    def lookup(topic: str) -> str:
        """Look a topic up."""
        ran.append(f"lookup:{topic}")
        return f"found {topic}"

    researcher = AgentBuilder("researcher").with_instructions("child").with_tools([child_command, lookup]).build()
    lead = (
        AgentBuilder("lead")
        .with_instructions("parent")
        .with_tool(parent_command)
        .with_sub_agent("research", researcher, description="Research a task")
        .build()
    )
    return {"lead": lead}


def role(request: ScriptedRequest) -> str:
    return str(request.messages[0].content) if request.messages and request.messages[0].role == "system" else ""


def tool_texts(request: ScriptedRequest) -> list[str]:
    return [m.content or "" for m in request.messages if m.role == "tool"]


def script(child_calls: list[ToolCall], parent_first: list[ToolCall] | None = None) -> Any:
    """The parent (optionally calling `parent_first`, then) delegates once; the child makes
    `child_calls`, then answers with what its tools said."""

    def answer(request: ScriptedRequest) -> Reply:
        texts = tool_texts(request)
        if role(request) == "child":
            if request.last.role == "user":
                return Reply.tool_calls(child_calls)
            return Reply.text("child saw: " + "|".join(texts))
        if parent_first and request.round == 1:
            return Reply.tool_calls(parent_first)
        if request.last.role != "tool" or (parent_first and request.round == 2):
            return Reply.tool_calls([ToolCall(id="call_p1", name="research", arguments=json.dumps({"task": "ls"}))])
        return Reply.text("parent got: " + texts[-1])

    return answer


def command(call_id: str, text: str = "ls") -> ToolCall:
    return ToolCall(id=call_id, name="run_command", arguments=json.dumps({"command": text}))


async def top_pending(handle: WorkflowHandle[Any, Any], count: int = 1) -> list[dict[str, Any]]:
    async def check() -> list[dict[str, Any]]:
        pending: list[dict[str, Any]] = await handle.query("pending_approvals")
        assert len(pending) == count, pending
        return pending

    return await assert_eventually(check, 20.0)


async def search_attributes(handle: WorkflowHandle[Any, Any]) -> tuple[str | None, list[str] | None]:
    described = await handle.describe()
    attributes = described.typed_search_attributes
    tools = attributes.get(PENDING_TOOLS)
    return attributes.get(STATUS), None if tools is None else list(tools)


async def test_a_childs_gated_call_waits_at_the_top_and_runs_once_there_when_approved_there(client: Client) -> None:
    ran: list[str] = []
    queue = f"tq-{uuid.uuid4()}"
    with ScriptedModelServer(script([command("call_c1")])) as model:
        async with running_worker(client, queue, model, agents(ran)):
            handle = await start_run(client, queue, agent="lead")
            child_id = f"{handle.id}--call_p1"
            (waiting,) = await top_pending(handle)
            assert (waiting["call_id"], waiting["name"], waiting["workflow_id"], waiting["path"]) == (
                "call_c1",
                "run_command",
                child_id,
                [child_id],
            )
            assert waiting["binding"]["workflow_id"] == child_id  # a signed decision names the child
            status = await handle.query("status")
            assert status["status"] == "AwaitingApproval" and [p["call_id"] for p in status["pending"]] == ["call_c1"]
            await assert_eventually(
                lambda: _expect(search_attributes(handle), ("AwaitingApproval", ["run_command"])), 10.0
            )
            child = client.get_workflow_handle(child_id)
            (own,) = await child.query("pending_approvals")
            assert (own["workflow_id"], own["path"]) == (child_id, [])
            assert ran == []  # the child's own code leaves run_command ungated: the parent's policy gates it
            ack = await handle.execute_update(
                "submit_tool_approval",
                {"call_id": "call_c1", "approved": True, "approver": "alice", "workflow_id": child_id},
            )
            assert ack["accepted"] == ["call_c1"]
            result = await handle.result()
            child_result = await child.result()
            linked = [e for e in await handle.query("events") if e["type"] == "sub_agent"]
            chain = (await child.describe()).raw_description.workflow_execution_info.first_run_id
    assert [(e["call_id"], e["workflow_id"], e["state"]) for e in linked] == [
        ("call_p1", child_id, "started"),
        ("call_p1", child_id, "finished"),
    ]
    assert linked[0]["chain_id"] == chain and linked[1]["finish_reason"] == "stop"
    assert result.text == "parent got: child saw: ran ls"
    assert ran == ["ls"]
    assert [(r["call_id"], r["approver"], r["approved"]) for r in child_result["approvals"]] == [
        ("call_c1", "alice", True)
    ]


async def _expect(got: Any, expected: Any) -> None:
    assert await got == expected


async def test_a_signal_to_the_top_run_decides_the_childs_call_and_a_denial_reaches_the_childs_model(
    client: Client,
) -> None:
    ran: list[str] = []
    queue = f"tq-{uuid.uuid4()}"
    with ScriptedModelServer(script([command("call_c1"), command("call_c2", "rm -rf /")])) as model:
        async with running_worker(client, queue, model, agents(ran)):
            handle = await start_run(client, queue, agent="lead")
            child_id = f"{handle.id}--call_p1"
            pending = await top_pending(handle, 2)
            assert {p["workflow_id"] for p in pending} == {child_id}
            await handle.signal(
                "tool_approval",
                [
                    {"call_id": "call_c1", "approved": True, "workflow_id": child_id},
                    {"call_id": "call_c2", "approved": False, "reason": "not that", "workflow_id": child_id},
                ],
            )
            result = await handle.result()
    assert ran == ["ls"]
    assert result.text == "parent got: child saw: ran ls|Rejected: not that"
    child_turns = [r for r in model.requests if role(r) == "child"]
    assert tool_texts(child_turns[-1]) == ["ran ls", "Rejected: not that"]


async def test_a_decision_for_a_run_that_is_not_a_waiting_descendant_is_refused(client: Client) -> None:
    ran: list[str] = []
    queue = f"tq-{uuid.uuid4()}"
    with ScriptedModelServer(script([command("call_c1")])) as model:
        async with running_worker(client, queue, model, agents(ran)):
            handle = await start_run(client, queue, agent="lead")
            await top_pending(handle)
            for item, named in (
                ({"call_id": "call_c1", "approved": True, "workflow_id": "someone-else"}, "someone-else"),
                ({"call_id": "call_zz", "approved": True, "workflow_id": f"{handle.id}--call_p1"}, "call_zz"),
            ):
                assert named in await refusal(handle.execute_update("submit_tool_approval", item))
            assert ran == []
            await handle.cancel()


async def test_cancelling_the_parent_ends_the_child_without_running_its_call(client: Client) -> None:
    ran: list[str] = []
    queue = f"tq-{uuid.uuid4()}"
    with ScriptedModelServer(script([command("call_c1")])) as model:
        async with running_worker(client, queue, model, agents(ran)):
            handle = await start_run(client, queue, agent="lead")
            await top_pending(handle)
            child = client.get_workflow_handle(f"{handle.id}--call_p1")
            await handle.cancel()
            result = await handle.result()
            child_result = await child.result()
    assert result.finish_reason is FinishReason.CANCELLED
    assert child_result["finish_reason"] == "cancelled"
    assert ran == []


async def test_a_worker_restarted_while_the_child_waits_resumes_and_runs_the_call_once(client: Client) -> None:
    ran: list[str] = []
    queue = f"tq-{uuid.uuid4()}"
    served = agents(ran)
    with ScriptedModelServer(script([command("call_c1")])) as model:
        async with running_worker(client, queue, model, served):
            handle = await start_run(client, queue, agent="lead")
            await top_pending(handle)
        assert ran == []
        async with running_worker(client, queue, model, served, max_cached_workflows=0):
            child_id = f"{handle.id}--call_p1"
            (waiting,) = await top_pending(handle)
            assert waiting["workflow_id"] == child_id
            await handle.execute_update(
                "submit_tool_approval", {"call_id": "call_c1", "approved": True, "workflow_id": child_id}
            )
            result = await handle.result()
    assert result.text == "parent got: child saw: ran ls"
    assert ran == ["ls"]


async def test_a_grant_made_in_the_parent_does_not_cover_the_childs_call(client: Client) -> None:
    ran: list[str] = []
    queue = f"tq-{uuid.uuid4()}"
    with ScriptedModelServer(script([command("call_c1")], parent_first=[command("call_a")])) as model:
        async with running_worker(client, queue, model, agents(ran)):
            handle = await start_run(client, queue, agent="lead")
            (own,) = await top_pending(handle)
            assert (own["call_id"], own["path"]) == ("call_a", [])
            await handle.execute_update(
                "submit_tool_approval", {"call_id": "call_a", "approved": True, "grant": {"match": "tool"}}
            )
            (child_call,) = await top_pending(handle)
            assert (child_call["call_id"], child_call["path"]) == ("call_c1", [f"{handle.id}--call_p1"])
            assert ran == ["parent:ls"]
            await handle.execute_update(
                "submit_tool_approval",
                {"call_id": "call_c1", "approved": True, "workflow_id": child_call["workflow_id"]},
            )
            await handle.result()
    assert ran == ["parent:ls", "ls"]


async def test_the_workers_policy_file_gates_a_childs_tool_the_parent_does_not_have(client: Client) -> None:
    ran: list[str] = []
    queue = f"tq-{uuid.uuid4()}"
    lookup = ToolCall(id="call_c1", name="lookup", arguments=json.dumps({"topic": "logs"}))
    book = PolicyBook.parse({"lookup": {"always": True}})
    with ScriptedModelServer(script([lookup])) as model:
        async with running_worker(client, queue, model, agents(ran), policies=book):
            handle = await start_run(client, queue, agent="lead")
            (waiting,) = await top_pending(handle)
            assert waiting["name"] == "lookup" and ran == []
            await handle.signal(
                "tool_approval", {"call_id": "*", "approved": True, "workflow_id": waiting["workflow_id"]}
            )
            result = await handle.result()
    assert ran == ["lookup:logs"]
    assert result.text == "parent got: child saw: found logs"


async def test_an_ungated_child_tool_the_parent_does_not_gate_runs_at_once(client: Client) -> None:
    ran: list[str] = []
    queue = f"tq-{uuid.uuid4()}"
    with ScriptedModelServer(script([command("call_c1")])) as model:
        async with running_worker(client, queue, model, agents(ran, parent_gated=False)):
            handle = await start_run(client, queue, agent="lead")
            result = await handle.result()
    assert ran == ["ls"] and result.text == "parent got: child saw: ran ls"


def looper(max_depth: int) -> dict[str, ChatClientAgent]:
    agent = AgentBuilder("looper").with_sub_agent("delegate", "looper", max_depth=max_depth).build()
    return {"looper": agent}


def delegating(request: ScriptedRequest) -> Reply:
    if request.last.role == "tool":
        return Reply.text(f"[{request.last.content}]")
    return Reply.tool_calls([ToolCall(id="call_d", name="delegate", arguments=json.dumps({"task": "deeper"}))])


async def test_delegation_past_max_depth_is_refused_with_a_clear_message(client: Client) -> None:
    queue = f"tq-{uuid.uuid4()}"
    with ScriptedModelServer(delegating) as model:
        async with running_worker(client, queue, model, looper(2)):
            handle = await start_run(client, queue, agent="looper")
            result = await handle.result()
            grandchild = await client.get_workflow_handle(f"{handle.id}--call_d--call_d").describe()
    assert grandchild.status is not None and grandchild.status.name == "COMPLETED"
    assert result.text is not None and result.text.startswith("[[[Error: delegate was not started")
    assert "at most 2 deep" in result.text
    assert model.request_count == 6  # three runs, two turns each: nothing deeper was started


async def test_a_grandchilds_waiting_call_is_listed_at_the_top_with_its_path_and_decided_there(
    client: Client,
) -> None:
    ran: list[str] = []

    @tool(name="run_command", approval=ApprovalPolicy())
    def command_tool(command: str) -> str:
        """Run a shell command."""
        ran.append(command)
        return f"ran {command}"

    leaf = AgentBuilder("leaf").with_instructions("leaf").with_tool(command_tool).build()
    middle = AgentBuilder("middle").with_instructions("middle").with_sub_agent("dig", leaf).build()
    top = AgentBuilder("top").with_instructions("top").with_sub_agent("ask", middle).build()

    def answer(request: ScriptedRequest) -> Reply:
        name = role(request)
        if request.last.role == "tool":
            return Reply.text(f"{name}({request.last.content})")
        delegate = {"top": "ask", "middle": "dig"}.get(name)
        if delegate:
            return Reply.tool_calls([ToolCall(id=f"call_{name}", name=delegate, arguments='{"task": "x"}')])
        return Reply.tool_calls([command("call_leaf")])

    queue = f"tq-{uuid.uuid4()}"
    with ScriptedModelServer(answer) as model:
        async with running_worker(client, queue, model, {"top": top}):
            handle = await start_run(client, queue, agent="top")
            (waiting,) = await top_pending(handle)
            middle_id = f"{handle.id}--call_top"
            leaf_id = f"{middle_id}--call_middle"
            assert (waiting["workflow_id"], waiting["path"]) == (leaf_id, [middle_id, leaf_id])
            (in_middle,) = await client.get_workflow_handle(middle_id).query("pending_approvals")
            assert in_middle["path"] == [leaf_id]
            await handle.execute_update(
                "submit_tool_approval", {"call_id": "call_leaf", "approved": True, "workflow_id": leaf_id}
            )
            result = await handle.result()
    assert ran == ["ls"]
    assert result.text == "top(middle(leaf(ran ls)))"


# --- in process ------------------------------------------------------------------------------


def in_process(model: ScriptedModelServer, ran: list[str], *, parent_gated: bool) -> ChatClientAgent:
    from signoff.chat.config import LLMConfig
    from signoff.chat.openai import OpenAIChatClient

    client = OpenAIChatClient(LLMConfig(base_url=model.base_url, model="scripted"))
    lead = agents(ran, parent_gated=parent_gated)["lead"]
    for delegate in lead.tools:
        if getattr(delegate, "kind", "") == "sub_agent":
            delegate.agent.chat_client = client  # type: ignore[attr-defined]
    lead.chat_client = client
    return lead


async def final_text(agent: ChatClientAgent) -> str:
    from signoff.agent.session import AgentSession

    session = AgentSession()
    async for _ in agent.run("go", session):
        pass
    return session.messages[-1].content or ""


async def parked(agent: ChatClientAgent, session: Any, messages: Any = "go", decisions: Any = ()) -> list[Any]:
    """One in-process `run()`: it must finish awaiting approval; the requests it yielded."""
    from signoff.agent.session import AgentRunOptions

    options = AgentRunOptions(tool_approval_responses=list(decisions))
    events = [e async for e in agent.run(messages, session, options)]
    assert events[-1].type == "finish" and events[-1].reason is FinishReason.AWAITING_APPROVAL, events[-1]
    return [e.request for e in events if e.type == "approval_request"]


async def resumed(agent: ChatClientAgent, session: Any, decisions: Any) -> str:
    from signoff.agent.session import AgentRunOptions

    options = AgentRunOptions(tool_approval_responses=list(decisions))
    events = [e async for e in agent.run([], session, options)]
    assert events[-1].type == "finish" and events[-1].reason is FinishReason.STOP, events[-1]
    return session.messages[-1].content or ""


async def test_in_process_a_sub_agent_runs_inline_and_its_answer_is_the_result() -> None:
    ran: list[str] = []
    with ScriptedModelServer(script([command("call_c1")])) as model:
        text = await final_text(in_process(model, ran, parent_gated=False))
    assert text == "parent got: child saw: ran ls" and ran == ["ls"]


async def test_in_process_a_childs_gated_call_waits_at_the_top_with_its_path_and_runs_once_approved() -> None:
    from signoff.agent.session import AgentSession
    from signoff.approval.requests import ToolApprovalResponse

    ran: list[str] = []
    session = AgentSession()
    with ScriptedModelServer(script([command("call_c1")])) as model:
        agent = in_process(model, ran, parent_gated=True)
        (request,) = await parked(agent, session)
        assert (request.call_id, request.name, request.workflow_id, request.path) == (
            "call_c1",
            "run_command",
            "lead--call_p1",
            ["lead--call_p1"],
        )
        assert ran == []  # the child's own code leaves run_command ungated: the parent's policy gates it
        assert [p.workflow_id for p in session.pending] == ["lead--call_p1"] and list(session.children) == [
            "lead--call_p1"
        ]
        approve = ToolApprovalResponse.approve("call_c1", workflow_id=request.workflow_id, approver="alice")
        text = await resumed(agent, session, [approve])
        parent_turns = [r for r in model.requests if role(r) == "parent"]
    assert text == "parent got: child saw: ran ls" and ran == ["ls"]
    assert len(parent_turns) == 2  # the parent's model was not asked again while the child waited
    assert session.children == {} and session.pending == []


async def test_in_process_a_childs_call_denied_at_the_top_reaches_the_childs_model_as_rejected() -> None:
    from signoff.agent.session import AgentSession
    from signoff.approval.requests import ToolApprovalResponse

    ran: list[str] = []
    session = AgentSession()
    with ScriptedModelServer(script([command("call_c1"), command("call_c2", "rm -rf /")])) as model:
        agent = in_process(model, ran, parent_gated=True)
        first, second = await parked(agent, session)
        decisions = [
            ToolApprovalResponse.approve("call_c1", workflow_id=first.workflow_id),
            ToolApprovalResponse.deny("call_c2", "not that", workflow_id=second.workflow_id),
        ]
        text = await resumed(agent, session, decisions)
        child_turns = [r for r in model.requests if role(r) == "child"]
    assert ran == ["ls"]
    assert text == "parent got: child saw: ran ls|Rejected: not that"
    assert tool_texts(child_turns[-1]) == ["ran ls", "Rejected: not that"]


async def test_in_process_a_partial_decision_keeps_the_rest_waiting_and_a_stray_one_is_refused() -> None:
    import pytest

    from signoff.agent.session import AgentSession
    from signoff.approval.requests import ToolApprovalResponse
    from signoff.errors import DecisionError

    ran: list[str] = []
    session = AgentSession()
    with ScriptedModelServer(script([command("call_c1"), command("call_c2", "pwd")])) as model:
        agent = in_process(model, ran, parent_gated=True)
        await parked(agent, session)
        for stray, named in (
            (ToolApprovalResponse.approve("call_c1", workflow_id="lead--nobody"), "lead--nobody"),
            (ToolApprovalResponse.approve("call_p1"), "call_p1"),  # the delegation itself: its child waits
        ):
            with pytest.raises(DecisionError, match=named):
                await parked(agent, session, [], [stray])
        assert ran == [] and list(session.children) == ["lead--call_p1"]
        (still,) = await parked(
            agent, session, [], [ToolApprovalResponse.approve("call_c1", workflow_id="lead--call_p1")]
        )
        assert (still.call_id, still.workflow_id) == ("call_c2", "lead--call_p1") and ran == ["ls"]
        text = await resumed(agent, session, [ToolApprovalResponse.approve("call_c2", workflow_id="lead--call_p1")])
    assert ran == ["ls", "pwd"] and text == "parent got: child saw: ran ls|ran pwd"


async def test_in_process_three_children_and_a_grandchild_wait_at_the_top_and_one_batch_decides_them() -> None:
    from signoff.agent.session import AgentSession
    from signoff.approval.requests import ToolApprovalResponse
    from signoff.chat.config import LLMConfig
    from signoff.chat.openai import OpenAIChatClient

    ran: list[str] = []

    @tool(name="run_command", approval=ApprovalPolicy())
    def command_tool(command: str) -> str:
        """Run a shell command."""
        ran.append(command)
        return f"ran {command}"

    def answer(request: ScriptedRequest) -> Reply:
        name = role(request)
        if request.last.role == "tool":
            return Reply.text(f"{name}({'|'.join(tool_texts(request))})")
        if name == "top":
            tasks = [ToolCall(id=f"call_{i}", name="ask", arguments=json.dumps({"task": f"t{i}"})) for i in (1, 2, 3)]
            return Reply.tool_calls(tasks)
        if name == "middle":
            return Reply.tool_calls(
                [ToolCall(id="call_m", name="dig", arguments=json.dumps({"task": request.last.content}))]
            )
        return Reply.tool_calls([command("call_leaf", request.last.content or "")])

    with ScriptedModelServer(answer) as model:
        client = OpenAIChatClient(LLMConfig(base_url=model.base_url, model="scripted"))
        leaf = AgentBuilder("leaf").with_instructions("leaf").with_chat_client(client).with_tool(command_tool).build()
        middle = AgentBuilder("middle").with_instructions("middle").with_chat_client(client).with_sub_agent("dig", leaf)
        top = (
            AgentBuilder("top")
            .with_instructions("top")
            .with_chat_client(client)
            .with_sub_agent("ask", middle.build())
            .build()
        )
        session = AgentSession()
        waiting = await parked(top, session)
        assert [(r.call_id, r.workflow_id, r.path) for r in waiting] == [
            ("call_leaf", f"top--call_{i}--call_m", [f"top--call_{i}", f"top--call_{i}--call_m"]) for i in (1, 2, 3)
        ]
        assert ran == []
        by_task = {r.arguments["command"]: r for r in waiting}
        batch = [
            ToolApprovalResponse.approve("call_leaf", workflow_id=by_task["t1"].workflow_id),
            ToolApprovalResponse.deny("call_leaf", "no", workflow_id=by_task["t2"].workflow_id),
            ToolApprovalResponse.approve(
                "call_leaf",
                workflow_id=by_task["t3"].workflow_id,
                arguments={"command": "t3 --dry-run"},
                arguments_digest=by_task["t3"].arguments_digest,
            ),
        ]
        text = await resumed(top, session, batch)
    assert sorted(ran) == ["t1", "t3 --dry-run"]
    assert text.startswith("top(middle(leaf(ran t1))|middle(leaf(Rejected: no))|middle(leaf(ran t3 --dry-run")


async def test_in_process_cancelling_the_parent_ends_its_waiting_child_without_running_the_call() -> None:
    from signoff.agent.session import AgentRunOptions, AgentSession, CancellationToken
    from signoff.approval.requests import ToolApprovalResponse

    ran: list[str] = []
    session = AgentSession()
    with ScriptedModelServer(script([command("call_c1")])) as model:
        agent = in_process(model, ran, parent_gated=True)
        await parked(agent, session)
        token = CancellationToken()
        token.cancel()
        options = AgentRunOptions(cancellation=token)
        events = [e async for e in agent.run([], session, options)]
        assert events[-1].type == "finish" and events[-1].reason is FinishReason.CANCELLED
        assert session.children == {}
        import pytest

        from signoff.errors import DecisionError

        with pytest.raises(DecisionError):  # nothing waits any more
            await parked(agent, session, [], [ToolApprovalResponse.approve("call_c1", workflow_id="lead--call_p1")])
    assert ran == []


async def test_a_sub_agent_tool_executed_outside_a_run_fails_closed_on_a_call_that_needs_approval() -> None:
    from signoff.agent.subagent import SubAgentTool
    from signoff.chat.config import LLMConfig
    from signoff.chat.openai import OpenAIChatClient

    ran: list[str] = []
    with ScriptedModelServer(script([command("call_c1")])) as model:
        (delegate,) = [t for t in agents(ran, child_gated=True)["lead"].tools if isinstance(t, SubAgentTool)]
        assert not isinstance(delegate.agent, str)
        delegate.agent.chat_client = OpenAIChatClient(LLMConfig(base_url=model.base_url, model="scripted"))
        result = await delegate.execute({"task": "ls"})
    assert ran == []
    assert result.content.startswith("Error: the researcher sub-agent stopped: its call of run_command needs approval")


async def test_three_children_fanned_out_wait_at_the_top_and_one_batch_decides_them_each_its_own_way(
    client: Client,
) -> None:
    ran: list[str] = []

    def answer(request: ScriptedRequest) -> Reply:
        if role(request) == "child":
            if request.last.role == "user":
                return Reply.tool_calls([command("call_c", request.last.content or "")])
            return Reply.text(tool_texts(request)[-1])
        if request.last.role == "user":
            tasks = [f"task{i}" for i in (1, 2, 3)]
            return Reply.tool_calls(
                [ToolCall(id=f"call_{t}", name="research", arguments=json.dumps({"task": t})) for t in tasks]
            )
        return Reply.text(" | ".join(tool_texts(request)))

    queue = f"tq-{uuid.uuid4()}"
    with ScriptedModelServer(answer) as model:
        async with running_worker(client, queue, model, agents(ran)):
            handle = await start_run(client, queue, agent="lead")
            pending = await top_pending(handle, 3)
            by_task = {p["arguments"]["command"]: p for p in pending}
            assert {p["workflow_id"] for p in pending} == {f"{handle.id}--call_task{i}" for i in (1, 2, 3)}
            batch = [
                {"call_id": "call_c", "approved": True, "workflow_id": by_task["task1"]["workflow_id"]},
                {
                    "call_id": "call_c",
                    "approved": False,
                    "reason": "no",
                    "workflow_id": by_task["task2"]["workflow_id"],
                },
                {
                    "call_id": "call_c",
                    "approved": True,
                    "arguments": {"command": "task3 --dry-run"},
                    "arguments_digest": by_task["task3"]["arguments_digest"],
                    "workflow_id": by_task["task3"]["workflow_id"],
                },
            ]
            ack = await handle.execute_update("submit_tool_approval", batch)
            assert ack["accepted"] == ["call_c", "call_c", "call_c"]
            result = await handle.result()
    assert sorted(ran) == ["task1", "task3 --dry-run"]
    edited = (  # the model is told who edited the call and what ran (issue 32)
        "\n[signoff: the approver edited this call's arguments before it ran; "
        'it ran with {"command": "task3 --dry-run"}]'
    )
    assert result.text == "ran task1 | Rejected: no | ran task3 --dry-run" + edited


async def test_signoff_pending_shows_a_childs_call_once_under_the_run_that_waits_with_its_path(
    client: Client,
    task_queue: str,
    cli: Cli,  # noqa: F811 - the harness's fixture
) -> None:
    ran: list[str] = []
    with ScriptedModelServer(script([command("call_c1")])) as model:
        async with running_worker(client, task_queue, model, agents(ran)):
            handle = await start_run(client, task_queue, agent="lead")
            child_id = f"{handle.id}--call_p1"
            await top_pending(handle)
            shown = await cli("pending", handle.id)
            listed = await cli("pending", "--json", handle.id)
            done = await cli("approve", child_id, "call_c1", "--approver", "alice")
            result = await handle.result()
    assert shown.code == 0, shown.err
    block = shown.out.split("\n\n")[0].splitlines()
    assert block[0].split()[:3] == [child_id, "call_c1", "run_command"]
    assert f"    path       {handle.id} \u203a {child_id} \u203a run_command" in block
    (item,) = json.loads(listed.out)
    assert (item["workflow_id"], item["top"], item["path"]) == (child_id, handle.id, [child_id])
    assert done.code == 0, done.err
    assert ran == ["ls"] and result.text == "parent got: child saw: ran ls"


# --- a worker process killed while the child waits -------------------------------------------

LEAD_MODULE = '''
"""Agents for `worker.py --agents lead_agents`: lead delegates research to researcher."""
import os
from pathlib import Path

from signoff.agent.builder import AgentBuilder
from signoff.tools import ApprovalRequiredTool, tool


@tool(name="run_command", idempotent=False)
def command(command: str) -> str:
    """Run a command."""
    with open(Path(os.environ["SIGNOFF_WORKSPACE"]) / "calls.log", "a") as f:
        f.write(command + "\\n")
    return f"ran {command}"


def agents():
    researcher = AgentBuilder("researcher").with_instructions("child").with_tool(command).build()
    lead = AgentBuilder("lead").with_instructions("parent").with_tool(ApprovalRequiredTool(command))
    return [lead.with_sub_agent("research", researcher).build()]
'''


async def test_a_worker_killed_while_the_child_waits_then_approved_at_the_top_runs_the_call_once(
    client: Client, task_queue: str, procs: Processes, tmp_path: Path
) -> None:
    (tmp_path / "lead_agents.py").write_text(LEAD_MODULE)
    with ScriptedModelServer(script([command("call_c1")])) as model:
        env = worker_env(
            client.service_client.config.target_host, task_queue, model, tmp_path, PYTHONPATH=str(tmp_path)
        )
        first = procs.worker("worker-1", env, "--agents", "lead_agents")
        await first.wait_for_output(READY)
        assert "agents: default, lead, researcher" in first.stdout()
        handle = await start_run(client, task_queue, agent="lead")
        (waiting,) = await top_pending(handle)
        first.kill()
        second = procs.worker("worker-2", env, "--agents", "lead_agents")
        await second.wait_for_output(READY)
        decision = {"call_id": "call_c1", "approved": True, "workflow_id": waiting["workflow_id"]}
        await handle.execute_update("submit_tool_approval", decision)
        result = await asyncio.wait_for(handle.result(), 60)
    assert (tmp_path / "calls.log").read_text().splitlines() == ["ls"]
    assert result.text == "parent got: child saw: ran ls"


# --- notifications ----------------------------------------------------------------------------


async def test_a_childs_notice_names_its_path_from_the_top_and_links_the_top_run(client: Client) -> None:
    from signoff.activities.notify import NotifyConfig
    from tests.receiver import Receiver

    ran: list[str] = []
    queue = f"tq-{uuid.uuid4()}"
    with Receiver() as receiver, ScriptedModelServer(script([command("call_c1")])) as model:
        notify = NotifyConfig(urls=(receiver.url,), ui_root="https://ui.example.com")
        async with running_worker(client, queue, model, agents(ran), notify=notify):
            handle = await start_run(client, queue, agent="lead")
            child_id = f"{handle.id}--call_p1"
            await top_pending(handle)

            async def requested() -> Any:
                (notice,) = [d.json for d in receiver.deliveries if d.json["event"] == "approval_requested"]
                return notice

            notice = await assert_eventually(requested, 20.0)
            await handle.cancel()
    assert (notice["workflow_id"], notice["path"]) == (child_id, [handle.id, child_id])
    assert notice["top_ui_url"] == f"https://ui.example.com/namespaces/default/workflows/{handle.id}"
    lines = notice["text"].splitlines()
    assert f"sub-agent: {handle.id} \u203a {child_id} \u203a run_command" in lines
    assert f"Top run: {notice['top_ui_url']}" in lines
    assert notice["inbox_url"] is None and notice["commands"][0].startswith(f"signoff approve {child_id} call_c1")


# --- the audit of a tree -----------------------------------------------------------------------


async def test_audit_links_each_sub_agent_call_to_its_child_and_verify_walks_the_tree(
    client: Client,
    task_queue: str,
    cli: Cli,  # noqa: F811 - the harness's fixture
) -> None:
    ran: list[str] = []
    with ScriptedModelServer(script([command("call_c1")])) as model:
        async with running_worker(client, task_queue, model, agents(ran)):
            handle = await start_run(client, task_queue, agent="lead")
            child_id = f"{handle.id}--call_p1"
            await top_pending(handle)
            await handle.execute_update(
                "submit_tool_approval",
                {"call_id": "call_c1", "approved": True, "approver": "alice", "workflow_id": child_id},
            )
            await handle.result()
    chain = (await client.get_workflow_handle(child_id).describe()).raw_description.workflow_execution_info
    shown = await cli("audit", handle.id)
    assert shown.code == 0, shown.err
    assert f"call call_p1  child {child_id}  chain {chain.first_run_id}" in shown.out.splitlines()
    verified = await cli("audit", handle.id, "--verify")
    assert verified.code == 0, verified.err
    assert "the audit trail holds: 1 record(s)" in verified.out and "of 2 workflows" in verified.out

    reused = await start_run(client, f"nobody-{uuid.uuid4()}", id=child_id)  # the child's id, a new chain
    try:
        unread = await cli("audit", handle.id, "--verify")
    finally:
        await reused.terminate()
    assert unread.code == 1, unread.out
    assert f"not verifiable: sub-agent run {handle.id} \u203a {child_id}: its chain now begins at run" in unread.out
    assert "cannot be vouched for" in unread.err
