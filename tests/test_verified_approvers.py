"""Verified approvers on the real dev server, through the plain `temporal` CLI (JSON in, JSON out)
as well as Python: signed decisions (bound tokens), allow-lists, quorum, separation of duties,
the start input, and a run that outlives a rotation of the worker's keys."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle

from signoff.approval.identity import ApproverKeys, issue_token
from signoff.approval.policy import ApprovalPolicy
from signoff.approval.requests import ToolApprovalResponse
from signoff.approval.signatures import requester_claim
from signoff.contract import RunOptions
from signoff.messages import ChatMessage
from signoff.runtime.devserver import find_temporal_binary
from tests.approver_keys import signed, write_secret
from tests.governance import (
    activity_types,
    deploy,
    events_of,
    ops_agent,
    ops_run,
    refusal,
    turns,
    wait_event,
)
from tests.helpers import ScriptedModelServer, running_worker, start_run, wait_pending
from tests.test_replay import replayer

VERIFIED = ApprovalPolicy(verified=True, approvers=("alice", "group:sre"))


@pytest.fixture
def keys(tmp_path: Path) -> Path:
    write_secret(tmp_path / "approvers.key")
    return tmp_path / "approvers.key"


def token(keys: Path, subject: str, *groups: str) -> str:
    """A plain identity token (no `signoff` claim): what v2 sent."""
    return issue_token(keys, subject, groups)


def requester(keys: Path, workflow_id: str, subject: str, *groups: str) -> str:
    """A requester token bound to the workflow id the starter chose."""
    return issue_token(keys, subject, groups, signs=requester_claim(workflow_id))


def worker(keys: Path, policy: ApprovalPolicy = VERIFIED, **options: Any) -> dict[str, Any]:
    return {"agents": {"ops": ops_agent(deploy=policy)}, "verifier": ApproverKeys.load(keys), **options}


async def temporal(client: Client, *args: str) -> tuple[int, str]:
    """Run the plain `temporal` CLI against the test server; its exit code and output."""
    address = client.service_client.config.target_host
    process = await asyncio.create_subprocess_exec(
        str(find_temporal_binary()),
        *args,
        "--address",
        address,
        "--namespace",
        client.namespace,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await asyncio.wait_for(process.communicate(), timeout=60)
    return process.returncode or 0, output.decode()


async def cli_update(client: Client, handle: WorkflowHandle[Any, Any], decision: dict[str, Any]) -> tuple[int, str]:
    """`temporal workflow update execute ... --input '<json>'`, as an operator types it."""
    return await temporal(
        client,
        "workflow",
        "update",
        "execute",
        "--workflow-id",
        handle.id,
        "--output",
        "json",
        "--name",
        "submit_tool_approval",
        "--input",
        json.dumps(decision),
    )


async def cli_signal(client: Client, handle: WorkflowHandle[Any, Any], decision: dict[str, Any]) -> tuple[int, str]:
    """`temporal workflow signal ... --input '<json>'`."""
    return await temporal(
        client,
        "workflow",
        "signal",
        "--workflow-id",
        handle.id,
        "--name",
        "tool_approval",
        "--input",
        json.dumps(decision),
    )


async def test_an_unverified_approval_is_refused_by_update_ignored_by_signal_and_the_call_waits(
    client: Client, keys: Path
) -> None:
    plain = {"call_id": "call_d", "approved": True, "approver": "alice"}
    async with ops_run(client, turns([deploy("call_d")]), worker=worker(keys)) as handle:
        await wait_pending(handle)
        code, output = await cli_update(client, handle, plain)
        assert code != 0 and "needs a verified approver" in output
        code, _ = await cli_signal(client, handle, plain)
        (ignored,) = await wait_event(handle, "decision_ignored")
        (still,) = await handle.query("pending_approvals")
        await handle.terminate()
    assert code == 0 and "needs a verified approver" in ignored["reason"] and still["call_id"] == "call_d"
    assert "token" not in json.dumps(ignored["payload"])


async def test_a_signed_decision_from_an_allowed_subject_or_group_approves_through_the_plain_cli(
    client: Client, keys: Path
) -> None:
    script = turns([deploy("call_1"), deploy("call_2", "api")])
    async with ops_run(client, script, worker=worker(keys)) as handle:
        first, second = await wait_pending(handle, 2)
        code, output = await cli_update(client, handle, signed(keys, first, "alice"))
        assert code == 0 and json.loads(output)["result"]["accepted"] == ["call_1"], output
        code, _ = await cli_signal(client, handle, signed(keys, second, "carol", "sre"))
        result = await handle.result()
    assert code == 0 and result.text == "deployed web|deployed api"
    assert [(a.approver, a.verified) for a in result.approvals] == [("alice", True), ("carol", True)]


async def test_tokens_that_prove_the_wrong_thing_are_refused(client: Client, keys: Path, tmp_path: Path) -> None:
    write_secret(tmp_path / "other.key")
    async with ops_run(client, turns([deploy("call_d")]), worker=worker(keys)) as handle:
        (pending,) = await wait_pending(handle)
        outsider = signed(keys, pending, "mallory", "dev")
        forged = signed(tmp_path / "other.key", pending, "alice")
        claimed = signed(keys, pending, "carol", "sre") | {"approver": "alice"}
        plain = {"call_id": "call_d", "approved": True, "token": token(keys, "alice")}
        denial = signed(keys, pending, "alice", approved=False) | {"approved": True}
        decisions = (outsider, forged, claimed, plain, denial)
        reasons = [await refusal(handle.execute_update("submit_tool_approval", d)) for d in decisions]
        await cli_signal(client, handle, outsider)
        (ignored,) = await wait_event(handle, "decision_ignored")
        (still,) = await handle.query("pending_approvals")
        await handle.terminate()
    assert "'mallory' is not among its approvers (alice, group:sre)" in reasons[0]
    assert "approver token rejected" in reasons[1] and "signature does not match" in reasons[1]
    assert "approver 'alice' does not match the token's subject 'carol'" in reasons[2]
    assert "plain identity token" in reasons[3] and "signoff approve RUN CALL" in reasons[3]
    assert "signed for another decision: its approved is False, not True" in reasons[4]
    assert "'mallory' is not among its approvers" in ignored["reason"] and still["votes"] == []


async def test_quorum_two_needs_two_distinct_verified_subjects(client: Client, keys: Path) -> None:
    policy = ApprovalPolicy(verified=True, approvers=("group:sre",), quorum=2)
    async with ops_run(client, turns([deploy("call_d")]), worker=worker(keys, policy)) as handle:
        (pending,) = await wait_pending(handle)
        alice = signed(keys, pending, "alice", "sre")
        code, output = await cli_update(client, handle, alice)
        assert code == 0 and json.loads(output)["result"]["decided"][0]["outcome"] == "vote", output
        twice = await refusal(handle.execute_update("submit_tool_approval", alice))
        spelled = await refusal(handle.execute_update("submit_tool_approval", signed(keys, pending, "ALICE", "sre")))
        await cli_signal(client, handle, alice)
        await wait_event(handle, "decision_ignored")
        (waiting,) = await handle.query("pending_approvals")
        await handle.execute_update("submit_tool_approval", signed(keys, pending, "bob", "sre"))
        result = await handle.result()
    assert "'alice' already approved call 'call_d'; 1 more approval(s) needed" in twice
    assert "'ALICE' already approved call 'call_d'" in spelled
    assert [v["approver"] for v in waiting["votes"]] == ["alice"]
    assert [(v.approver, v.verified) for v in result.approvals[0].votes] == [("alice", True), ("bob", True)]


async def test_a_requester_token_names_the_requester_who_then_may_not_decide(client: Client, keys: Path) -> None:
    policy = ApprovalPolicy(verified=True, approvers=("group:sre",), separate_requester=True)
    run_id = f"requested-{uuid.uuid4()}"
    options = RunOptions(requester_token=requester(keys, run_id, "alice", "sre"))
    start = {"options": options, "id": run_id}
    async with ops_run(client, turns([deploy("call_d")]), worker=worker(keys, policy), **start) as handle:
        (pending,) = await wait_pending(handle)
        status = await handle.query("status")
        own = await refusal(handle.execute_update("submit_tool_approval", signed(keys, pending, "Alice", "sre")))
        await handle.execute_update("submit_tool_approval", signed(keys, pending, "bob", "sre"))
        result = await handle.result()
    assert status["requested_by"] == "alice"
    assert "'alice' requested this run and may not decide its calls (separate_requester)" in own
    assert result.approvals[0].approver == "bob"


@pytest.mark.parametrize("requester_token", ["none", "plain", "another-run"])
async def test_separate_requester_under_a_verified_policy_needs_a_requester_token_bound_to_the_run(
    client: Client, keys: Path, requester_token: str
) -> None:
    policy = ApprovalPolicy(verified=True, approvers=("group:sre",), separate_requester=True)
    tokens = {"none": None, "plain": token(keys, "alice"), "another-run": requester(keys, "other-run", "alice")}
    options = RunOptions(requested_by="alice", requester_token=tokens[requester_token])
    start = {"options": options, "id": f"requested-{uuid.uuid4()}"}
    async with ops_run(client, turns([deploy("call_d")]), worker=worker(keys, policy), **start) as handle:
        with pytest.raises(WorkflowFailureError) as failure:
            await handle.result()
        scheduled = await activity_types(handle)
    cause = failure.value.cause
    assert cause.type == "InvalidInput"  # type: ignore[attr-defined]
    wanted = {
        "none": "needs a verified requester_token",
        "plain": "requester_token bound to this workflow id",
        "another-run": "signed for another requester: its workflow_id is 'other-run'",
    }
    assert wanted[requester_token] in str(cause)
    # The token of another run fails at once; the others once the snapshot shows the policy, before the model.
    assert scheduled == ([] if requester_token == "another-run" else ["signoff.chat"])


async def test_a_requester_token_for_someone_else_fails_the_start(client: Client, keys: Path) -> None:
    options = RunOptions(requested_by="root", requester_token=token(keys, "alice"))
    async with ops_run(client, turns([deploy("call_d")]), worker=worker(keys), options=options) as handle:
        with pytest.raises(WorkflowFailureError) as failure:
            await handle.result()
    assert "requester 'root' does not match the token's subject 'alice'" in str(failure.value.cause)


def resumed(requester: dict[str, Any]) -> dict[str, Any]:
    """A start from a transcript whose open call the starter approves in the input."""
    transcript = [ChatMessage.user("deploy"), ChatMessage.assistant(None, [deploy("call_d")])]
    options = RunOptions(tool_approval_responses=[ToolApprovalResponse.approve("call_d")], **requester)
    return {"prompt": None, "messages": transcript, "options": options}


async def test_a_start_cannot_pre_approve_what_its_starter_may_not(client: Client, keys: Path) -> None:
    async with ops_run(client, turns(), worker=worker(keys), **resumed({"requested_by": "alice"})) as handle:
        (pending,) = await wait_pending(handle)
        (ignored,) = await events_of(handle, "decision_ignored")
        await handle.terminate()
    assert pending["call_id"] == "call_d"
    assert ignored["reason"].startswith("tool_approval_responses:") and "needs a verified approver" in ignored["reason"]


async def test_a_start_cannot_sign_its_decisions_so_a_verified_call_waits_for_a_signed_one(
    client: Client, keys: Path
) -> None:
    """A signed decision names the run's chain, which has no id before the start: even a
    verified starter's `tool_approval_responses` cannot approve under a verified policy."""
    start = resumed({"requester_token": token(keys, "alice")})
    async with ops_run(client, turns(), worker=worker(keys), **start) as handle:
        (pending,) = await wait_pending(handle)
        (ignored,) = await events_of(handle, "decision_ignored")
        await handle.execute_update("submit_tool_approval", signed(keys, pending, "alice"))
        result = await handle.result()
    assert "plain identity token" in ignored["reason"]
    assert result.text == "deployed web" and (result.approvals[0].approver, result.approvals[0].verified) == (
        "alice",
        True,
    )


