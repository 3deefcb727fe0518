"""Every secret file a setting names is read without stalling on what sits at its path."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from signoff.activities.notify import read_notify_secret
from signoff.activities.state import read_state_key
from signoff.approval.keyfile import read_key_file as read_approver_keys
from signoff.chat.config import read_api_key_file
from signoff.config.environment import S3_SECRET_ACCESS_KEY_FILE_ENV
from signoff.errors import ConfigError
from signoff.runtime import s3store
from signoff.runtime.codec import CodecKeys
from signoff.tools.mcp import MCPServer

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
    error = outcome_within_guard(READERS[setting], tmp_path / "secret")
    assert isinstance(error, ConfigError) and "larger than" in str(error), error
