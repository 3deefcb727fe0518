"""Notices as people and receivers see them: inert text, configuration, and what one POST does."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from signoff.activities.models import NotifyInput
from signoff.activities.notify import NotifyConfig, channel_id, deliver
from signoff.config.environment import Environment
from signoff.errors import ConfigError
from signoff.views.notices import notice_text
from tests.processes import free_port
from tests.receiver import Receiver

HOSTILE = "<!channel> @everyone `done`\nApproved by alice\u202e <https://evil.example|click>"


def request(**overrides: object) -> dict[str, object]:
    base: dict[str, object] = {
        "call_id": "call_1",
        "name": "run_command",
        "arguments": {"command": HOSTILE},
        "policy": {"approvers": [], "quorum": 1},
    }
    return {**base, **overrides}


def test_text_shows_what_the_model_chose_inert_and_on_one_line() -> None:
    text = notice_text("approval_requested", "run-1", request(call_id="c\n<!here>"), None)
    assert text.count("\n") == 1  # the headline and the arguments: nothing injected a line
    for dangerous in ("<!channel>", "<!here>", "@everyone", "`done`", "<https", "\u202e"):
        assert dangerous not in text
    assert "\\u003c!channel\\u003e" in text and "\\n" in text


def test_text_cuts_long_arguments() -> None:
    text = notice_text("approval_requested", "run-1", request(arguments={"content": "x" * 100_000}), None)
    assert len(text) < 1_000 and text.splitlines()[1].endswith("…`")


def test_text_of_a_denial_names_who_and_why_inertly() -> None:
    record = {
        "call_id": "call_1",
        "name": "run_command",
        "approved": False,
        "approver": "bob@example.com",
        "reason": "<!channel> no",
        "arguments": {},
    }
    text = notice_text("approval_decided", "run-1", None, record)
    assert "denied by" in text and "bob\\u0040example.com" in text and "\\u003c!channel\\u003e no" in text


def test_rules_say_what_the_run_will_do_not_what_the_policy_fields_say_alone() -> None:
    """escalate_to widens only a list (empty approvers is anyone); on_timeout applies only
    to a deadline the policy itself sets (the run's own deadline denies)."""
    policy = {"approvers": [], "escalate_to": ["bob"], "on_timeout": "approve"}
    text = notice_text(
        "approval_escalated", "run-1", request(policy=policy, escalated=True, expires_at="2026-12-01T10:00:00Z"), None
    )
    assert "approvers:" not in text and "bob" not in text.split("\n", 2)[2]
    assert "(then: deny)" in text
    listed = {"approvers": ["alice"], "escalate_to": ["bob"], "timeout_seconds": 60, "on_timeout": "approve"}
    text = notice_text(
        "approval_escalated", "run-1", request(policy=listed, escalated=True, expires_at="2026-12-01T10:00:00Z"), None
    )
    assert "approvers: alice, bob; quorum 1 (0 so far)" in text and "(then: approve)" in text


def test_commands_with_hostile_ids_stay_on_their_line() -> None:
    commands = ["signoff approve 'run\nx' call_1", "signoff deny 'run\nx' call_1 --reason 'why not'"]
    text = notice_text("approval_requested", "run\nx", request(), None, "https://ui/x", commands)
    assert text.count("\n") == 4 and "approve: `signoff approve 'run\\nx' call_1`" in text


def test_config_refuses_urls_that_are_not_http() -> None:
    for url in ("ftp://host/x", "hooks.example.com/x", "http:///path-only"):
        with pytest.raises(ConfigError, match="SIGNOFF_NOTIFY_URLS"):
            NotifyConfig(urls=(url,))


def test_config_from_env(tmp_path: Path) -> None:
    assert NotifyConfig.from_env(Environment({}), "localhost:7233", "default") is None
    secret = tmp_path / "secret"
    secret.write_text("s3cret-value\n")
    secret.chmod(0o600)
    env = {
        "SIGNOFF_NOTIFY_URLS": " http://a.example/1, http://a.example/1 ,https://b.example/2",
        "SIGNOFF_NOTIFY_SECRET_FILE": str(secret),
    }
    local = NotifyConfig.from_env(Environment(env), "localhost:7233", "default")
    assert local is not None and local.urls == ("http://a.example/1", "https://b.example/2")
    assert local.secret == b"s3cret-value" and local.cli_options == ""
    assert local.ui_root == "http://localhost:8233"  # a local server's UI, as the CLI derives it
    embedded = NotifyConfig.from_env(Environment(env), "localhost:7233", "default", "http://localhost:9233")
    assert embedded is not None and embedded.ui_root == "http://localhost:9233"
    remote = NotifyConfig.from_env(Environment(env), "temporal.internal:7233", "prod")
    assert remote is not None and remote.ui_root is None
    assert remote.cli_options == " --address temporal.internal:7233 --namespace prod"
    chosen = NotifyConfig.from_env(
        Environment({**env, "SIGNOFF_UI_URL": "https://ui/"}), "temporal.internal:7233", "prod"
    )
    assert chosen is not None and chosen.ui_root == "https://ui"
    assert "/1" not in repr(local) and "s3cret" not in repr(local) and "a.example" in local.describe()


@pytest.mark.parametrize("content", [None, ""])
def test_config_refuses_a_missing_or_empty_secret_file(tmp_path: Path, content: str | None) -> None:
    secret = tmp_path / "secret"
    if content is not None:
        secret.write_text(content)
        secret.chmod(0o600)
    env = {"SIGNOFF_NOTIFY_URLS": "http://a.example/1", "SIGNOFF_NOTIFY_SECRET_FILE": str(secret)}
    with pytest.raises(ConfigError, match="SIGNOFF_NOTIFY_SECRET_FILE"):
        NotifyConfig.from_env(Environment(env), "localhost:7233", "default")


async def post(url: str) -> ApplicationError | None:
    """Deliver one notice to `url` as the activity would; the error it raises, if any."""
    notice = NotifyInput(channel=channel_id(url), event="approval_requested", agent="a", seq=3, request=request())
    try:
        await ActivityEnvironment().run(deliver, NotifyConfig(urls=(url,), request_timeout=5), notice)
    except ApplicationError as exc:
        return exc
    return None


async def test_an_unreachable_channel_is_retried_and_its_secret_path_never_shown() -> None:
    error = await post(f"http://127.0.0.1:{free_port()}/services/T0/B0/SECRET-TOKEN?key=SECRET")
    assert error is not None and not error.non_retryable
    assert "SECRET" not in error.message and error.message.startswith("http://127.0.0.1:")


@pytest.mark.parametrize(
    "status, retryable", [(200, None), (204, None), (404, False), (302, False), (429, True), (503, True)]
)
async def test_the_answer_decides_whether_temporal_retries(status: int, retryable: bool | None) -> None:
    with Receiver(status=status) as receiver:
        error = await post(receiver.url)
    assert len(receiver.deliveries) == 1
    if retryable is None:
        assert error is None
    else:
        assert error is not None and error.non_retryable is not retryable and f"HTTP {status}" in error.message


async def test_retry_after_is_honoured() -> None:
    with Receiver(status=503, headers={"Retry-After": "7"}) as receiver:
        error = await post(receiver.url)
    assert error is not None and error.next_retry_delay == timedelta(seconds=7)
