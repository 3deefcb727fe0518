"""Verified approvers on the real dev server, through the plain `temporal` CLI (JSON in, JSON out)
as well as Python: tokens, allow-lists, quorum, separation of duties, the start input,
and a run that outlives a rotation of the worker's keys."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle

from signoff.approvals import ToolApprovalResponse
from signoff.contract import RunOptions
from signoff.identity import ApproverKeys, issue_token
from signoff.messages import ChatMessage
from signoff.policy import ApprovalPolicy
from signoff.runtime.devserver import find_temporal_binary
from tests.approver_keys import write_secret
from tests.governance import (
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
    return issue_token(keys, subject, groups)


def worker(keys: Path, policy: ApprovalPolicy = VERIFIED, **options: Any) -> dict[str, Any]:
    return {"agents": {"ops": ops_agent(deploy=policy)}, "verifier": ApproverKeys.load(keys), **options}


async def temporal(client: Client, *args: str) -> tuple[int, str]:
    """Run the plain `temporal` CLI against the test server; its exit code and output."""
    address = client.service_client.config.target_host
    process = await asyncio.create_subprocess_exec(
        str(find_temporal_binary()), *args, "--address", address, "--namespace", client.namespace,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    output, _ = await asyncio.wait_for(process.communicate(), timeout=60)
    return process.returncode or 0, output.decode()


async def cli_update(client: Client, handle: WorkflowHandle[Any, Any], decision: dict[str, Any]) -> tuple[int, str]:
    """`temporal workflow update execute ... --input '<json>'`, as an operator types it."""
    return await temporal(client, "workflow", "update", "execute", "--workflow-id", handle.id, "--output",
                          "json", "--name", "submit_tool_approval", "--input", json.dumps(decision))  # fmt: skip


async def cli_signal(client: Client, handle: WorkflowHandle[Any, Any], decision: dict[str, Any]) -> tuple[int, str]:
    """`temporal workflow signal ... --input '<json>'`."""
    return await temporal(client, "workflow", "signal", "--workflow-id", handle.id,
                          "--name", "tool_approval", "--input", json.dumps(decision))  # fmt: skip


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


async def test_a_valid_token_from_an_allowed_subject_or_group_approves_through_the_plain_cli(
    client: Client, keys: Path
) -> None:
    script = turns([deploy("call_1"), deploy("call_2", "api")])
    async with ops_run(client, script, worker=worker(keys)) as handle:
        await wait_pending(handle, 2)
        code, output = await cli_update(client, handle, approval("call_1", token(keys, "alice")))
        assert code == 0 and json.loads(output)["result"]["accepted"] == ["call_1"], output
        by_group = {"call_id": "call_2", "approved": True, "token": token(keys, "carol", "sre")}
        code, _ = await cli_signal(client, handle, by_group)
        result = await handle.result()
    assert code == 0 and result.text == "deployed web|deployed api"
    assert [(a.approver, a.verified) for a in result.approvals] == [("alice", True), ("carol", True)]


async def test_tokens_that_prove_the_wrong_thing_are_refused(client: Client, keys: Path, tmp_path: Path) -> None:
    write_secret(tmp_path / "other.key")
    async with ops_run(client, turns([deploy("call_d")]), worker=worker(keys)) as handle:
        await wait_pending(handle)
        outsider = {"call_id": "call_d", "approved": True, "token": token(keys, "mallory", "dev")}
        forged = {"call_id": "call_d", "approved": True, "token": token(tmp_path / "other.key", "alice")}
        claimed = {"call_id": "call_d", "approved": True, "token": token(keys, "carol", "sre"), "approver": "alice"}
        reasons = [await refusal(handle.execute_update("submit_tool_approval", d)) for d in (outsider, forged, claimed)]
        await cli_signal(client, handle, outsider)
        (ignored,) = await wait_event(handle, "decision_ignored")
        (still,) = await handle.query("pending_approvals")
        await handle.terminate()
    assert "'mallory' is not among its approvers (alice, group:sre)" in reasons[0]
    assert "approver token rejected" in reasons[1] and "signature does not match" in reasons[1]
    assert "approver 'alice' does not match the token's subject 'carol'" in reasons[2]
    assert "'mallory' is not among its approvers" in ignored["reason"] and still["votes"] == []


async def test_quorum_two_needs_two_distinct_verified_subjects(client: Client, keys: Path) -> None:
    policy = ApprovalPolicy(verified=True, approvers=("group:sre",), quorum=2)
    async with ops_run(client, turns([deploy("call_d")]), worker=worker(keys, policy)) as handle:
        await wait_pending(handle)
        alice = {"call_id": "call_d", "approved": True, "token": token(keys, "alice", "sre")}
        code, output = await cli_update(client, handle, alice)
        assert code == 0 and json.loads(output)["result"]["decided"][0]["outcome"] == "vote", output
        twice = await refusal(handle.execute_update("submit_tool_approval", alice))
        await cli_signal(client, handle, alice)
        await wait_event(handle, "decision_ignored")
        (waiting,) = await handle.query("pending_approvals")
        await handle.execute_update(
            "submit_tool_approval", {"call_id": "call_d", "approved": True, "token": token(keys, "bob", "sre")}
        )
        result = await handle.result()
    assert "'alice' already approved call 'call_d'; 1 more approval(s) needed" in twice
    assert [v["approver"] for v in waiting["votes"]] == ["alice"]
    assert [(v.approver, v.verified) for v in result.approvals[0].votes] == [("alice", True), ("bob", True)]


async def test_a_requester_token_names_the_requester_who_then_may_not_decide(client: Client, keys: Path) -> None:
    policy = ApprovalPolicy(verified=True, approvers=("group:sre",), separate_requester=True)
    options = RunOptions(requester_token=token(keys, "alice", "sre"))
    async with ops_run(client, turns([deploy("call_d")]), worker=worker(keys, policy), options=options) as handle:
        await wait_pending(handle)
        status = await handle.query("status")
        own = await refusal(handle.execute_update(
            "submit_tool_approval", {"call_id": "call_d", "approved": True, "token": token(keys, "alice", "sre")}
        ))  # fmt: skip
        await handle.execute_update(
            "submit_tool_approval", {"call_id": "call_d", "approved": True, "token": token(keys, "bob", "sre")}
        )
        result = await handle.result()
    assert status["requested_by"] == "alice"
    assert "'alice' requested this run and may not decide its calls (separate_requester)" in own
    assert result.approvals[0].approver == "bob"


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


async def test_a_verified_starter_may_pre_approve_what_the_policy_lets_them(client: Client, keys: Path) -> None:
    start = resumed({"requester_token": token(keys, "alice")})
    async with ops_run(client, turns(), worker=worker(keys), **start) as handle:
        result = await handle.result()
    assert result.text == "deployed web" and (result.approvals[0].approver, result.approvals[0].verified) == (
        "alice", True,
    )  # fmt: skip


async def test_a_run_approved_under_old_keys_goes_on_under_new_ones(
    client: Client, keys: Path, tmp_path: Path, task_queue: str
) -> None:
    """Verifications are recorded: a worker with other keys replays every step to the same outcome."""
    rotated = tmp_path / "rotated.key"
    write_secret(rotated)
    agents = {"ops": ops_agent(deploy=VERIFIED)}
    with ScriptedModelServer(turns([deploy("call_1")], [deploy("call_2", "api")])) as model:
        async with running_worker(client, task_queue, model, agents, verifier=ApproverKeys.load(keys),
                                  max_cached_workflows=0):  # fmt: skip
            handle = await start_run(client, task_queue, agent="ops")
            await wait_pending(handle)
            await handle.execute_update("submit_tool_approval", approval("call_1", token(keys, "alice")))
            await wait_event(handle, "approval_request", 2)
        async with running_worker(client, task_queue, model, agents, verifier=ApproverKeys.load(rotated),
                                  max_cached_workflows=0):  # fmt: skip
            old_token = approval("call_2", token(keys, "alice"))
            stale = await refusal(handle.execute_update("submit_tool_approval", old_token))
            await handle.execute_update("submit_tool_approval", approval("call_2", token(rotated, "alice")))
            result = await handle.result()
    assert "approver token rejected" in stale
    assert result.text == "deployed web|deployed api"
    assert [(a.approver, a.verified) for a in result.approvals] == [("alice", True), ("alice", True)]
    await replayer().replay_workflow(await handle.fetch_history())  # and replay needs no keys at all


def approval(call_id: str, approver_token: str) -> dict[str, Any]:
    return {"call_id": call_id, "approved": True, "token": approver_token}
