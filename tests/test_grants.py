"""Grants ("approve and remember") on a real server: later matching calls run without a pause,
audited with the grant; TTL, max uses and `revoke_grant` end one; a new grant settles
matching waiting calls; and a grant never decides more than its approver could."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any
from uuid import uuid4

from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from signoff.activities.notify import NotifyConfig
from signoff.approval.digest import arguments_digest
from signoff.approval.identity import ApproverKeys
from signoff.approval.policy import ApprovalPolicy
from signoff.messages import ToolCall
from tests.approver_keys import signed, write_secret
from tests.governance import (
    deploy,
    events_of,
    ops_agent,
    ops_run,
    refusal,
    restart,
    turns,
    wait_event,
)
from tests.helpers import ScriptedModelServer, agents_for, assert_eventually, running_worker, start_run, wait_pending
from tests.receiver import Receiver


def approve(
    call_id: str, approver: str = "alice", arguments: dict[str, Any] | None = None, **grant: Any
) -> dict[str, Any]:
    decision = {"call_id": call_id, "approved": True, "approver": approver, **({"grant": grant} if grant else {})}
    return decision | ({"arguments": arguments} if arguments is not None else {})


def command(call_id: str, arguments: dict[str, Any]) -> ToolCall:
    return ToolCall(id=call_id, name="run_command", arguments=json.dumps(arguments))


async def decide(handle: WorkflowHandle[Any, Any], decision: dict[str, Any]) -> dict[str, Any]:
    ack: dict[str, Any] = await handle.execute_update("submit_tool_approval", decision)
    return ack


async def next_pending(handle: WorkflowHandle[Any, Any], call_id: str) -> dict[str, Any]:
    """The run's one waiting call, once it is `call_id`."""

    async def check() -> dict[str, Any]:
        (pending,) = await handle.query("pending_approvals")
        assert pending["call_id"] == call_id, pending
        return dict(pending)

    return await assert_eventually(check)


async def test_a_grant_approves_a_later_matching_call_without_a_pause_audited_with_its_id(client: Client) -> None:
    script = turns([deploy("call_1", "web")], [deploy("call_2", "api")])
    with Receiver() as receiver:
        async with ops_run(client, script, worker={"notify": NotifyConfig(urls=(receiver.url,))}) as handle:
            await wait_pending(handle)
            await decide(handle, approve("call_1", match="tool"))
            result = await handle.result()
            grants = await handle.query("grants")
            used = [e for e in await events_of(handle, "grant") if e["action"] == "used"]
    assert result.text == "deployed web|deployed api"
    first, second = result.approvals
    assert (second.call_id, second.grant_id, second.approver, second.approved) == ("call_2", "grant_1", "alice", True)
    assert second.decided_at == second.requested_at and first.grant_id is None  # no pause
    assert [(g["grant_id"], g["tool"], g["approver"], g["from_call"], g["arguments_digest"]) for g in grants] == [
        ("grant_1", "deploy", "alice", "call_1", None)
    ]
    assert [e["call_id"] for e in used] == ["call_2"]
    # Nobody is told of a call that never waited.
    assert sorted((d.event, d.call_id) for d in receiver.deliveries) == [
        ("approval_decided", "call_1"),
        ("approval_requested", "call_1"),
    ]


async def test_an_arguments_grant_approves_only_the_same_arguments(client: Client) -> None:
    script = turns([deploy("call_1", "web")], [deploy("call_2", "api")], [deploy("call_3", "web")])
    async with ops_run(client, script) as handle:
        await wait_pending(handle)
        await decide(handle, approve("call_1", match="arguments"))
        await next_pending(handle, "call_2")
        await decide(handle, approve("call_2", "bob"))
        result = await handle.result()
    assert [(a.call_id, a.grant_id, a.approver) for a in result.approvals] == [
        ("call_1", None, "alice"),
        ("call_2", None, "bob"),
        ("call_3", "grant_1", "alice"),
    ]


async def test_a_grant_ends_after_its_uses(client: Client) -> None:
    script = turns([deploy("call_1")], [deploy("call_2")], [deploy("call_3")])
    async with ops_run(client, script) as handle:
        await wait_pending(handle)
        await decide(handle, approve("call_1", match="tool", max_uses=1))
        await next_pending(handle, "call_3")
        (grant,) = await handle.query("grants")
        status = await handle.query("status")
        await handle.terminate()
    assert grant["uses_left"] == 0 and status["grants"] == []


