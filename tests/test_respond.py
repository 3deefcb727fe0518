"""Respond instead of run: a person answers a waiting call with its result, the tool never runs,
and the model reads the text; and the model is told when a call ran with edited arguments."""

# ruff: noqa: F811 - the harness's fixtures are imported by name and taken as parameters

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from temporalio.client import Client

from signoff.approval.audit import verify_chain
from signoff.approval.identity import ApproverKeys
from signoff.approval.policy import ApprovalPolicy, PolicyBook
from signoff.approval.requests import MAX_RESPOND_CHARS
from signoff.approval.requests import ToolApprovalResponse as Decision
from signoff.approval.signatures import respond_digest
from signoff.errors import DecisionError
from signoff.loop.agent_loop import RunTools
from signoff.messages import ChatMessage
from tests.approver_keys import signed, write_secret
from tests.cli_harness import Cli, cli, cli_environ, served  # noqa: F401
from tests.governance import activity_types, deploy, events_of, ops_agent, ops_run, refusal, turns, wait_event
from tests.helpers import ScriptedModelServer, running_worker, start_run, wait_pending
from tests.test_cli_signing import new_key
from tests.test_loop import NOW, call, run_ready, start

RESPOND = ApprovalPolicy(respond=True)


def test_a_respond_answers_the_call_with_the_text_and_nothing_runs() -> None:
    loop = start(call("c1", command="date"), gated=("c1",), policies={"run_command": RESPOND})
    loop.decide([Decision.responding("c1", "Thursday", approver="alice")], NOW)
    assert not isinstance(loop.next_action(), RunTools)
    assert loop.messages[-1] == ChatMessage.tool("Thursday", "c1")
    (record,) = loop.state.approvals
    assert (record.outcome, record.approved, record.approver) == ("responded", False, "alice")
    assert record.respond_digest == respond_digest("Thursday") and verify_chain(loop.state.approvals) == []


def test_a_respond_is_refused_unless_the_tools_policy_allows_it() -> None:
    loop = start(call("c1", command="date"), gated=("c1",))
    with pytest.raises(DecisionError, match=r"respond = false.*pending call ids: c1"):
        loop.decide([Decision.responding("c1", "Thursday")], NOW)
    assert loop.state.approvals == [] and loop.pending_requests()[0].call_id == "c1"


def test_one_person_cannot_respond_for_a_quorum() -> None:
    policy = ApprovalPolicy(respond=True, quorum=2)
    loop = start(call("c1", command="date"), gated=("c1",), policies={"run_command": policy})
    with pytest.raises(DecisionError, match="needs 2 approvers"):
        loop.decide([Decision.responding("c1", "Thursday", approver="alice")], NOW)


@pytest.mark.parametrize(
    ("item", "why"),
    [
        ({"call_id": "c1", "approved": True, "respond": "x"}, "it is no approval"),
        ({"call_id": "c1", "respond": "x" * (MAX_RESPOND_CHARS + 1)}, "at most 65536 characters"),
        ({"call_id": "c1", "respond": "\ud800"}, "unicode"),  # a lone surrogate could not be recorded
        ({"call_id": "c1", "respond": 7}, "valid string"),
    ],
)
def test_a_respond_that_cannot_be_an_answer_is_invalid(item: dict[str, Any], why: str) -> None:
    with pytest.raises(ValidationError, match=why):
        Decision.model_validate(item)


def test_a_respond_item_needs_no_approved_field_and_reads_as_no_approval() -> None:
    decision = Decision.model_validate({"call_id": "c1", "respond": "ok"})
    assert (decision.approved, decision.respond) == (False, "ok")
    assert "respond" not in Decision.deny("c1").model_dump()  # decisions without it dump as before


def test_a_call_run_with_edited_arguments_tells_the_model_who_edited_and_what_ran() -> None:
    loop = start(call("c1", command="rm -rf /"), gated=("c1",))
    loop.decide([Decision.approve("c1", arguments={"command": "ls"}, approver="alice")], NOW)
    run_ready(loop)
    assert loop.messages[-1].content == (
        'ran {"command": "ls"}\n[signoff: alice edited this call\'s arguments before it ran; '
        'it ran with {"command": "ls"}]'
    )


def test_a_call_run_as_asked_gets_no_note() -> None:
    loop = start(call("c1", command="ls"), gated=("c1",))
    loop.decide([Decision.approve("c1")], NOW)
    run_ready(loop)
    assert loop.messages[-1].content == 'ran {"command": "ls"}'


