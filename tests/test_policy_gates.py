"""Policy configuration adds gates and never removes them (issue 15, finding 7).

A policy file entry with `"always": true` makes every call of its tool wait, whatever the
tool's code says (a custom tool that never gates, an MCP tool later); `"*": {"always": true}`
gates every tool without an entry of its own; and the tool activity applies the worker's own
configuration at execution, so a run that started before the gate was added cannot run the
call unapproved. An entry can change who decides a tool's calls, never make them less strict.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from signoff.agent.builder import AgentBuilder, ChatClientAgent
from signoff.agent.gate import snapshot_tool
from signoff.approval.policy import ApprovalPolicy, OnTimeout, PolicyBook, tightened
from signoff.errors import ConfigError
from signoff.messages import ToolCall
from signoff.tools.function import tool
from tests.governance import ops_agent, turns
from tests.helpers import ScriptedModelServer, running_worker, start_run, wait_pending, worker_settings

STATUS = "get_status"


def custom_agent(marker: Path) -> ChatClientAgent:
    """A custom tool whose code never asks for approval, and which leaves a mark when it runs."""

    @tool(name=STATUS)
    def get_status(service: str) -> str:
        """Report a service's status."""
        marker.write_text(service)
        return f"{service} is up"

    @tool(name="ping")
    def ping(host: str) -> str:
        """Ping a host."""
        return f"{host} answers"

    @tool(name="pause", approval=ApprovalPolicy())
    def pause(why: str) -> str:
        """Wait for a person."""
        return "went on"

    return AgentBuilder("custom").with_tools([get_status, ping, pause]).build()


def status(call_id: str, service: str = "db") -> ToolCall:
    return ToolCall(id=call_id, name=STATUS, arguments=json.dumps({"service": service}))


@pytest.mark.parametrize("book", [{STATUS: {"always": True}}, {"*": {"always": True}}], ids=["entry", "star"])
async def test_a_policy_file_gate_makes_an_ungated_custom_tool_wait_for_a_person(
    client: Client, task_queue: str, tmp_path: Path, book: dict[str, Any]
) -> None:
    marker = tmp_path / "ran"
    agents = {"custom": custom_agent(marker)}
    with ScriptedModelServer(turns([status("call_s")])) as model:
        async with running_worker(client, task_queue, model, agents, policies=PolicyBook.parse(book)):
            handle = await start_run(client, task_queue, agent="custom")
            (pending,) = await wait_pending(handle)
            assert not marker.exists()
            await handle.execute_update("submit_tool_approval", {"call_id": "call_s", "approved": True})
            result = await handle.result()
    assert pending["name"] == STATUS and result.text == "db is up" and marker.read_text() == "db"


async def test_the_tool_activity_applies_a_gate_added_after_the_run_started(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    """The run's snapshot says `get_status` needs nobody; the worker now serving it gates it."""
    marker = tmp_path / "ran"
    agents = {"custom": custom_agent(marker)}
    paused = ToolCall(id="call_p", name="pause", arguments=json.dumps({"why": "switch workers"}))
    script = turns([status("call_1", "db")], [paused], [status("call_2", "web")])
    with ScriptedModelServer(script) as model:
        async with running_worker(client, task_queue, model, agents, max_cached_workflows=0):
            handle = await start_run(client, task_queue, agent="custom")
            await wait_pending(handle)  # call_1 ran ungated; the run waits on `pause`
        gated = PolicyBook.parse({STATUS: {"always": True}})
        async with running_worker(client, task_queue, model, agents, policies=gated, max_cached_workflows=0):
            await handle.execute_update("submit_tool_approval", {"call_id": "call_p", "approved": True})
            result = await handle.result()
    assert marker.read_text() == "db"  # the second call did not run
    assert result.messages[-2].content is not None and "was not approved" in result.messages[-2].content


def test_a_file_entry_cannot_relax_a_policy_the_tools_code_declares() -> None:
    declared = ApprovalPolicy(
        approvers=("alice", "bob"),
        quorum=2,
        verified=True,
        separate_requester=True,
        grants=False,
        timeout_seconds=600,
        on_timeout=OnTimeout.DENY,
    )
    entry = ApprovalPolicy.model_validate(
        {"approvers": [], "quorum": 1, "verified": False, "separate_requester": False, "grants": True}
    )
    policy, problems = tightened(declared, entry)
    assert policy == declared
    assert problems == [
        "turns off verified",
        "turns off separate_requester",
        "lowers the quorum below 2",
        "allows grants the tool's own policy forbids",
        "lets anyone approve (an empty approvers list)",
    ]


def test_a_file_entry_may_change_who_decides_and_when_and_make_it_stricter() -> None:
    declared = ApprovalPolicy(approvers=("group:release",), timeout_seconds=600)
    entry = ApprovalPolicy.model_validate({"approvers": ["alice"], "quorum": 2, "timeout_seconds": 3600})
    policy, problems = tightened(declared, entry)
    assert (policy.approvers, policy.quorum, policy.timeout_seconds, problems) == (("alice",), 2, 3600, [])


def test_a_file_entry_cannot_make_a_tool_approve_itself_on_timeout() -> None:
    declared = ApprovalPolicy(timeout_seconds=600)
    entry = ApprovalPolicy.model_validate({"on_timeout": "approve"})
    policy, problems = tightened(declared, entry)
    assert policy.timeout_outcome is OnTimeout.DENY and problems == ["approves calls on timeout"]


def test_a_worker_refuses_to_start_with_an_entry_that_would_relax_a_tools_policy(tmp_path: Path) -> None:
    (tmp_path / "policies.json").write_text(json.dumps({"deploy": {"verified": False, "approvers": ["bob"]}}))
    agents = {"ops": ops_agent(deploy=ApprovalPolicy(verified=True, approvers=("alice",)))}
    env = {"SIGNOFF_POLICY_FILE": str(tmp_path / "policies.json")}
    with pytest.raises(ConfigError, match="ops/deploy turns off verified"):
        worker_settings(agents, env)


def test_an_entry_for_a_tool_that_never_gates_is_named_in_the_start_up_log(tmp_path: Path) -> None:
    (tmp_path / "policies.json").write_text(json.dumps({STATUS: {"approvers": ["alice"]}}))
    setup = worker_settings(
        {"custom": custom_agent(tmp_path / "m")}, {"SIGNOFF_POLICY_FILE": str(tmp_path / "policies.json")}
    )
    assert any(
        "policy for custom/get_status has no effect" in line and "always = true" in line for line in setup.describe()
    )


def test_always_is_a_gate_not_a_policy_field() -> None:
    book = PolicyBook.parse({"ping": {"always": True, "approvers": ["alice"]}, "*": {"always": True}})
    marker_agent = custom_agent(Path("/nonexistent"))
    tools = {t.name: snapshot_tool(t, book) for t in marker_agent.definition([]).registry}
    assert tools["ping"].gate == "always" and tools["ping"].policy == ApprovalPolicy(approvers=("alice",))
    assert tools[STATUS].gate == "always" and tools[STATUS].policy is None  # gated by "*", anyone decides
    with pytest.raises(ConfigError, match="always: must be true or false"):
        PolicyBook.parse({"ping": {"always": "yes"}})