async def test_a_grant_expires_after_its_ttl(skipping: WorkflowEnvironment) -> None:
    script = turns([deploy("call_1")], [deploy("call_2"), restart("call_r")], [deploy("call_3")])
    async with ops_run(skipping.client, script) as handle:
        await wait_pending(handle)
        await decide(handle, approve("call_1", match="tool", ttl_seconds=600))
        await next_pending(handle, "call_r")  # call_2 ran on the grant
        await skipping.sleep(timedelta(seconds=601))
        await decide(handle, approve("call_r"))
        await next_pending(handle, "call_3")
        status = await handle.query("status")
        await handle.terminate()
    assert status["grants"] == []


async def test_revoke_grant_ends_a_grant_at_once(client: Client) -> None:
    script = turns([deploy("call_1")], [restart("call_r")], [deploy("call_3")])
    async with ops_run(client, script) as handle:
        await wait_pending(handle)
        await decide(handle, approve("call_1", match="tool"))
        await next_pending(handle, "call_r")
        unknown = await refusal(handle.execute_update("revoke_grant", {"grant_id": "grant_9"}))
        revoked = await handle.execute_update("revoke_grant", {"grant_id": "grant_1"})
        await decide(handle, approve("call_r"))
        await next_pending(handle, "call_3")
        (event,) = [e for e in await events_of(handle, "grant") if e["action"] == "revoked"]
        await handle.terminate()
    assert "no grant with id 'grant_9' (grants: grant_1)" in unknown
    assert revoked["grant_id"] == "grant_1" and revoked["uses_left"] == 0 and event["grant"]["grant_id"] == "grant_1"


async def test_a_new_grant_settles_a_matching_call_already_waiting(client: Client) -> None:
    script = turns([deploy("call_1", "web"), deploy("call_2", "api")])
    with Receiver() as receiver:
        async with ops_run(client, script, worker={"notify": NotifyConfig(urls=(receiver.url,))}) as handle:
            await wait_pending(handle, 2)
            ack = await decide(handle, approve("call_1", match="tool"))
            result = await handle.result()
    assert (ack["accepted"], ack["pending"]) == (["call_1"], [])
    assert result.text == "deployed web|deployed api" and result.approvals[1].grant_id == "grant_1"
    (notice,) = receiver.of("approval_decided", "call_2")
    assert "approved by alice through grant grant_1" in notice.json["text"]


async def test_a_grant_never_approves_what_its_approver_could_not(skipping: WorkflowEnvironment) -> None:
    """Carol may decide `deploy` calls only once they are escalated: her grant waits for that too."""
    policy = ApprovalPolicy(approvers=("alice",), escalate_after_seconds=60, escalate_to=("carol",))
    script = turns([deploy("call_1")], [deploy("call_2")])
    async with ops_run(skipping.client, script, worker={"agents": {"ops": ops_agent(deploy=policy)}}) as handle:
        await wait_pending(handle)
        await skipping.sleep(timedelta(seconds=61))
        await wait_event(handle, "approval_escalated")
        await decide(handle, approve("call_1", "carol", match="tool"))
        pending = await next_pending(handle, "call_2")
        assert pending["votes"] == [] and not pending["escalated"]
        await decide(handle, approve("call_2", "alice"))
        result = await handle.result()
    assert [(a.call_id, a.approver, a.grant_id) for a in result.approvals] == [
        ("call_1", "carol", None),
        ("call_2", "alice", None),
    ]


async def test_a_grant_does_not_reach_another_tool(client: Client) -> None:
    agents = {"ops": ops_agent(deploy=ApprovalPolicy(approvers=("alice",)), restart=ApprovalPolicy(approvers=("bob",)))}
    script = turns([deploy("call_1")], [restart("call_r")])
    async with ops_run(client, script, worker={"agents": agents}) as handle:
        await wait_pending(handle)
        await decide(handle, approve("call_1", match="tool"))
        pending = await next_pending(handle, "call_r")
        refused = await refusal(decide(handle, approve("call_r")))
        await decide(handle, approve("call_r", "bob"))
        result = await handle.result()
    assert pending["votes"] == [] and "'alice' is not among its approvers (bob)" in refused
    assert result.approvals[1].grant_id is None