async def test_a_run_approved_under_old_keys_goes_on_under_new_ones(
    client: Client, keys: Path, tmp_path: Path, task_queue: str
) -> None:
    """Verifications are recorded: a worker with other keys replays every step to the same outcome."""
    rotated = tmp_path / "rotated.key"
    write_secret(rotated)
    agents = {"ops": ops_agent(deploy=VERIFIED)}
    with ScriptedModelServer(turns([deploy("call_1")], [deploy("call_2", "api")])) as model:
        async with running_worker(
            client, task_queue, model, agents, verifier=ApproverKeys.load(keys), max_cached_workflows=0
        ):
            handle = await start_run(client, task_queue, agent="ops")
            (first,) = await wait_pending(handle)
            await handle.execute_update("submit_tool_approval", signed(keys, first, "alice"))
            await wait_event(handle, "approval_request", 2)
        async with running_worker(
            client, task_queue, model, agents, verifier=ApproverKeys.load(rotated), max_cached_workflows=0
        ):
            (second,) = await wait_pending(handle)
            stale = await refusal(handle.execute_update("submit_tool_approval", signed(keys, second, "alice")))
            await handle.execute_update("submit_tool_approval", signed(rotated, second, "alice"))
            result = await handle.result()
    assert "approver token rejected" in stale
    assert result.text == "deployed web|deployed api"
    assert [(a.approver, a.verified) for a in result.approvals] == [("alice", True), ("alice", True)]
    await replayer().replay_workflow(await handle.fetch_history())  # and replay needs no keys at all


