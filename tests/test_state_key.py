"""The state key seals what runs carry across continue-as-new: where it comes from, and what
the worker says about it (`SIGNOFF_STATE_KEY_FILE`, `.signoff/state.key`)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from signoff.activities.state import read_state_key
from signoff.errors import ConfigError
from tests.helpers import agents_for, worker_settings


def test_a_key_file_is_read_and_a_short_or_unreadable_one_stops_the_worker(tmp_path: Path) -> None:
    (tmp_path / "good").write_text("s" * 48 + "\n")
    (tmp_path / "good").chmod(0o600)
    (tmp_path / "short").write_text("s" * 16)
    (tmp_path / "short").chmod(0o600)
    assert read_state_key(tmp_path / "good") == b"s" * 48
    with pytest.raises(ConfigError, match="at least 32"):
        read_state_key(tmp_path / "short")
    with pytest.raises(ConfigError, match="cannot read"):
        read_state_key(tmp_path / "missing")
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(ConfigError, match="not a regular file"):
        read_state_key(tmp_path / "fifo")


def test_with_the_embedded_server_the_worker_makes_its_own_key_owner_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    first = worker_settings(agents_for(tmp_path), {}, local=True)
    again = worker_settings(agents_for(tmp_path), {}, local=True)
    key = tmp_path / ".signoff" / "state.key"
    assert first.state_key and first.state_key == again.state_key == key.read_bytes().strip()
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    assert "continue-as-new state: sealed with the key in .signoff/state.key" in first.describe()


def test_without_a_key_on_a_configured_cluster_the_worker_says_what_it_checks_instead(tmp_path: Path) -> None:
    setup = worker_settings(agents_for(tmp_path), {})
    assert setup.state_key is None
    assert any(
        "checked with the server only (set SIGNOFF_STATE_KEY_FILE to seal it)" in line for line in setup.describe()
    )
    (tmp_path / "state.key").write_text("k" * 40)
    (tmp_path / "state.key").chmod(0o600)
    named = worker_settings(agents_for(tmp_path), {"SIGNOFF_STATE_KEY_FILE": str(tmp_path / "state.key")})
    assert named.state_key == b"k" * 40
