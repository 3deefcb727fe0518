"""The Slack app's parts on their own: what a message says and never says, the button's value,
Slack's signature and the replay cache, the users file, the settings and the manifest."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from pathlib import Path
from typing import Any

import pytest

from signoff.approval.policy import ApprovalPolicy
from signoff.cli.main import main
from signoff.config.environment import Environment
from signoff.errors import ConfigError
from signoff.inbox.slack import Replays, SlackSettings, slack_signature_problem
from signoff.inbox.slack_users import SlackUsers, parse_users
from signoff.views.slack import ACTIONS, CallRef, request_message, review_view, settled_message

DIGEST = "b" * 64
HOSTILE = "<!channel> <@U0ADMIN> <https://evil.example|click> & `code`"


def request(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "call_id": "call_1",
        "name": "run_command",
        "arguments": {"command": "rm -rf /srv/secret-data"},
        "arguments_digest": DIGEST,
        "requested_at": "2026-12-03T12:00:00Z",
        "expires_at": "2026-12-03T13:00:00Z",
        "preview": "would remove /srv/secret-data (3 files)",
        "policy": ApprovalPolicy(approvers=("group:sre", "alice"), quorum=2, verified=True).model_dump(mode="json"),
        "binding": {"request": "req-1"},
        "votes": [],
    }
    return base | changes


def test_the_message_names_the_call_and_who_decides_and_never_its_arguments() -> None:
    message = request_message("run-1", "ops", request())
    text = json.dumps(message)
    assert "secret-data" not in text  # neither the arguments nor the preview
    assert all(word in text for word in ("run_command", "ops", "run-1", "call_1", "group:sre", "2 approvals needed"))
    assert "<!date^1796302800^" in text  # the deadline, in each reader's time zone
    (actions,) = [b for b in message["blocks"] if b["type"] == "actions"]
    assert [e["action_id"] for e in actions["elements"]] == list(ACTIONS)
    ref = CallRef.parse(actions["elements"][1]["value"])
    assert ref == CallRef("run-1", "call_1", DIGEST, "req-1", 1796302800.0)
    assert message["metadata"]["event_payload"] == {"workflow_id": "run-1", "call_id": "call_1", "digest": DIGEST}


def test_names_a_stranger_chose_make_no_mention_link_or_ping() -> None:
    message = request_message(HOSTILE, HOSTILE, request(name=HOSTILE, policy={"approvers": [HOSTILE]}))
    settled = settled_message(
        HOSTILE,
        HOSTILE,
        {"name": HOSTILE, "approver": HOSTILE, "reason": HOSTILE},
        "approval_decided",
        CallRef(HOSTILE, "c", DIGEST),
    )
    for sent in (message, settled):
        texts = [b["text"]["text"] for b in sent["blocks"] if b["type"] == "section"] + [sent["text"]]
        for text in texts:
            assert "<!channel>" not in text and "<@U0ADMIN>" not in text and "<https://" not in text, text
            assert "&lt;" in text or "\\u003c" in text


def test_a_settled_message_has_no_buttons_and_says_how() -> None:
    record = {"name": "deploy", "approved": False, "approver": "alice", "verified": True, "reason": "not now"}
    message = settled_message("run-1", "ops", record, "approval_decided", CallRef("run-1", "c1", DIGEST))
    assert not [b for b in message["blocks"] if b["type"] == "actions"]
    assert "denied by alice (verified): " in message["blocks"][0]["text"]["text"]
    timed_out = settled_message(
        "run-1", "ops", {"name": "deploy", "timed_out": True}, "approval_timed_out", CallRef("run-1", "c1", DIGEST)
    )
    assert "no decision in time: denied" in timed_out["text"]


def test_the_modal_shows_the_whole_call_as_plain_text() -> None:
    ref = CallRef("run-1", "call_1", DIGEST, "req-1")
    view = review_view(ref, {"channel": "C1", "ts": "1.2"}, request(), may_edit=True, requested_by="dave")
    text = json.dumps(view)
    assert "rm -rf /srv/secret-data" in text and "would remove" in text and "requested by: dave" in text
    assert all(b["text"]["type"] == "plain_text" for b in view["blocks"] if b["type"] == "section")
    assert {b.get("block_id") for b in view["blocks"]} >= {"decision", "reason", "arguments"}
    meta = json.loads(view["private_metadata"])
    assert CallRef.parse(meta["ref"]) == ref and (meta["channel"], meta["ts"]) == ("C1", "1.2")
    fixed = review_view(ref, {}, request(), may_edit=False)
    assert "arguments" not in {b.get("block_id") for b in fixed["blocks"]}


@pytest.mark.parametrize(
    "value",
    [
        None,
        "",
        "not json",
        "[]",
        json.dumps({"w": "r", "c": "c"}),
        json.dumps({"w": "r", "c": "c", "d": "short"}),
        json.dumps({"w": "r", "c": "c", "d": DIGEST, "r": 5}),
        json.dumps({"w": "r", "c": "c", "d": DIGEST, "e": True}),
        json.dumps({"w": "r", "c": "", "d": DIGEST}),
        "x" * 5000,
    ],
)
def test_a_value_that_names_no_request_is_none(value: Any) -> None:
    assert CallRef.parse(value) is None


def _sign(secret: str, timestamp: str, body: bytes) -> str:
    return "v0=" + hmac.new(secret.encode(), b"v0:" + timestamp.encode() + b":" + body, hashlib.sha256).hexdigest()


def test_slacks_signature_and_its_window() -> None:
    body, now = b"payload=%7B%7D", 1_800_000_000.0
    good = _sign("s3cret", str(int(now)), body)
    assert slack_signature_problem("s3cret", body, str(int(now)), good, now) is None
    assert "does not match" in str(slack_signature_problem("other", body, str(int(now)), good, now))
    assert "does not match" in str(slack_signature_problem("s3cret", body + b"x", str(int(now)), good, now))
    old = str(int(now) - 301)
    assert "within 5 minutes" in str(slack_signature_problem("s3cret", body, old, _sign("s3cret", old, body), now))
    ahead = str(int(now) + 301)
    assert "within 5 minutes" in str(slack_signature_problem("s3cret", body, ahead, _sign("s3cret", ahead, body), now))
    for bad in ("", "-5", "1e9", "9" * 40):
        assert slack_signature_problem("s3cret", body, bad, good, now) is not None
    assert slack_signature_problem("s3cret", body, str(int(now)), "v0=ünïcode", now) is not None


def test_a_signature_is_taken_once_within_its_window_and_forgotten_after() -> None:
    replays = Replays(window=300, most=3)
    assert replays.first("a", 1000.0) and not replays.first("a", 1100.0)
    assert replays.first("b", 1000.0) and replays.first("c", 1000.0)
    assert not replays.first("d", 1000.0)  # full of live signatures: refuse rather than forget one
    assert replays.first("a", 2000.0)  # long past the window: its timestamp is refused anyway


def test_the_users_file_maps_user_ids_only(tmp_path: Path) -> None:
    people = parse_users({"U012ABCDE": {"sub": "alice", "groups": ["sre", "sre"]}, "W0FOO": {"sub": "bob"}}, "f")
    assert people["U012ABCDE"].viewer().name == "alice" and people["U012ABCDE"].groups == ("sre",)
    assert people["W0FOO"].viewer().via == "slack"
    for bad, said in [
        ({"alice": {"sub": "alice"}}, "not a Slack user id"),
        ({"U012ABCDE": {"sub": "group:admins"}}, "sub"),
        ({"U012ABCDE": {"sub": "alice", "groups": "sre"}}, "groups"),
        ({"U012ABCDE": {"sub": "alice", "admin": True}}, "must be"),
        ([], "must map"),
    ]:
        with pytest.raises(ConfigError, match=said):
            parse_users(bad, "f")
    toml = tmp_path / "users.toml"
    toml.write_text('[U012ABCDE]\nsub = "alice"\ngroups = ["sre"]\n')
    users = SlackUsers(toml)
    assert users.person("U012ABCDE") is not None and users.person("UNKNOWN1") is None
    toml.write_text('[U012ABCDE]\nsub = "carol"\n# changed\n')
    os.utime(toml, ns=(1, 1))
    person = users.person("U012ABCDE")
    assert person is not None and person.sub == "carol"
    toml.write_text("not toml [")
    os.utime(toml, ns=(2, 2))
    assert users.person("U012ABCDE") is None and users.problem  # a broken edit keeps nobody


def test_the_inbox_needs_both_slack_files_and_a_users_file(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("xoxb-1\n")
    (tmp_path / "secret").write_text("abc\n")
    (tmp_path / "token").chmod(0o600)
    (tmp_path / "secret").chmod(0o600)
    (tmp_path / "users.json").write_text("{}")
    assert SlackSettings.from_env(Environment({})) is None
    with pytest.raises(ConfigError, match="SIGNOFF_SLACK_SIGNING_SECRET_FILE"):
        SlackSettings.from_env(Environment({"SIGNOFF_SLACK_BOT_TOKEN_FILE": str(tmp_path / "token")}))
    both = {
        "SIGNOFF_SLACK_BOT_TOKEN_FILE": str(tmp_path / "token"),
        "SIGNOFF_SLACK_SIGNING_SECRET_FILE": str(tmp_path / "secret"),
    }
    with pytest.raises(ConfigError, match="SIGNOFF_SLACK_USERS"):
        SlackSettings.from_env(Environment(both))
    settings = SlackSettings.from_env(Environment(both | {"SIGNOFF_SLACK_USERS": str(tmp_path / "users.json")}))
    assert settings is not None and settings.api_url == "https://slack.com/api/" and "xoxb" not in repr(settings)


def test_the_manifest_names_the_scopes_and_the_interactivity_url(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["slack", "manifest", "--url", "https://inbox.example.com/"]) == 0
    manifest = json.loads(capsys.readouterr().out)
    assert manifest["settings"]["interactivity"] == {
        "is_enabled": True,
        "request_url": "https://inbox.example.com/slack/interactions",
    }
    assert manifest["oauth_config"]["scopes"]["bot"] == ["chat:write", "channels:history", "groups:history"]
    assert main(["slack", "manifest", "--url", "http://inbox.example.com"]) == 2
    assert "https" in capsys.readouterr().err


def test_a_worker_with_a_slack_token_needs_a_channel_and_never_shows_the_token(tmp_path: Path) -> None:
    from signoff.activities.notify import NotifyConfig
    from signoff.activities.slack import SlackChannel

    (tmp_path / "token").write_text("xoxb-very-secret\n")
    (tmp_path / "token").chmod(0o600)
    token = {"SIGNOFF_SLACK_BOT_TOKEN_FILE": str(tmp_path / "token")}
    assert SlackChannel.from_env(Environment({})) is None
    with pytest.raises(ConfigError, match="SIGNOFF_SLACK_CHANNEL"):
        SlackChannel.from_env(Environment(token))
    (tmp_path / "empty").write_text("\n")
    (tmp_path / "empty").chmod(0o600)
    with pytest.raises(ConfigError, match="empty"):
        SlackChannel.from_env(
            Environment({"SIGNOFF_SLACK_BOT_TOKEN_FILE": str(tmp_path / "empty"), "SIGNOFF_SLACK_CHANNEL": "C1"})
        )
    env = Environment(token | {"SIGNOFF_SLACK_CHANNEL": "C0123", "SIGNOFF_SLACK_API_URL": "http://127.0.0.1:9/api"})
    config = NotifyConfig.from_env(env, "localhost:7233", "default")
    assert config is not None and config.slack is not None and config.slack.api_url == "http://127.0.0.1:9/api/"
    assert config.plan.channels == [config.slack.fingerprint]
    shown = config.describe() + repr(config) + json.dumps(config.plan.model_dump())
    assert "very-secret" not in shown and "Slack channel C0123" in config.describe()
