"""Signed delegation: `signoff delegate` signs, with the delegator's own key, a token that lets
another person's signed decisions count as the delegator's vote, inside its window and tools;
the run refuses it outside them, and so does the tool activity."""

# ruff: noqa: F811 - the harness's fixtures are imported by name and taken as parameters

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from signoff.activities.tool import SignOffs
from signoff.approval.identity import ApproverKeys
from signoff.approval.policy import ApprovalPolicy
from signoff.approval.signatures import DelegationClaim
from signoff.errors import TokenError
from signoff.signing.keys import SigningKey, new_key_pair
from tests.approver_keys import signed
from tests.cli_harness import Cli, cli, cli_environ  # noqa: F401
from tests.governance import activity_types, deploy, ops_agent, ops_run, refusal, turns
from tests.helpers import wait_pending

POLICY = ApprovalPolicy(verified=True, approvers=("alice",))


@pytest.fixture
def people(tmp_path: Path) -> dict[str, Path]:
    """Key files of alice, bob, carol and mallory, and the JWKS (`keys`) that lists them all."""
    files: dict[str, Path] = {}
    entries: list[dict[str, Any]] = []
    for name in ("alice", "bob", "carol", "mallory"):
        pem, entry = new_key_pair(name, kid=f"{name}-1")
        (tmp_path / f"{name}.pem").write_bytes(pem)
        (tmp_path / f"{name}.pem").chmod(0o600)  # a private key is its owner's alone, or no worker reads it
        files[name], entries = tmp_path / f"{name}.pem", [*entries, entry]
    (tmp_path / "jwks.json").write_text(json.dumps({"keys": entries}))
    return {**files, "keys": tmp_path / "jwks.json"}


def delegation(
    key: Path, to: str, tools: tuple[str, ...] | None = None, start: timedelta = -timedelta(hours=1), hours: float = 8
) -> str:
    """A delegation signed with `key` to `to`, from now + `start`, for `hours`."""
    now = datetime.now(UTC)
    begins = now + start
    until = begins + timedelta(hours=hours)
    return SigningKey.load(key).sign(
        DelegationClaim(delegate=to, tools=tools), ttl=until - begins, now=begins, not_before=begins
    )


def as_delegate(people: dict[str, Path], pending: dict[str, Any], who: str, given: str) -> dict[str, Any]:
    return {**signed(people[who], pending), "delegation": given}


def worker(people: dict[str, Path], policy: ApprovalPolicy = POLICY) -> dict[str, Any]:
    return {"agents": {"ops": ops_agent(deploy=policy)}, "verifier": ApproverKeys.load(people["keys"])}


async def test_a_delegated_vote_counts_as_the_delegators_and_the_audit_names_both(
    client: Client, people: dict[str, Path]
) -> None:
    async with ops_run(client, turns([deploy("call_1")]), worker=worker(people)) as handle:
        (pending,) = await wait_pending(handle)
        alone = await refusal(handle.execute_update("submit_tool_approval", signed(people["bob"], pending)))
        given = delegation(people["alice"], "bob", ("deploy",))
        ack = await handle.execute_update("submit_tool_approval", as_delegate(people, pending, "bob", given))
        result = await handle.result()
        kinds = await activity_types(handle)
    assert "'bob' is not among its approvers" in alone
    assert ack["decided"][0]["outcome"] == "approved" and result.text == "deployed web"
    assert kinds.count("signoff.tool") == 1
    (record,) = result.approvals
    assert (record.approver, record.delegate, record.verified) == ("alice", "bob", True)


@pytest.mark.parametrize(
    ("make", "sender", "why"),
    [
        (lambda p: delegation(p["alice"], "bob", start=-timedelta(hours=10), hours=1), "bob", "expired"),
        (lambda p: delegation(p["alice"], "bob", start=timedelta(hours=2)), "bob", "not valid before"),
        (lambda p: delegation(p["alice"], "bob", ("restart",)), "bob", "covers only restart"),
        (lambda p: delegation(p["alice"], "carol"), "bob", "is to 'carol', not to 'bob'"),
        (lambda p: delegation(p["mallory"], "bob"), "bob", "'mallory' is not among its approvers"),
        (lambda p: delegation(p["bob"], "bob"), "bob", "to oneself"),
        (lambda p: "not.a.token", "bob", "delegation token rejected"),
    ],
    ids=["expired", "not-yet", "other-tools", "other-delegate", "not-an-approver", "to-oneself", "garbage"],
)
async def test_a_delegation_outside_its_window_tools_or_delegator_is_refused(
    client: Client, people: dict[str, Path], make: Any, sender: str, why: str
) -> None:
    async with ops_run(client, turns([deploy("call_1")]), worker=worker(people)) as handle:
        (pending,) = await wait_pending(handle)
        refused = await refusal(
            handle.execute_update("submit_tool_approval", as_delegate(people, pending, sender, make(people)))
        )
        (still,) = await handle.query("pending_approvals")
        await handle.terminate()
    assert why in refused and still["call_id"] == "call_1" and not still["votes"]


