"""Every secret file a setting names is read without stalling on what sits at its path, and
only if it is its owner's alone: one that group or others may read is refused, naming the file
and the `chmod` that fixes it (issue 27, weak points)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from signoff.activities.notify import read_notify_secret
from signoff.activities.state import read_state_key
from signoff.approval.keyfile import read_key_file as read_approver_keys
from signoff.chat.config import read_api_key_file
from signoff.cli.codec import read_token
from signoff.config.environment import S3_SECRET_ACCESS_KEY_FILE_ENV
from signoff.config.smallfile import read_secret_line
from signoff.errors import CommandError, ConfigError
from signoff.runtime import s3store
from signoff.runtime.codec import CodecKeys
from signoff.signing.keys import SigningKey
from signoff.tools.mcp import MCPServer
from tests.approver_keys import ed25519_key, jwk, public_pem, write_jwks

HANG_GUARD = 10  # seconds: only to turn a hang into a failure


def s3_secret(path: Path) -> object:
    """The S3 session reads the file `SIGNOFF_S3_SECRET_ACCESS_KEY_FILE` names (set by `secret`)."""
    return s3store._session()


READERS: dict[str, Callable[[Path], Any]] = {
    "SIGNOFF_LLM_API_KEY_FILE": lambda p: read_api_key_file(str(p)),
    "SIGNOFF_APPROVER_KEYS": read_approver_keys,
    "SIGNOFF_NOTIFY_SECRET_FILE": read_notify_secret,
    "SIGNOFF_S3_SECRET_ACCESS_KEY_FILE": s3_secret,
    "SIGNOFF_CODEC_KEYS": CodecKeys.read,
    "SIGNOFF_MCP_CONFIG": MCPServer.load_all,  # its headers and env may hold tokens
    "SIGNOFF_STATE_KEY_FILE": read_state_key,
}


def secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
    monkeypatch.setenv(S3_SECRET_ACCESS_KEY_FILE_ENV, str(tmp_path / "secret"))
    return tmp_path / "secret"


def outcome_within_guard(read: Callable[[Path], Any], path: Path) -> BaseException | None:
    """What reading raised; fails the test if it does not return (a daemon thread is left)."""
    found: list[BaseException | None] = []

    def attempt() -> None:
        try:
            read(path)
            found.append(None)
        except BaseException as exc:
            found.append(exc)

    thread = threading.Thread(target=attempt, daemon=True)
    thread.start()
    thread.join(HANG_GUARD)
    assert found, f"reading {path} did not return within {HANG_GUARD} s"
    return found[0]


@pytest.mark.parametrize("setting", READERS)
def test_a_fifo_at_a_secret_path_is_refused_at_once(
    setting: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    os.mkfifo(secret(tmp_path, monkeypatch))
    error = outcome_within_guard(READERS[setting], tmp_path / "secret")
    assert isinstance(error, ConfigError) and "not a regular file" in str(error), error


@pytest.mark.parametrize("setting", READERS)
def test_an_oversized_secret_file_is_refused(setting: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret(tmp_path, monkeypatch).write_bytes(b"k" * 2_000_000)  # over every reader's limit (JWKS files may be 1 MiB)
    (tmp_path / "secret").chmod(0o600)
    error = outcome_within_guard(READERS[setting], tmp_path / "secret")
    assert isinstance(error, ConfigError) and "larger than" in str(error), error


# --- who may read a secret file ------------------------------------------------------------


def private_pem() -> bytes:
    return ed25519.Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


SECRETS: dict[str, tuple[Callable[[Path], Any], bytes]] = {
    "SIGNOFF_LLM_API_KEY_FILE": (READERS["SIGNOFF_LLM_API_KEY_FILE"], b"sk-test-0123456789\n"),
    "SIGNOFF_APPROVER_KEYS (an HS256 secret)": (read_approver_keys, b"s" * 48 + b"\n"),
    "SIGNOFF_APPROVER_KEY_FILE (a private key)": (SigningKey.load, private_pem()),
    "SIGNOFF_APPROVER_KEY_FILE (an HS256 secret)": (SigningKey.load, b"s" * 48 + b"\n"),
    "SIGNOFF_INBOX_SIGNING_KEY_FILE": (SigningKey.load, b"i" * 48 + b"\n"),  # the inbox loads it as SigningKey
    "SIGNOFF_NOTIFY_SECRET_FILE": (read_notify_secret, b"n" * 32),
    "SIGNOFF_S3_SECRET_ACCESS_KEY_FILE": (s3_secret, b"minio-secret-0123"),
    "SIGNOFF_CODEC_KEYS": (CodecKeys.read, b"2026-06:" + b"QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE=\n"),
    "SIGNOFF_STATE_KEY_FILE": (read_state_key, b"k" * 48),
    "SIGNOFF_CODEC_SERVER_TOKEN_FILE": (lambda p: read_token(str(p)), b"t" * 32),
    "SIGNOFF_SLACK_BOT_TOKEN_FILE": (lambda p: read_secret_line(p, "SIGNOFF_SLACK_BOT_TOKEN_FILE"), b"xoxb-1-2-3\n"),
    "SIGNOFF_SLACK_SIGNING_SECRET_FILE": (lambda p: read_secret_line(p, "SIGNOFF_SLACK_SIGNING_SECRET_FILE"), b"abc\n"),
}


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660], ids=oct)
@pytest.mark.parametrize("setting", SECRETS)
def test_a_secret_file_group_or_others_may_read_is_refused_naming_it_and_the_fix(
    setting: str, mode: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read, contents = SECRETS[setting]
    path = secret(tmp_path, monkeypatch)
    path.write_bytes(contents)
    path.chmod(mode)
    error = outcome_within_guard(read, path)
    assert isinstance(error, ConfigError | CommandError), error
    message = str(error)
    assert f"{path} can be read" in message and f"(mode {mode:04o})" in message, message
    assert f"chmod 600 {path}" in message, message
    path.chmod(0o600)
    assert outcome_within_guard(read, path) is None  # the control: its owner's alone, it is read


def test_the_message_says_who_may_read_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = secret(tmp_path, monkeypatch)
    path.write_bytes(b"k" * 48)
    for mode, who in [(0o640, "group"), (0o604, "others"), (0o644, "group and others")]:
        path.chmod(mode)
        assert f"can be read by {who} (mode" in str(outcome_within_guard(read_state_key, path))


def test_a_file_of_public_keys_may_be_read_by_anyone_but_changed_only_by_its_owner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pem, jwks = tmp_path / "approvers.pem", tmp_path / "approvers.jwks"
    pem.write_bytes(public_pem(ed25519_key()))
    write_jwks(jwks, jwk(ed25519_key(), "alice-1", sub="alice"))
    for path in (pem, jwks):
        path.chmod(0o644)
        assert read_approver_keys(path).keys  # public: nothing to hide
        path.chmod(0o664)
        with pytest.raises(ConfigError) as refused:
            read_approver_keys(path)
        assert f"{path} can be changed by group (mode 0664)" in str(refused.value)
        assert f"chmod go-w {path}" in str(refused.value)


def test_an_mcp_config_others_may_change_is_refused(tmp_path: Path) -> None:
    """Its stdio servers run as the worker: whoever may change it may run code as the worker."""
    config = tmp_path / "mcp.json"
    config.write_text('{"mcpServers": {}}')
    config.chmod(0o644)
    assert MCPServer.load_all(config) == []
    config.chmod(0o646)
    with pytest.raises(ConfigError) as refused:
        MCPServer.load_all(config)
    assert f"{config} can be changed by others (mode 0646)" in str(refused.value)