async def test_a_signed_decision_is_verified_by_the_validator_so_a_forged_one_leaves_no_trace(
    client: Client, keys: Path, tmp_path: Path
) -> None:
    """A bound token is checked in the update's validator (no local activity, nothing recorded
    when it fails); a good one is read from the token by the handler, also when replayed."""
    write_secret(tmp_path / "other.key")
    async with ops_run(client, turns([deploy("call_d")]), worker=worker(keys)) as handle:
        (pending,) = await wait_pending(handle)
        refused = await refusal(
            handle.execute_update("submit_tool_approval", signed(tmp_path / "other.key", pending, "alice"))
        )
        await handle.execute_update("submit_tool_approval", signed(keys, pending, "alice"))
        result = await handle.result()
        history = await handle.fetch_history()
    kinds = [e.WhichOneof("attributes") for e in history.events]
    assert "approver token rejected" in refused and "signature does not match" in refused
    assert kinds.count("workflow_execution_update_accepted_event_attributes") == 1
    markers = [
        e.marker_recorded_event_attributes.marker_name
        for e in history.events
        if e.HasField("marker_recorded_event_attributes")
    ]
    assert "core_local_activity" not in markers  # no identify local activity (a patch's marker is no activity)
    assert (result.approvals[0].approver, result.approvals[0].verified) == ("alice", True)
    await replayer().replay_workflow(history)
