"""Unverified names are attribution, compared by what they say, not how they are spelt
(issue 15, findings 4 and 6), on the real dev server through the plain `temporal` CLI."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import jwt
import pytest
from temporalio.client import Client, WorkflowFailureError

from signoff.approval.identity import ApproverKeys, issue_token
from signoff.approval.names import name_key, name_problem
from signoff.approval.policy import ApprovalPolicy
from signoff.contract import RunOptions
from tests.approver_keys import signed, write_secret
from tests.governance import deploy, ops_agent, ops_run, refusal, turns, wait_event
from tests.helpers import wait_pending
from tests.test_verified_approvers import cli_signal, cli_update


@pytest.mark.parametrize(
    "a, b", [("Alice", "alice"), ("bob", "BOB"), ("ｅｖｅ", "eve"), ("Ada  Lovelace", "ada lovelace")]
)
def test_names_that_differ_only_in_spelling_are_one_name(a: str, b: str) -> None:
    assert name_key(a) == name_key(b)


@pytest.mark.parametrize("name", ["eve\u200b", "ali\u202ece", "bob\x1b[2J", "group:ops", "GROUP:ops", "\u2028bob"])
def test_names_with_hidden_characters_or_a_group_prefix_are_refused(name: str) -> None:
    assert name_problem("approver", name) is not None


def approve(call_id: str, approver: str) -> dict[str, Any]:
    return {"call_id": call_id, "approved": True, "approver": approver}


async def test_a_claimed_group_name_is_no_member_of_that_group(client: Client, tmp_path: Path) -> None:
    """Finding 4: `"approver": "group:ops"` satisfied a policy naming only `group:ops`. Now the
    update is rejected, the signal ignored, and the call waits (unverified groups mean nothing)."""
    policy = ApprovalPolicy(approvers=("group:ops",))
    agents = {"ops": ops_agent(deploy=policy)}
    async with ops_run(client, turns([deploy("call_d")]), worker={"agents": agents}) as handle:
        await wait_pending(handle)
        codes = [await cli_update(client, handle, approve("call_d", name)) for name in ("group:ops", "GROUP:ops")]
        signal, _ = await cli_signal(client, handle, approve("call_d", "group:ops"))
        (ignored,) = await wait_event(handle, "decision_ignored")
        anyone = await refusal(handle.execute_update("submit_tool_approval", approve("call_d", "ops")))
        (still,) = await handle.query("pending_approvals")
        await handle.terminate()
    for code, output in codes:
        assert code != 0 and "names a group, not a person" in output, output
    assert signal == 0 and "names a group, not a person" in ignored["reason"]
    assert "'ops' is not among its approvers (group:ops)" in anyone
    assert still["votes"] == []


async def test_a_token_whose_subject_is_a_group_name_is_refused(client: Client, tmp_path: Path) -> None:
    """Finding 4: a verified token with `sub: "group:sre"` counted as a member, and as a vote."""
    keys = tmp_path / "approvers.key"
    write_secret(keys)
    policy = ApprovalPolicy(verified=True, approvers=("group:sre",), quorum=2)
    worker = {"agents": {"ops": ops_agent(deploy=policy)}, "verifier": ApproverKeys.load(keys)}
    async with ops_run(client, turns([deploy("call_d")]), worker=worker) as handle:
        (pending,) = await wait_pending(handle)
        await handle.execute_update("submit_tool_approval", signed(keys, pending, "alice", "sre"))
        posing = signed(keys, pending, "alice") | {"token": _minted(keys, pending, "group:sre")}
        refused = await refusal(handle.execute_update("submit_tool_approval", posing))
        (waiting,) = await handle.query("pending_approvals")
        await handle.terminate()
    assert "approver token rejected" in refused and "names a group, not a person" in refused
    assert [v["approver"] for v in waiting["votes"]] == ["alice"]


def _minted(keys: Path, pending: dict[str, Any], subject: str) -> str:
    """A token signed with the HS256 secret by hand, as no signoff signer would make it."""
    claim = {**pending["binding"], "approved": True, "edited_arguments_digest": None, "grant": None}
    claims = {"sub": subject, "iat": int(time.time()), "exp": int(time.time()) + 600, "signoff": claim}
    return jwt.encode(claims, keys.read_text().strip(), algorithm="HS256")


@pytest.mark.parametrize("second", ["Alice", "ALICE", "ａｌｉｃｅ"])
async def test_a_quorum_counts_spelling_variants_as_one_approver(client: Client, second: str) -> None:
    """Finding 6: `alice` and `Alice` counted as two people."""
    agents = {"ops": ops_agent(deploy=ApprovalPolicy(quorum=2))}
    async with ops_run(client, turns([deploy("call_d")]), worker={"agents": agents}) as handle:
        await wait_pending(handle)
        await handle.execute_update("submit_tool_approval", approve("call_d", "alice"))
        code, output = await cli_update(client, handle, approve("call_d", second))
        await cli_signal(client, handle, approve("call_d", second))
        (ignored,) = await wait_event(handle, "decision_ignored")
        (waiting,) = await handle.query("pending_approvals")
        await handle.terminate()
    assert code != 0 and "already approved call 'call_d'" in output, output
    assert "already approved" in ignored["reason"] and len(waiting["votes"]) == 1


async def test_a_name_with_a_zero_width_space_is_refused_not_counted_as_someone_else(client: Client) -> None:
    """Finding 6: `eve` and `eve` + U+200B counted as two people."""
    agents = {"ops": ops_agent(deploy=ApprovalPolicy(quorum=2))}
    async with ops_run(client, turns([deploy("call_d")]), worker={"agents": agents}) as handle:
        await wait_pending(handle)
        await handle.execute_update("submit_tool_approval", approve("call_d", "eve"))
        code, output = await cli_update(client, handle, approve("call_d", "eve\u200b"))
        (waiting,) = await handle.query("pending_approvals")
        await handle.terminate()
    assert code != 0 and "U+200B" in output, output
    assert [v["approver"] for v in waiting["votes"]] == ["eve"]


@pytest.mark.parametrize("requested_by", [None, "bob"], ids=["omitted", "claimed"])
async def test_separate_requester_without_a_verified_requester_token_fails_the_start(
    client: Client, requested_by: str | None
) -> None:
    """Finding 6: omitting `requested_by`, or writing `Bob` for `bob`, let the requester approve
    their own call. A claimed requester proves nothing, so the run does not start."""
    agents = {"ops": ops_agent(deploy=ApprovalPolicy(separate_requester=True))}
    options = RunOptions(requested_by=requested_by)
    async with ops_run(client, turns([deploy("call_d")]), worker={"agents": agents}, options=options) as handle:
        with pytest.raises(WorkflowFailureError) as failure:
            await handle.result()
    assert failure.value.cause.type == "InvalidInput"  # type: ignore[attr-defined]
    assert "separate_requester (deploy) needs a verified requester_token" in str(failure.value.cause)


async def test_a_verified_requester_may_not_approve_their_own_call_under_another_spelling(
    client: Client, tmp_path: Path
) -> None:
    keys = tmp_path / "approvers.key"
    write_secret(keys)
    agents = {"ops": ops_agent(deploy=ApprovalPolicy(separate_requester=True))}
    worker = {"agents": agents, "verifier": ApproverKeys.load(keys)}
    options = RunOptions(requester_token=issue_token(keys, "bob"))
    async with ops_run(client, turns([deploy("call_d")]), worker=worker, options=options) as handle:
        await wait_pending(handle)
        own = await refusal(handle.execute_update("submit_tool_approval", approve("call_d", "Bob")))
        await handle.execute_update("submit_tool_approval", approve("call_d", "carol"))
        result = await handle.result()
    assert "'bob' requested this run and may not decide its calls (separate_requester)" in own
    assert result.approvals[0].approver == "carol"


def test_requested_by_with_hidden_characters_is_invalid_input() -> None:
    with pytest.raises(ValueError, match="U\\+200B"):
        RunOptions(requested_by="bob\u200b")
    assert json.loads(RunOptions(requested_by="bob").model_dump_json())["requested_by"] == "bob"


def test_the_web_ui_details_say_how_to_sign_a_verified_call() -> None:
    from signoff.approval.requests import ToolApprovalRequest
    from signoff.workflows.details import describe_pending

    plain = ToolApprovalRequest(call_id="call_1", name="deploy")
    verified = ToolApprovalRequest(call_id="call_2", name="deploy", policy=ApprovalPolicy(verified=True))
    assert "signed decision" not in describe_pending("run-1", [plain])
    assert "`signoff sign run-1 call_2` prints one to paste here" in describe_pending("run-1", [plain, verified])