# --- on the dev server ------------------------------------------------------------------


def responding(policy: ApprovalPolicy = RESPOND, **options: Any) -> dict[str, Any]:
    return {"agents": {"ops": ops_agent(deploy=policy)}, **options}


async def test_a_respond_reaches_the_model_and_the_tool_never_runs(client: Client) -> None:
    async with ops_run(client, turns([deploy("call_1")]), worker=responding()) as handle:
        (pending,) = await wait_pending(handle)
        assert pending["policy"]["respond"] is True
        ack = await handle.execute_update(
            "submit_tool_approval", {"call_id": "call_1", "respond": "already deployed by hand", "approver": "alice"}
        )
        result = await handle.result()
        kinds = await activity_types(handle)
    assert ack["decided"][0]["outcome"] == "responded" and ack["pending"] == []
    assert result.text == "already deployed by hand" and "signoff.tool" not in kinds
    (record,) = result.approvals
    assert (record.outcome, record.approver, record.approved) == ("responded", "alice", False)
    assert record.respond_digest == respond_digest("already deployed by hand")


async def test_a_stranger_respond_is_refused_and_the_call_waits(client: Client) -> None:
    policy = ApprovalPolicy(respond=True, approvers=("alice",))
    async with ops_run(client, turns([deploy("call_1")]), worker=responding(policy)) as handle:
        await wait_pending(handle)
        unknown = await refusal(handle.execute_update("submit_tool_approval", {"call_id": "nope", "respond": "x"}))
        stranger = await refusal(
            handle.execute_update("submit_tool_approval", {"call_id": "call_1", "respond": "x", "approver": "mallory"})
        )
        huge = {"call_id": "call_1", "respond": "x" * (MAX_RESPOND_CHARS + 1), "approver": "alice"}
        too_long = await refusal(handle.execute_update("submit_tool_approval", huge))
        await handle.signal("tool_approval", huge)
        (ignored,) = await wait_event(handle, "decision_ignored")
        (still,) = await handle.query("pending_approvals")
        await handle.terminate()
    assert "no pending call with id 'nope'" in unknown and "pending call ids: call_1" in unknown
    assert "'mallory' is not among its approvers" in stranger
    assert "at most 65536 characters" in too_long and ignored["payload"] is None  # the text is not kept
    assert still["call_id"] == "call_1"


async def test_a_policy_without_respond_refuses_it(client: Client) -> None:
    async with ops_run(client, turns([deploy("call_1")])) as handle:
        await wait_pending(handle)
        why = await refusal(handle.execute_update("submit_tool_approval", {"call_id": "call_1", "respond": "x"}))
        await handle.terminate()
    assert "respond = false" in why


async def test_a_policy_file_can_allow_respond(client: Client) -> None:
    book = PolicyBook.parse({"deploy": {"respond": True}})
    async with ops_run(client, turns([deploy("call_1")]), worker={"policies": book}) as handle:
        await wait_pending(handle)
        await handle.signal("tool_approval", {"call_id": "call_1", "respond": "done"})
        result = await handle.result()
    assert result.text == "done" and result.approvals[0].outcome == "responded"


async def test_a_verified_respond_counts_only_signed_for_its_text(client: Client, tmp_path: Path) -> None:
    write_secret(tmp_path / "k")
    keys = tmp_path / "k"
    policy = ApprovalPolicy(respond=True, verified=True, approvers=("alice",))
    worker = responding(policy, verifier=ApproverKeys.load(keys))
    async with ops_run(client, turns([deploy("call_1")]), worker=worker) as handle:
        (pending,) = await wait_pending(handle)
        plain = await refusal(handle.execute_update("submit_tool_approval", {"call_id": "call_1", "respond": "x"}))
        other = signed(keys, pending, "alice", approved=False, respond="something else")
        swapped = await refusal(handle.execute_update("submit_tool_approval", {**other, "respond": "the answer"}))
        approval = signed(keys, pending, "alice")
        as_respond = {k: v for k, v in approval.items() if k != "approved"} | {"respond": "the answer"}
        not_respond = await refusal(handle.execute_update("submit_tool_approval", as_respond))
        good = signed(keys, pending, "alice", approved=False, respond="the answer")
        await handle.execute_update("submit_tool_approval", good)
        result = await handle.result()
        kinds = await activity_types(handle)
    assert "needs a verified approver" in plain
    assert "respond_digest" in swapped and "respond_digest" in not_respond
    assert result.text == "the answer" and "signoff.tool" not in kinds
    assert (result.approvals[0].outcome, result.approvals[0].verified) == ("responded", True)


