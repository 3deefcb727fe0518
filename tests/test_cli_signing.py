"""Signing from the terminal: `signoff keys new`, `signoff approve` signing with a person's key,
`signoff sign` for the Web UI (sent here with the plain `temporal` CLI, as the UI would send
it), `signoff run` as a signed requester, and `signoff extend`, against real runs."""

# ruff: noqa: F811 - the harness's fixtures are imported by name and taken as parameters

from __future__ import annotations

import asyncio
import json
import os
import stat
import uuid
from pathlib import Path

from temporalio.client import Client

from signoff.approval.identity import ApproverKeys
from signoff.approval.policy import ApprovalPolicy, PolicyBook
from tests.cli_harness import Cli, cli, cli_environ, served  # noqa: F401
from tests.helpers import start_run, wait_pending
from tests.test_verified_approvers import temporal

VERIFIED = ApprovalPolicy(approvers=("alice", "group:sre"), verified=True, timeout_seconds=600)


async def new_key(cli: Cli, folder: Path, sub: str, *flags: str) -> dict[str, str]:
    """`signoff keys new` into `folder`'s JWKS; the environment that signs with the key."""
    done = await cli(
        "keys", "new", "--sub", sub, "--out", str(folder / f"{sub}.pem"), "--add-to", str(folder / "jwks.json"), *flags
    )
    assert done.code == 0, done
    entry = json.loads(done.out)
    assert entry["sub"] == sub and "d" not in entry and f"SIGNOFF_APPROVER_KID={entry['kid']}" in done.err
    return {"SIGNOFF_APPROVER_KEY_FILE": str(folder / f"{sub}.pem"), "SIGNOFF_APPROVER_KID": entry["kid"]}


async def test_keys_new_writes_a_private_key_and_the_entry_a_worker_verifies_it_with(cli: Cli, tmp_path: Path) -> None:
    await new_key(cli, tmp_path, "alice", "--groups", "sre,ops")
    again = await cli("keys", "new", "--sub", "alice", "--out", str(tmp_path / "alice.pem"))
    (entry,) = json.loads((tmp_path / "jwks.json").read_text())["keys"]
    keys = ApproverKeys.load(tmp_path / "jwks.json")
    assert stat.S_IMODE(os.stat(tmp_path / "alice.pem").st_mode) == 0o600
    assert (entry["sub"], entry["groups"], entry["alg"]) == ("alice", ["sre", "ops"], "EdDSA")
    assert keys.keys.keys[0].subject == "alice" and keys.keys.keys[0].personal
    assert again.code == 2 and "never overwritten" in again.err


async def test_approve_signs_with_a_persons_key_which_signs_only_as_its_subject(
    client: Client, task_queue: str, tmp_path: Path, cli: Cli
) -> None:
    alice = await new_key(cli, tmp_path, "alice")
    policies = PolicyBook(policies={"run_command": VERIFIED})
    keys = ApproverKeys.load(tmp_path / "jwks.json")
    async with served(client, task_queue, tmp_path, verifier=keys, policies=policies):
        handle = await start_run(client, task_queue)
        await wait_pending(handle)
        posing = await cli("approve", handle.id, "call_1", "--approver", "carol", **alice)
        approved = await cli("approve", handle.id, "call_1", **alice)
        result = await asyncio.wait_for(handle.result(), 60)
    assert posing.code == 1 and "signs only as 'alice', not 'carol'" in posing.err, posing
    assert approved.code == 0 and "approved call_1: run_command" in approved.out, approved
    assert (result.approvals[0].approver, result.approvals[0].verified) == ("alice", True)
    assert result.messages[2].content == "exit code: 0\nhi\n"


async def test_sign_prints_a_decision_the_web_ui_or_any_client_can_send(
    client: Client, task_queue: str, tmp_path: Path, cli: Cli
) -> None:
    carol = await new_key(cli, tmp_path, "carol", "--groups", "sre")
    policies = PolicyBook(policies={"run_command": VERIFIED})
    async with served(
        client, task_queue, tmp_path, verifier=ApproverKeys.load(tmp_path / "jwks.json"), policies=policies
    ):
        handle = await start_run(client, task_queue)
        (pending,) = await wait_pending(handle)
        signed = await cli("sign", handle.id, "call_1", "--reason", "looks fine", **carol)
        decision = json.loads(signed.out)
        code, output = await temporal(
            client,
            "workflow",
            "update",
            "execute",
            "--workflow-id",
            handle.id,
            "--name",
            "submit_tool_approval",
            "--input",
            signed.out.strip(),
        )
        result = await asyncio.wait_for(handle.result(), 60)
    assert signed.code == 0 and "Send an Update" in signed.err, signed
    assert set(decision) == {"call_id", "approved", "arguments_digest", "reason", "approver", "token"}
    assert decision["arguments_digest"] == pending["arguments_digest"]
    assert code == 0, output
    assert (result.approvals[0].approver, result.approvals[0].verified) == ("carol", True)


async def test_run_signs_its_requester_so_separate_requester_holds_and_extend_signs_too(
    client: Client, task_queue: str, tmp_path: Path, cli: Cli
) -> None:
    alice, bob = await new_key(cli, tmp_path, "alice"), await new_key(cli, tmp_path, "bob")
    policy = VERIFIED.model_copy(update={"approvers": ("alice", "bob"), "separate_requester": True})
    run_id = f"signed-{uuid.uuid4()}"
    async with served(
        client,
        task_queue,
        tmp_path,
        verifier=ApproverKeys.load(tmp_path / "jwks.json"),
        policies=PolicyBook(policies={"run_command": policy}),
    ):
        started = await cli("run", "go", "--id", run_id, **alice)
        handle = client.get_workflow_handle(run_id)
        (before,) = await wait_pending(handle)
        extended = await cli("extend", run_id, "call_1", "--seconds", "3600", **bob)
        (after,) = await handle.query("pending_approvals")
        own = await cli("approve", run_id, "call_1", **alice)
        approved = await cli("approve", run_id, "call_1", **bob)
        await asyncio.wait_for(handle.result(), 60)
        status = await handle.query("status")
    assert started.code == 0, started
    assert status["requested_by"] == "alice"
    assert extended.code == 0 and before["expires_at"] < after["expires_at"], extended
    assert own.code == 1 and "'alice' requested this run and may not decide its calls" in own.err, own
    assert approved.code == 0, approved
