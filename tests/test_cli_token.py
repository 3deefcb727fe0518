"""`signoff token issue | verify`: real subprocesses for what operators run, `main()` for exit codes."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from signoff.approval.identity import ApproverKeys
from signoff.cli.main import main
from signoff.cli.token import parse_duration
from signoff.config.environment import Environment
from signoff.runtime.settings import read_approver_keys
from tests.approver_keys import public_pem, rsa_key, sign, write_secret
from tests.processes import REPO, clean_env


def client(*args: str, **env: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "client.py", *args],
        check=False,
        cwd=REPO,
        env=clean_env(**env),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_issued_token_is_the_only_output_and_verifies_as_the_worker_would(tmp_path: Path) -> None:
    key = tmp_path / "approver.key"
    write_secret(key)
    before = datetime.now(UTC).replace(microsecond=0)
    done = client(
        "token",
        "issue",
        "--sub",
        "alice",
        "--groups",
        "sre,oncall",
        "--groups",
        "db",
        "--key-file",
        str(key),
        "--ttl",
        "15m",
        "--issuer",
        "team",
        "--audience",
        "signoff",
    )
    assert (done.returncode, done.stderr) == (0, "")
    token = done.stdout.removesuffix("\n")
    assert "\n" not in token and token.count(".") == 2
    identity = ApproverKeys.load(key, issuer="team", audience="signoff").verify(token)
    assert (identity.subject, identity.groups) == ("alice", ("sre", "oncall", "db"))
    assert identity.expires_at is not None
    assert before + timedelta(minutes=15) <= identity.expires_at <= datetime.now(UTC) + timedelta(minutes=15)


def test_issue_takes_key_file_issuer_and_audience_from_the_worker_environment(tmp_path: Path) -> None:
    write_secret(tmp_path / "approver.key")
    env: dict[str, str | Path] = {
        "SIGNOFF_APPROVER_KEYS": tmp_path / "approver.key",
        "SIGNOFF_APPROVER_ISSUER": "team",
        "SIGNOFF_APPROVER_AUDIENCE": "signoff",
    }
    done = client("token", "issue", "--sub", "bob", **env)
    assert done.returncode == 0, done.stderr
    keys = read_approver_keys(Environment({k: str(v) for k, v in env.items()}))
    assert keys is not None and keys.verify(done.stdout).subject == "bob"


def test_verify_prints_the_identity_or_exits_1_saying_why(tmp_path: Path) -> None:
    write_secret(tmp_path / "k", "s" * 40)
    good = sign("s" * 40, "HS256", iat=None, exp=int((datetime.now(UTC) + timedelta(minutes=5)).timestamp()))
    done = client("token", "verify", good, SIGNOFF_APPROVER_KEYS=tmp_path / "k")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["subject"] == "alice"
    expired = sign("s" * 40, "HS256", exp=1_000_000_000)
    done = client("token", "verify", SIGNOFF_APPROVER_KEYS=tmp_path / "k", SIGNOFF_APPROVER_TOKEN=expired)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.startswith("signoff: token refused (expired): the token expired at 2001-09-09")


@pytest.mark.parametrize(
    "args",
    [
        ["token"],
        ["token", "issue"],
        ["token", "issue", "--sub", "a", "--ttl", "1w"],
        ["token", "issue", "--sub", "a", "--ttl", "0s"],
        ["token", "issue", "--sub", "", "--key-file", "KEY"],
        ["token", "issue", "--sub", "a"],
    ],
)
def test_usage_errors_exit_2(
    args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("SIGNOFF_APPROVER_KEYS", raising=False)
    write_secret(tmp_path / "k")
    assert main([a.replace("KEY", str(tmp_path / "k")) for a in args]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err


def test_public_key_file_cannot_issue_and_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "k.pem").write_bytes(public_pem(rsa_key()))
    assert main(["token", "issue", "--sub", "alice", "--key-file", str(tmp_path / "k.pem")]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "identity provider" in captured.err


def test_short_secret_cannot_issue_and_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_secret(tmp_path / "k", "too-short")
    assert main(["token", "issue", "--sub", "alice", "--key-file", str(tmp_path / "k")]) == 1
    assert "at least 32" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90s", timedelta(seconds=90)),
        ("15m", timedelta(minutes=15)),
        ("1h", timedelta(hours=1)),
        ("2d", timedelta(days=2)),
        ("45", timedelta(seconds=45)),
    ],
)
def test_durations(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "1w", "1.5h", "-1h", "0m", "367d", "99999999999999d", "1 h"])
def test_bad_durations_are_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        parse_duration(text)