async def test_the_model_is_told_when_a_call_ran_with_edited_arguments(client: Client) -> None:
    async with ops_run(client, turns([deploy("call_1")])) as handle:
        await wait_pending(handle)
        edit = {"call_id": "call_1", "approved": True, "arguments": {"target": "canary"}, "approver": "alice"}
        await handle.execute_update("submit_tool_approval", edit)
        result = await handle.result()
        events = await events_of(handle, "tool_result")
    told = (
        "deployed canary\n[signoff: alice edited this call's arguments before it ran; "
        f"it ran with {json.dumps({'target': 'canary'})}]"
    )
    assert result.text == told and events[0]["content"] == told


async def test_sign_respond_prints_a_signed_answer_the_run_takes_and_refuses_what_cannot_be_one(
    client: Client, task_queue: str, tmp_path: Path, cli: Cli
) -> None:
    alice = await new_key(cli, tmp_path, "alice")
    policy = ApprovalPolicy(respond=True, verified=True, approvers=("alice",))
    policies = PolicyBook(policies={"run_command": policy})
    keys = ApproverKeys.load(tmp_path / "jwks.json")
    async with served(client, task_queue, tmp_path, verifier=keys, policies=policies):
        handle = await start_run(client, task_queue)
        await wait_pending(handle)
        mixed = await cli("sign", handle.id, "call_1", "--respond", "x", "--deny", **alice)
        huge = await cli("sign", handle.id, "call_1", "--respond", "x" * (MAX_RESPOND_CHARS + 1), **alice)
        done = await cli("sign", handle.id, "call_1", "--respond", "the logs were empty", **alice)
        answer = json.loads(done.out)
        await handle.execute_update("submit_tool_approval", answer)
        result = await handle.result()
    assert mixed.code == 2 and "not with --deny" in mixed.err and huge.code == 2 and "65536" in huge.err
    assert done.code == 0 and answer["respond"] == "the logs were empty" and answer["approved"] is False
    assert result.text == "saw: the logs were empty" and result.approvals[0].outcome == "responded"


# --- which kinds of answer a tool takes (`decisions`) -------------------------------------


def test_a_policy_may_restrict_the_kinds_of_answer_its_calls_take() -> None:
    strict = ApprovalPolicy(decisions=("approve", "deny"))
    loop = start(call("c1", command="rm -rf /"), gated=("c1",), policies={"run_command": strict})
    with pytest.raises(DecisionError, match=r"takes no 'edit' answer \(decisions: approve, deny\)"):
        loop.decide([Decision.approve("c1", arguments={"command": "ls"})], NOW)
    listed = ApprovalPolicy(decisions=("respond",))
    assert listed.allows("respond") and not listed.allows("approve") and not ApprovalPolicy().allows("respond")
    assert "decisions" not in ApprovalPolicy().model_dump()  # policies without it keep their digests


def test_configuration_takes_kinds_of_answer_away_never_adds_them() -> None:
    declared = ApprovalPolicy(decisions=("approve", "deny"))
    book = PolicyBook.parse({"run_command": {"decisions": ["approve", "edit", "respond"]}})
    assert book.for_tool("run_command", declared).decisions == ("approve",)


async def test_the_tool_activity_refuses_edited_arguments_its_own_policy_does_not_take(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    agents = {"ops": ops_agent()}
    with ScriptedModelServer(turns([deploy("call_1")])) as model:
        async with running_worker(client, task_queue, model, agents):
            handle = await start_run(client, task_queue, agent="ops")
            await wait_pending(handle)
        edit = {"call_id": "call_1", "approved": True, "arguments": {"target": "prod"}}
        await handle.signal("tool_approval", edit)  # taken by the run's policy, which allows edits
        strict = PolicyBook.parse({"deploy": {"decisions": ["approve", "deny"]}})
        async with running_worker(client, task_queue, model, agents, policies=strict):
            result = await handle.result()
    assert "takes no edited arguments" in (result.text or "") and "deployed prod" not in (result.text or "")