async def test_a_delegation_token_is_no_decision_nor_identity(client: Client, people: dict[str, Path]) -> None:
    async with ops_run(client, turns([deploy("call_1")]), worker=worker(people)) as handle:
        await wait_pending(handle)
        given = delegation(people["alice"], "bob")
        as_token = await refusal(
            handle.execute_update("submit_tool_approval", {"call_id": "call_1", "approved": True, "token": given})
        )
        alone = await refusal(
            handle.execute_update("submit_tool_approval", {"call_id": "call_1", "approved": True, "delegation": given})
        )
        await handle.terminate()
    assert "vouches for nobody" in as_token and "goes with the delegate's own token" in alone


async def test_a_quorum_still_needs_distinct_people(client: Client, people: dict[str, Path]) -> None:
    policy = ApprovalPolicy(verified=True, approvers=("alice", "bob", "carol"), quorum=2)
    async with ops_run(client, turns([deploy("call_1")]), worker=worker(people, policy)) as handle:
        (pending,) = await wait_pending(handle)
        await handle.execute_update("submit_tool_approval", signed(people["bob"], pending))
        twice = await refusal(
            handle.execute_update(
                "submit_tool_approval", as_delegate(people, pending, "bob", delegation(people["alice"], "bob"))
            )
        )
        await handle.execute_update("submit_tool_approval", signed(people["carol"], pending))
        result = await handle.result()
    assert "a quorum needs distinct people" in twice
    assert [v.approver for v in result.approvals[0].votes] == ["bob", "carol"]


def test_the_tool_activity_honours_a_delegation_only_inside_its_window_and_tools(people: dict[str, Path]) -> None:
    keys = ApproverKeys.load(people["keys"])
    checks = SignOffs(keys)
    bob = keys.verify(signed_token(people["bob"]))
    now = datetime.now(UTC)
    assert checks._delegated(bob, delegation(people["alice"], "bob", ("deploy",)), "deploy", now).subject == "alice"
    for given, tool, why in [
        (delegation(people["alice"], "bob", ("restart",)), "deploy", "does not cover deploy"),
        (delegation(people["alice"], "carol"), "deploy", "no delegation to them"),
        (delegation(people["alice"], "bob", start=-timedelta(hours=10), hours=1), "deploy", "outside"),
    ]:
        with pytest.raises(TokenError, match=why):
            checks._delegated(bob, given, tool, now)


def signed_token(key: Path) -> str:
    return SigningKey.load(key).sign(None)


async def test_signoff_delegate_prints_a_token_signed_with_your_key(cli: Cli, people: dict[str, Path]) -> None:
    env = {"SIGNOFF_APPROVER_KEY_FILE": str(people["alice"])}
    start = datetime.now(UTC) - timedelta(minutes=1)
    until = start + timedelta(days=7)
    flags = ["--from", start.isoformat(), "--until", until.isoformat()]
    done = await cli("delegate", "--to", "bob", "--tools", "deploy,restart", *flags, **env)
    naive = await cli("delegate", "--to", "bob", "--from", "2026-12-01T09:00", "--until", until.isoformat(), **env)
    backwards = await cli("delegate", "--to", "bob", "--from", until.isoformat(), "--until", start.isoformat(), **env)
    to_self = await cli("delegate", "--to", "alice", *flags, **env)
    identity = ApproverKeys.load(people["keys"]).verify(done.out.strip())
    assert done.code == 0 and "bob may decide for you on deploy, restart" in done.err, done
    assert identity.subject == "alice" and identity.claim == DelegationClaim(
        delegate="bob", tools=("deploy", "restart")
    )
    assert naive.code == backwards.code == to_self.code == 2
    assert "names no time zone" in naive.err and "must be after --from" in backwards.err and "yourself" in to_self.err
