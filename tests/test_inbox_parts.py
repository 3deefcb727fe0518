"""The inbox's parts that need no server: who is asking, its signed tokens, inert rendering."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization

from signoff.approval.identity import ApproverKeys
from signoff.approval.policy import ApprovalPolicy
from signoff.approval.requests import Binding, ToolApprovalRequest, Vote
from signoff.approval.signatures import DecisionClaim
from signoff.config.environment import INBOX_ALLOWED_HOSTS_ENV, Environment, host_value, parse_networks
from signoff.errors import ConfigError
from signoff.inbox.calls import WaitingCall
from signoff.inbox.decide import InboxDecisions
from signoff.inbox.live import StreamSlots
from signoff.inbox.scope import Scope
from signoff.inbox.seen import Opened
from signoff.inbox.signer import InboxSigner
from signoff.inbox.view import diff_lines, editable, pretty, summary
from signoff.inbox.who import Viewer, WhoIsAsking
from signoff.signing.keys import new_key_pair
from tests.approver_keys import ed25519_key, jwk, write_jwks, write_secret

HEADERS = "x-forwarded-user", "x-forwarded-groups"
BINDING = Binding(workflow_id="w", chain_id="r", call_id="c", tool="deploy", arguments_digest="0" * 64)


def asked(who: WhoIsAsking, peer: str | None, user: list[str], groups: list[str] | None = None) -> Viewer | None:
    return who.viewer(peer, {HEADERS[0]: user, HEADERS[1]: groups or []})


def test_the_user_header_counts_only_from_a_trusted_proxy() -> None:
    who = WhoIsAsking(parse_networks("10.0.0.5, 172.28.0.0/24, ::1"))
    assert asked(who, "10.0.0.5", ["alice"], ["sre, release"]) == Viewer("alice", ("sre", "release"), "proxy")
    assert asked(who, "172.28.0.77", ["bob"]) == Viewer("bob", (), "proxy")
    assert asked(who, "::1", ["carol"]) == Viewer("carol", (), "proxy")
    for stranger in ("10.0.0.6", "127.0.0.1", "not-an-ip", None):
        assert asked(who, stranger, ["alice"], ["sre"]) is None


def test_a_proxy_that_names_nobody_or_two_people_or_a_group_or_a_hidden_name_names_nobody() -> None:
    who = WhoIsAsking(parse_networks("10.0.0.5"))
    for users in ([], [""], ["alice", "mallory"], ["group:sre"], ["eve\u200b"], ["a" * 300]):
        assert asked(who, "10.0.0.5", users) is None
    assert asked(who, "10.0.0.5", ["alice"], ["sre,,\u202eadmin, ok"]) == Viewer("alice", ("sre", "ok"), "proxy")


def test_the_local_user_is_everyone_and_excludes_a_proxy() -> None:
    assert asked(WhoIsAsking(local_user="alice"), "10.9.9.9", ["mallory"]) == Viewer("alice", (), "local")
    with pytest.raises(ConfigError, match="not both"):
        WhoIsAsking(parse_networks("10.0.0.5"), local_user="alice")
    with pytest.raises(ConfigError, match="must know who is deciding"):
        WhoIsAsking()
    with pytest.raises(ConfigError, match="cannot name a person"):
        WhoIsAsking(local_user="group:admins")
    with pytest.raises(ConfigError, match="not an IP address"):
        parse_networks("proxy.internal")


def test_the_inbox_token_verifies_with_the_shared_secret_and_names_the_user_and_groups(tmp_path: Path) -> None:
    write_secret(tmp_path / "inbox.key")
    signer = InboxSigner.load(tmp_path / "inbox.key")
    claim = DecisionClaim(**BINDING.model_dump(), approved=True)
    token = signer.sign(Viewer("alice", ("sre",), "proxy"), claim)
    identity = ApproverKeys.load(tmp_path / "inbox.key").verify(token)
    assert (identity.subject, identity.groups) == ("alice", ("sre",))
    assert identity.expires_at is not None
    assert (identity.expires_at - datetime.now(UTC)).total_seconds() <= signer.ttl.total_seconds()
    payload = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
    assert payload["signoff"] == claim.model_dump(mode="json") and identity.claim == claim


def test_a_private_key_signs_with_its_kid_for_the_workers_jwks(tmp_path: Path) -> None:
    key = ed25519_key()
    (tmp_path / "inbox.pem").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    (tmp_path / "inbox.pem").chmod(0o600)
    write_jwks(tmp_path / "keys.json", jwk(key, "inbox-1", signoff_service=True))
    signer = InboxSigner.from_env(
        Environment(
            {"SIGNOFF_INBOX_SIGNING_KEY_FILE": str(tmp_path / "inbox.pem"), "SIGNOFF_INBOX_SIGNING_KID": "inbox-1"}
        )
    )
    assert signer is not None and signer.algorithm == "EdDSA"
    token = signer.sign(Viewer("bob"), DecisionClaim(**BINDING.model_dump(), approved=False))
    assert ApproverKeys.load(tmp_path / "keys.json").verify(token).subject == "bob"  # a service key signs for anyone


def test_a_service_key_made_by_signoff_keys_new_signs_for_the_inbox_users_with_its_own_kid(tmp_path: Path) -> None:
    pem, entry = new_key_pair("inbox", service=True)
    (tmp_path / "inbox.pem").write_bytes(pem)
    (tmp_path / "inbox.pem").chmod(0o600)
    write_jwks(tmp_path / "keys.json", entry)
    signer = InboxSigner.load(tmp_path / "inbox.pem")
    assert signer.key.kid == entry["kid"]
    token = signer.sign(Viewer("carol", ("release",), "proxy"), DecisionClaim(**BINDING.model_dump(), approved=True))
    identity = ApproverKeys.load(tmp_path / "keys.json").verify(token)
    assert (identity.subject, identity.groups, identity.key_id) == ("carol", ("release",), entry["kid"])


def test_a_signing_key_file_that_is_no_key_is_refused_naming_the_setting(tmp_path: Path) -> None:
    (tmp_path / "public.pem").write_text("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
    (tmp_path / "short.key").write_text("too short\n")
    (tmp_path / "short.key").chmod(0o600)
    for path in ("public.pem", "short.key", "missing.key"):
        with pytest.raises(ConfigError, match="SIGNOFF_INBOX_SIGNING_KEY_FILE"):
            InboxSigner.load(tmp_path / path)


HOSTILE = {"command": "</textarea><script>alert(1)</script>\u202eexe.txt \x1b[2J", "n": [1, {"deep": "\u200b"}]}


def test_shown_arguments_are_inert_and_the_edit_field_round_trips_exactly() -> None:
    shown = pretty(HOSTILE)
    assert "\u202e" not in shown and "\x1b" not in shown and "\u200b" not in shown
    assert "\\u202eexe.txt" in shown and "\\u200b" in shown
    field = editable(HOSTILE)
    assert field.isascii() and json.loads(field) == HOSTILE
    assert len(summary({"x": "y" * 1000})) == 160
    assert summary("raw\nnot json\u202e") == "raw not json\\u202e"


def test_a_diff_preview_is_classed_by_line_and_other_previews_are_plain() -> None:
    diff = "--- a/config.toml\n+++ b/config.toml\n@@ -1,2 +1,2 @@\n-debug = true\n+debug = false\n keep\n"
    assert [kind for kind, _ in diff_lines(diff)] == ["file", "file", "hunk", "del", "add", ""]
    assert diff_lines("would remove 3 files\n- a\n- b") == [("", "would remove 3 files"), ("", "- a"), ("", "- b")]


def waiting(policy: ApprovalPolicy, requested_by: str | None = None, **request: Any) -> WaitingCall:
    call = ToolApprovalRequest(call_id="call_1", name="deploy", arguments={"target": "web"}, policy=policy, **request)
    return WaitingCall("run-1", "ops", call, requested_by)


def test_the_page_offers_only_what_the_policy_would_let_the_viewer_do(tmp_path: Path) -> None:
    write_secret(tmp_path / "inbox.key")
    signing, plain = InboxDecisions(None, InboxSigner.load(tmp_path / "inbox.key")), InboxDecisions(None)  # type: ignore[arg-type]
    alice, bob = Viewer("alice", ("sre",), "proxy"), Viewer("bob", ("dev",), "proxy")
    sre = ApprovalPolicy(approvers=("group:sre",))
    assert signing.refusal(waiting(sre), alice) is None
    assert "not among its approvers" in (signing.refusal(waiting(sre), bob) or "")
    assert plain.refusal(waiting(sre), alice) is not None  # without a signature the run trusts no claimed group
    verified = ApprovalPolicy(verified=True)
    assert signing.refusal(waiting(verified), bob) is None
    assert "no signing key" in (plain.refusal(waiting(verified), bob) or "")
    separate = ApprovalPolicy(separate_requester=True)
    assert "separate_requester" in (plain.refusal(waiting(separate, requested_by="bob"), bob) or "")
    assert plain.refusal(waiting(separate, requested_by="alice"), bob) is None
    escalating = ApprovalPolicy(approvers=("alice",), escalate_after_seconds=60, escalate_to=("bob",))
    assert plain.refusal(waiting(escalating), bob) is not None
    assert plain.refusal(waiting(escalating, escalated=True), bob) is None
    quorum = ApprovalPolicy(quorum=2)
    voted = waiting(quorum, votes=[Vote(approver="bob")])
    assert "already approved" in (plain.refusal(voted, bob) or "")
    assert plain.refusal(voted, bob, approving=False) is None  # may still deny
    assert not plain.may_edit(voted.request) and plain.may_edit(waiting(sre).request)


def test_a_call_its_row_cuts_is_unseen_until_that_viewer_opened_it_as_it_is_now() -> None:
    opened = Opened(kept=2)
    long = waiting(ApprovalPolicy()).request.model_copy(update={"arguments": {"command": "x" * 200}})
    call = WaitingCall("run-1", "ops", long.model_copy(update={"arguments_digest": "a" * 64}))
    changed = WaitingCall("run-1", "ops", long.model_copy(update={"arguments_digest": "b" * 64}))
    short = waiting(ApprovalPolicy())
    assert not opened.unseen("alice", short)  # its row shows it whole
    assert opened.unseen("alice", call) and "longer than its row" in (opened.refusal("alice", call) or "")
    opened.note("Alice", call)
    assert not opened.unseen("alice", call) and opened.refusal("ALICE", call) is None  # one person, any case
    assert opened.unseen("bob", call) and opened.unseen("alice", changed)  # another person; another call
    opened.note("bob", short)
    opened.note("carol", short)
    assert opened.unseen("alice", call)  # the oldest forgotten past `kept`


def test_scope_mine_shows_a_viewer_the_calls_the_runs_rules_let_them_decide() -> None:
    alice, bob = Viewer("alice", ("sre",), "proxy"), Viewer("bob", ("dev",), "proxy")
    sre = waiting(ApprovalPolicy(approvers=("group:sre",)))
    mine_signed, mine_plain, everyone = Scope("mine", signing=True), Scope("mine"), Scope()
    assert mine_signed.shows(sre, alice) and not mine_signed.shows(sre, bob)
    assert not mine_plain.shows(sre, alice)  # unsigned, a claimed group counts for nothing, as in the run
    assert everyone.shows(sre, bob) and everyone.refusal(sre, bob) is None
    assert "waits for you" in (mine_signed.refusal(sre, bob) or "")
    own = waiting(ApprovalPolicy(separate_requester=True), requested_by="bob")
    assert not mine_plain.shows(own, bob) and mine_plain.shows(own, alice)


def test_stream_slots_hold_each_viewer_to_their_share() -> None:
    slots = StreamSlots(per_viewer=2)
    assert slots.take("alice") and slots.take("Alice") and not slots.take("ALICE")
    assert slots.take("bob")
    slots.give_back("alice")
    assert slots.take("alice") and not slots.take("alice")
    slots.give_back("bob")
    assert "bob" not in slots.open


@pytest.mark.parametrize(
    ("given", "value"),
    [
        ("Inbox.Example.COM.", "inbox.example.com"),
        ("inbox_1:8765", "inbox_1:8765"),
        ("[0:0::1]:80", "[::1]:80"),
        ("127.0.0.1:08765", "127.0.0.1:8765"),
        ("https://inbox.example.com", None),
        ("*.example.com", None),
        ("inbox.example.com/path", None),
        ("::1", None),
        ("[::1]x", None),
        ("host:0", None),
        ("host:70000", None),
        ("host:", None),
        ("", None),
        ("a b", None),
        ("user@host", None),
    ],
)
def test_a_host_value_has_one_spelling_or_is_none(given: str, value: str | None) -> None:
    assert host_value(given) == value
    if value is None and given:
        with pytest.raises(ConfigError, match="SIGNOFF_INBOX_ALLOWED_HOSTS"):
            Environment({"SIGNOFF_INBOX_ALLOWED_HOSTS": f"ok.example, {given}"}).read(INBOX_ALLOWED_HOSTS_ENV)