async def test_under_quorum_two_a_grant_is_one_vote(client: Client) -> None:
    agents = {"ops": ops_agent(deploy=ApprovalPolicy(quorum=2))}
    script = turns([deploy("call_1")], [deploy("call_2")])
    async with ops_run(client, script, worker={"agents": agents}) as handle:
        await wait_pending(handle)
        assert (await decide(handle, approve("call_1", "alice")))["decided"][0]["outcome"] == "vote"
        await decide(handle, approve("call_1", "bob", match="tool"))
        pending = await next_pending(handle, "call_2")
        again = await refusal(decide(handle, approve("call_2", "bob")))
        await decide(handle, approve("call_2", "alice"))
        result = await handle.result()
    assert [(v["approver"], v["grant_id"]) for v in pending["votes"]] == [("bob", "grant_1")]
    assert "'bob' already approved call 'call_2'; 1 more approval(s) needed" in again
    record = result.approvals[1]
    assert [(v.approver, v.grant_id) for v in record.votes] == [("bob", "grant_1"), ("alice", None)]
    assert result.text == "deployed web|deployed web"


async def test_a_grant_made_with_edited_arguments_covers_those_never_the_models_original(
    client: Client, tmp_path: Path
) -> None:
    """Finding 3: alice approved `touch important` only as `echo safe`, with a grant on matching
    arguments; the grant covered the original, and the model's second `touch important` ran."""
    marker = tmp_path / "important"
    risky, safe = {"command": f"touch {marker}"}, {"command": "echo safe"}
    script = turns([command("call_1", risky)], [command("call_2", risky)], [command("call_3", safe)])
    queue = f"tq-{uuid4()}"
    with ScriptedModelServer(script) as model:
        async with running_worker(client, queue, model, agents_for(tmp_path)):
            handle = await start_run(client, queue)
            await wait_pending(handle)
            edited = approve("call_1", arguments=safe) | {"grant": {"match": "arguments"}}
            await decide(handle, edited)
            waiting = await next_pending(handle, "call_2")
            assert not marker.exists()
            (grant,) = await handle.query("grants")
            await decide(handle, {"call_id": "call_2", "approved": False, "reason": "no", "approver": "alice"})
            result = await handle.result()
    assert grant["arguments_digest"] == arguments_digest(safe) != waiting["arguments_digest"]
    assert [(a.call_id, a.approved, a.grant_id) for a in result.approvals] == [
        ("call_1", True, None),
        ("call_2", False, None),
        ("call_3", True, "grant_1"),
    ]
    assert not marker.exists()


async def test_a_tool_whose_policy_says_grants_false_takes_no_grant(client: Client) -> None:
    agents = {"ops": ops_agent(deploy=ApprovalPolicy(grants=False))}
    async with ops_run(client, turns([deploy("call_1")], [deploy("call_2")]), worker={"agents": agents}) as handle:
        (pending,) = await wait_pending(handle)
        refused = await refusal(decide(handle, approve("call_1", match="tool")))
        await handle.signal("tool_approval", approve("call_1", match="tool"))
        (ignored,) = await wait_event(handle, "decision_ignored")
        await decide(handle, approve("call_1"))
        second = await next_pending(handle, "call_2")
        await handle.terminate()
    assert "takes no grants (its policy says grants = false)" in refused and "takes no grants" in ignored["reason"]
    assert pending["policy"]["grants"] is False and second["votes"] == []


async def test_a_signed_grant_lets_the_tool_activity_run_later_matching_calls(client: Client, tmp_path: Path) -> None:
    """Under a verified policy the grant is part of the signed decision, and the tool activity
    checks that token for each call the grant approves."""
    keys = tmp_path / "approvers.key"
    write_secret(keys)
    policy = ApprovalPolicy(verified=True, approvers=("alice",))
    worker = {"agents": {"ops": ops_agent(deploy=policy)}, "verifier": ApproverKeys.load(keys)}
    async with ops_run(client, turns([deploy("call_1")], [deploy("call_2", "api")]), worker=worker) as handle:
        (pending,) = await wait_pending(handle)
        unsigned = signed(keys, pending, "alice") | {"grant": {"match": "tool"}}
        refused = await refusal(decide(handle, unsigned))
        await decide(handle, signed(keys, pending, "alice", grant={"match": "tool", "ttl_seconds": 3600}))
        result = await handle.result()
    assert "signed for another decision: its grant is None" in refused
    assert result.text == "deployed web|deployed api" and result.approvals[1].grant_id == "grant_1"
