"""Bound tokens, pure: the `signoff` claim's shapes, what a person's key may sign, and the
tool activity's rules for grants (`signoff.approval.signatures`, `signoff.approval.identity`,
`signoff.approval.evidence`)."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from signoff.approval.digest import arguments_digest
from signoff.approval.evidence import CallToRun, sign_off_problem, why_not
from signoff.approval.identity import ApproverKeys, Identity, issue_token, read_verified
from signoff.approval.policy import ApprovalPolicy
from signoff.approval.requests import Binding, GrantSpec, ToolApprovalResponse
from signoff.approval.signatures import DecisionClaim, decision_claim, mismatch, read_claim, requester_claim
from signoff.errors import ConfigError, TokenError
from signoff.signing.keys import SigningKey, new_key_pair
from tests.approver_keys import NOW, write_secret

BINDING = Binding(workflow_id="wf", chain_id="run-1", call_id="call_1", tool="deploy", arguments_digest="a" * 64)


def approval(**fields: object) -> DecisionClaim:
    return decision_claim(BINDING, ToolApprovalResponse(call_id="call_1", approved=True, **fields))


def test_a_claim_is_read_by_its_shape_and_anything_else_is_refused() -> None:
    assert isinstance(read_claim(approval().model_dump(mode="json")), DecisionClaim)
    assert read_claim({"workflow_id": "wf", "requester": True}) == requester_claim("wf")
    for bad in ({"workflow_id": "wf"}, {**approval().model_dump(mode="json"), "extra": 1}, ["not", "an", "object"]):
        with pytest.raises(ValueError):
            read_claim(bad)


def test_a_mismatch_names_every_field_that_differs() -> None:
    signed = approval().model_copy(update={"call_id": "call_2", "approved": False})
    problem = mismatch(signed, approval())
    assert (
        problem is not None
        and "its call_id is 'call_2', not 'call_1'" in problem
        and "its approved is False" in problem
    )
    assert mismatch(approval(), approval()) is None
    assert "plain identity token" in (mismatch(None, approval()) or "")
    assert "signs a requester, not a decision" in (mismatch(requester_claim("wf"), approval()) or "")


@pytest.fixture
def person(tmp_path: Path) -> tuple[SigningKey, ApproverKeys]:
    pem, entry = new_key_pair("alice", ["sre"], kid="alice-1")
    (tmp_path / "alice.pem").write_bytes(pem)
    (tmp_path / "alice.pem").chmod(0o600)
    (tmp_path / "jwks.json").write_text(json.dumps({"keys": [entry]}))
    return SigningKey.load(tmp_path / "alice.pem", "alice-1"), ApproverKeys.load(tmp_path / "jwks.json")


def test_a_persons_key_signs_as_its_subject_with_its_groups(person: tuple[SigningKey, ApproverKeys]) -> None:
    key, keys = person
    token = key.sign(approval())
    identity = keys.verify(token)
    assert (identity.subject, identity.groups, identity.key_id, identity.claim) == (
        "alice",
        ("sre",),
        "alice-1",
        approval(),
    )
    read = read_verified(token)  # what an update's handler reads, with no keys: the same person
    assert (read.subject, read.groups, read.claim) == (identity.subject, identity.groups, identity.claim)


@pytest.mark.parametrize(
    ("subject", "groups", "why"),
    [
        ("bob", (), "signs only as 'alice', not 'bob'"),
        ("alice", ("ops",), "may not sign for the group(s) ['ops']"),
    ],
)
def test_a_persons_key_never_signs_as_anyone_else(
    person: tuple[SigningKey, ApproverKeys], subject: str, groups: tuple[str, ...], why: str
) -> None:
    key, keys = person
    with pytest.raises(TokenError, match=re.escape(why)):
        keys.verify(key.sign(approval(), subject, groups=groups))


def test_a_jwks_entry_must_say_whom_it_signs_for_plainly(tmp_path: Path) -> None:
    _, entry = new_key_pair("alice")
    cases: list[tuple[dict[str, Any], str]] = [
        ({"groups": ["sre"], "sub": None}, "has groups but no sub"),
        ({"sub": "group:ops"}, "names a group"),
        ({"signoff_service": "yes"}, "true or false"),
    ]
    for bad, why in cases:
        (tmp_path / "jwks.json").write_text(json.dumps({"keys": [{k: v for k, v in {**entry, **bad}.items() if v}]}))
        with pytest.raises(ConfigError, match=why):
            ApproverKeys.load(tmp_path / "jwks.json")


def test_a_service_key_signs_for_the_people_it_names(tmp_path: Path) -> None:
    pem, entry = new_key_pair("inbox", kid="inbox-1", service=True)
    (tmp_path / "inbox.pem").write_bytes(pem)
    (tmp_path / "inbox.pem").chmod(0o600)
    (tmp_path / "jwks.json").write_text(json.dumps({"keys": [entry]}))
    token = SigningKey.load(tmp_path / "inbox.pem", "inbox-1").sign(approval(), "carol", groups=["sre"])
    assert ApproverKeys.load(tmp_path / "jwks.json").verify(token).subject == "carol"


def test_an_expired_signed_decision_is_evidence_only_when_asked_for_after_its_decision(tmp_path: Path) -> None:
    write_secret(tmp_path / "k")
    token = issue_token(tmp_path / "k", "alice", ttl=timedelta(minutes=1), now=NOW, signs=approval())
    keys = ApproverKeys.load(tmp_path / "k")
    later = NOW + timedelta(hours=2)
    with pytest.raises(TokenError, match="expired"):
        keys.verify(token, later)
    assert keys.verify(token, later, expired_ok=True).subject == "alice"


def call(at: datetime = NOW, **fields: str) -> CallToRun:
    base = {
        "workflow_id": "wf",
        "chain_id": "run-1",
        "call_id": "call_2",
        "tool": "deploy",
        "arguments_digest": "b" * 64,
        "run_digest": "b" * 64,
    }
    return CallToRun(**{**base, **fields}, at=at)


def grantor(grant: GrantSpec, issued: datetime | None = NOW, **fields: object) -> Identity:
    return Identity(subject="alice", issued_at=issued, claim=approval(grant=grant, **fields))


@pytest.mark.parametrize(
    ("identity", "to_run", "why"),
    [
        (grantor(GrantSpec(match="tool")), call(), None),
        (grantor(GrantSpec(match="tool")), call(tool="remove"), "signed for tool 'deploy'"),
        (grantor(GrantSpec(match="arguments")), call(), "grant covers other arguments"),
        (grantor(GrantSpec(match="arguments")), call(arguments_digest="a" * 64, run_digest="a" * 64), None),
        (grantor(GrantSpec(match="tool"), arguments={"x": 1}), call(), None),
        (grantor(GrantSpec(match="tool")), call(run_digest="c" * 64), "not edited"),
        (grantor(GrantSpec(match="tool", ttl_seconds=60)), call(at=NOW + timedelta(minutes=5)), "grant expired"),
        (grantor(GrantSpec(match="tool", ttl_seconds=60), issued=None), call(), "does not say when it was signed"),
        (grantor(GrantSpec(match="tool")), call(chain_id="run-0"), "signed for another run"),
        (Identity(subject="alice", claim=approval()), call(), "grants nothing"),
    ],
    ids=[
        "tool",
        "other-tool",
        "other-arguments",
        "same-arguments",
        "edited-grant",
        "edited-run",
        "ttl",
        "no-iat",
        "other-chain",
        "no-grant",
    ],
)
def test_a_grant_token_covers_exactly_what_it_grants(identity: Identity, to_run: CallToRun, why: str | None) -> None:
    assert isinstance(identity.claim, DecisionClaim)
    problem = why_not(identity.claim, identity, to_run)
    assert (problem is None) if why is None else (problem is not None and why in problem), problem


def test_an_arguments_grant_made_with_edited_arguments_covers_the_edited_ones() -> None:
    edited = {"target": "staging"}
    identity = grantor(GrantSpec(match="arguments"), arguments=edited)
    digest = arguments_digest(edited)
    assert isinstance(identity.claim, DecisionClaim)
    assert why_not(identity.claim, identity, call(arguments_digest=digest, run_digest=digest)) is None
    assert why_not(identity.claim, identity, call(arguments_digest="a" * 64, run_digest="a" * 64)) is not None


def test_a_quorum_of_the_workers_policy_counts_people_not_tokens() -> None:
    policy = ApprovalPolicy(verified=True, quorum=2, approvers=("alice", "bob"))
    here = call(call_id="call_1", arguments_digest="a" * 64, run_digest="a" * 64)
    signers = [Identity(subject=name, claim=approval()) for name in ("alice", "ALICE", "mallory")]
    problem = sign_off_problem(policy, here, signers, None)
    assert (
        problem is not None
        and problem.startswith("1 of 2 signed approval(s) (alice)")
        and "'mallory' is not" in problem
    )
    assert sign_off_problem(policy, here, [*signers, Identity(subject="bob", claim=approval())], None) is None
