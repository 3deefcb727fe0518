"""Auto mode and similar grants from the terminal: `signoff pending` says why auto mode escalated
and what a similar grant would cover; `signoff approve --grant similar` makes one for that pattern."""

# ruff: noqa: F811 - the harness's fixtures are imported by name and taken as parameters

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowHandle

from signoff.activities.auto import AutoSettings
from signoff.approval.identity import ApproverKeys
from signoff.approval.policy import ApprovalPolicy, AutoMode, CriteriaSet, PolicyBook
from signoff.signing.keys import SigningKey
from tests.approver_keys import signed, write_secret
from tests.cli_harness import Cli, cli, cli_environ, served  # noqa: F401
from tests.governance import wait_event
from tests.helpers import Reply, ScriptedRequest, assert_eventually, call, start_run, wait_pending


def script(request: ScriptedRequest) -> Reply:
    if "response_format" in request.raw:
        return Reply.text(json.dumps({"verdict": "escalate", "confidence": 0.9, "reasoning": "echo is new here"}))
    if request.round <= 2:
        return Reply.tool_calls([call("run_command", f"call_{request.round}", command=f"echo {request.round}")])
    return Reply.text("done")


async def test_pending_shows_why_auto_mode_escalated_and_approve_grants_similar_calls(
    client: Client, task_queue: str, tmp_path: Path, cli: Cli
) -> None:
    book = PolicyBook(
        policies={"run_command": ApprovalPolicy(auto=AutoMode(criteria="shell"))},
        criteria={"shell": CriteriaSet(approve_when=("it only reads",))},
    )
    async with served(client, task_queue, tmp_path, script, policies=book):
        handle = await start_run(client, task_queue)
        await assert_eventually(lambda: escalated(handle))
        shown = await cli("pending", handle.id)
        approved = await cli("approve", handle.id, "call_1", "--grant", "similar", "--grant-uses", "3")
        bulk = await cli("approve", handle.id, "--all", "--grant", "similar")
        result = await asyncio.wait_for(handle.result(), 60)
        grants = await cli("grants", handle.id)
    assert shown.code == 0 and "auto mode escalated: echo is new here" in shown.out, shown
    assert "run_command: echo <number>" in shown.out
    assert approved.code == 0, approved
    assert bulk.code == 2 and "--grant similar approves one call" in bulk.err
    assert result.text == "done" and result.approvals[1].grant_id == "grant_1"
    assert "calls like run_command: echo <number>" in grants.out


def approving(request: ScriptedRequest) -> Reply:
    if "response_format" in request.raw:
        return Reply.text(json.dumps({"verdict": "approve", "confidence": 0.97, "reasoning": "echo only prints"}))
    if request.round == 1:
        return Reply.tool_calls([call("run_command", "call_1", command="echo 1")])
    return Reply.text("done")


async def test_audit_verify_vouches_for_auto_modes_signed_vote_beside_a_persons(
    client: Client, task_queue: str, tmp_path: Path, cli: Cli
) -> None:
    keys = tmp_path / "approvers.key"
    write_secret(keys)
    policy = ApprovalPolicy(verified=True, quorum=2, approvers=("auto:shell", "alice"), auto=AutoMode(criteria="shell"))
    book = PolicyBook(policies={"run_command": policy}, criteria={"shell": CriteriaSet(approve_when=("it prints",))})
    worker: dict[str, Any] = {
        "policies": book,
        "verifier": ApproverKeys.load(keys),
        "auto": AutoSettings(signer=SigningKey.load(keys)),
    }
    async with served(client, task_queue, tmp_path, approving, **worker):
        handle = await start_run(client, task_queue)
        await wait_event(handle, "auto_evaluation")
        (pending,) = await wait_pending(handle)
        await handle.execute_update("submit_tool_approval", signed(keys, pending, "alice"))
        await asyncio.wait_for(handle.result(), 60)
        audited = await cli("audit", handle.id, "--verify", SIGNOFF_APPROVER_KEYS=str(keys))
    assert audited.code == 0, audited
    assert "auto:shell" in audited.out and "alice" in audited.out and "the audit trail holds" in audited.out


async def escalated(handle: WorkflowHandle[Any, Any]) -> None:
    (pending,) = await wait_pending(handle)
    assert pending.get("auto", {}).get("state") == "escalated", pending
