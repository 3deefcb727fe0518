"""`signoff audit --verify` vouches only for what signatures prove (issue 15, finding 2).

The chain of audit records is an unkeyed SHA-256: whoever writes a run's history can write
records that agree with it. So a record saying its approver was verified holds only if a
token sent with a decision in the history verifies with the workers' keys and signs exactly
that decision, and a chain that began outside `AgentRun` is reported as such.
"""

# ruff: noqa: F811 - the harness's fixtures are imported by name and taken as parameters

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowFailureError
from temporalio.worker import Worker

from signoff.approval.identity import ApproverKeys, issue_token
from signoff.approval.policy import ApprovalPolicy, PolicyBook
from signoff.approval.requests import ApprovalRecord, Binding, GrantSpec, ToolApprovalResponse, Vote
from signoff.approval.signatures import decision_claim
from signoff.cli.audit_check import check_signatures
from signoff.cli.history import RunEvidence, SentToken
from tests.approver_keys import signed, write_secret
from tests.cli_harness import Cli, cli, cli_environ, served  # noqa: F401
from tests.helpers import start_run, wait_pending
from tests.test_forgery import UNSANDBOXED, Attacker, forged_state, victim

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def keys(tmp_path: Path) -> Path:
    write_secret(tmp_path / "approvers.key")
    return tmp_path / "approvers.key"


async def test_a_signed_run_holds_and_without_the_keys_cannot_be_vouched_for(
    client: Client, task_queue: str, tmp_path: Path, keys: Path, cli: Cli
) -> None:
    policy = {"run_command": ApprovalPolicy(verified=True, approvers=("alice",))}
    async with served(
        client, task_queue, tmp_path, verifier=ApproverKeys.load(keys), policies=PolicyBook(policies=policy)
    ):
        handle = await start_run(client, task_queue)
        (pending,) = await wait_pending(handle)
        await handle.execute_update("submit_tool_approval", signed(keys, pending, "alice"))
        await asyncio.wait_for(handle.result(), 60)
        held = await cli("audit", handle.id, "--verify", SIGNOFF_APPROVER_KEYS=str(keys))
        keyless = await cli("audit", handle.id, "--verify")
    assert held.code == 0 and "the audit trail holds: 1 record(s)" in held.out, held
    assert "1 verified approval(s) signed" in held.out
    assert keyless.code == 1 and "not verifiable: record 0 (call_1): says alice (verified)" in keyless.out, keyless
    assert "cannot be vouched for" in keyless.err


async def test_audit_does_not_vouch_for_a_forged_continue_as_new(
    client: Client, task_queue: str, tmp_path: Path, keys: Path, cli: Cli
) -> None:
    """The forger's records say "alice (verified)" and chain correctly; the history has no
    signature of alice's, and its chain began as the attacker's own workflow."""
    attacker_queue = f"attacker-{uuid.uuid4()}"
    marker = tmp_path / "PWNED.txt"
    async with (
        served(client, task_queue, tmp_path, **victim(keys)),
        Worker(client, task_queue=attacker_queue, workflows=[Attacker], workflow_runner=UNSANDBOXED),
    ):
        handle = await client.start_workflow(
            Attacker.run,
            args=[await forged_state(tmp_path, marker), task_queue],
            id=f"forged-{uuid.uuid4()}",
            task_queue=attacker_queue,
        )
        with pytest.raises(WorkflowFailureError):
            await handle.result()
        verdict = await cli("audit", handle.id, "--verify", SIGNOFF_APPROVER_KEYS=str(keys))
    assert verdict.code == 1, verdict
    assert "the run's chain began as a 'Attacker' workflow that continued into AgentRun" in verdict.out
    assert "record 0 (call_x): says alice (verified), but no token in this run's history signs that decision" in (
        verdict.out
    )
    assert "does not hold" in verdict.err and not marker.exists()


def binding(call_id: str = "call_1", tool: str = "deploy", digest: str = "a" * 64) -> Binding:
    return Binding(workflow_id="wf", chain_id="run-1", call_id=call_id, tool=tool, arguments_digest=digest)


def token(keys: Path, subject: str, claim_binding: Binding, approved: bool = True, **fields: object) -> SentToken:
    response = ToolApprovalResponse(call_id=claim_binding.call_id, approved=approved, **fields)
    return SentToken(issue_token(keys, subject, signs=decision_claim(claim_binding, response), now=NOW), NOW)


def record(**fields: object) -> ApprovalRecord:
    base: dict[str, object] = {
        "call_id": "call_1",
        "name": "deploy",
        "approved": True,
        "approver": "alice",
        "verified": True,
        "arguments_digest": "a" * 64,
    }
    return ApprovalRecord.model_validate(base | fields)


def verdict(keys: Path, records: list[ApprovalRecord], tokens: list[SentToken], first: str = "AgentRun") -> object:
    chain = [RunEvidence("run-1", workflow_type=first, tokens=tokens)]
    return check_signatures(records, chain, "wf", ApproverKeys.load(keys))


def test_a_quorums_votes_are_each_proven_by_their_own_signature_or_grant(keys: Path) -> None:
    votes = [Vote(approver="alice", verified=True), Vote(approver="bob", verified=True, grant_id="grant_1")]
    quorum = record(votes=votes, approver="alice")
    grant = GrantSpec(match="tool")
    earlier = binding("call_0", digest="b" * 64)
    tokens = [token(keys, "alice", binding()), token(keys, "bob", earlier, grant=grant)]
    assert verdict(keys, [quorum], tokens).proven == 2  # type: ignore[attr-defined]
    missing = verdict(keys, [quorum], tokens[:1])
    assert missing.problems == [  # type: ignore[attr-defined]
        "record 0 (call_1): says bob (verified), but no token in this run's history signs that decision"
    ]


@pytest.mark.parametrize(
    "wrong",
    [
        {"subject": "mallory"},
        {"binding": binding("call_2")},
        {"binding": binding(tool="restart")},
        {"binding": binding(digest="c" * 64)},
        {"approved": False},
        {"binding": binding().model_copy(update={"chain_id": "run-0"})},
        {"arguments": {"target": "prod"}},
    ],
    ids=["subject", "call", "tool", "arguments", "answer", "chain", "edited"],
)
def test_a_token_signed_for_anything_else_proves_nothing(keys: Path, wrong: dict[str, object]) -> None:
    subject = str(wrong.pop("subject", "alice"))
    claim_binding = wrong.pop("binding", binding())
    approved = bool(wrong.pop("approved", True))
    sent = token(keys, subject, claim_binding, approved, **wrong)  # type: ignore[arg-type]
    found = verdict(keys, [record()], [sent])
    assert found.proven == 0 and len(found.problems) == 1  # type: ignore[attr-defined]


def test_edited_arguments_are_proven_by_their_digest_and_plain_tokens_are_not_verifiable(keys: Path) -> None:
    edited = {"target": "staging"}
    signed_edit = token(keys, "alice", binding(), arguments=edited)
    assert verdict(keys, [record(edited_arguments=edited)], [signed_edit]).proven == 1  # type: ignore[attr-defined]
    plain = SentToken(issue_token(keys, "alice", now=NOW), NOW)
    found = verdict(keys, [record()], [plain])
    assert found.problems == [] and "only a plain identity token backs it" in found.unverifiable[0]  # type: ignore[attr-defined]
