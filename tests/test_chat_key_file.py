"""SIGNOFF_LLM_API_KEY_FILE: the key read from a mounted file, with clear errors that never quote it."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from signoff.chat import LLMConfig, OpenAIChatClient
from signoff.chat.config import read_api_key_file
from signoff.config.environment import Environment
from signoff.errors import ConfigError
from signoff.messages import ChatMessage
from signoff.testing import Reply, ScriptedModelServer

KEY = "sk-file-9d8c7b6a5f4e3d2c"
BASE = {"SIGNOFF_LLM_BASE_URL": "http://m.test/v1", "SIGNOFF_LLM_MODEL": "m"}


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    path = tmp_path / "llm_key"
    path.write_text(f"  {KEY}\n")  # as `echo` or an editor leaves it
    path.chmod(0o600)
    path.chmod(0o600)
    return path


def test_from_env_reads_the_key_from_the_file_without_surrounding_whitespace(key_file: Path) -> None:
    cfg = LLMConfig.from_env(Environment({**BASE, "SIGNOFF_LLM_API_KEY_FILE": str(key_file)}))
    assert (cfg.api_key_file, cfg.api_key()) == (str(key_file), KEY)


def test_from_env_passes_the_key_file_to_a_preset(key_file: Path) -> None:
    cfg = LLMConfig.from_env(
        Environment({"SIGNOFF_LLM_BASE_URL": "deepseek", "SIGNOFF_LLM_API_KEY_FILE": str(key_file)})
    )
    assert cfg.api_key() == KEY


async def test_the_key_from_the_file_is_sent_and_a_rotated_file_is_read_again(key_file: Path) -> None:
    with ScriptedModelServer([Reply.text("a"), Reply.text("b")]) as server:
        cfg = LLMConfig(base_url=server.base_url, model="m", api_key_file=str(key_file))
        async with OpenAIChatClient(cfg) as client:
            await client.complete([ChatMessage.user("hi")], [])
            key_file.write_text("sk-rotated-0000000000\n")
            key_file.chmod(0o600)
            await client.complete([ChatMessage.user("hi")], [])
    sent = [r.headers["authorization"] for r in server.requests]
    assert sent == [f"Bearer {KEY}", "Bearer sk-rotated-0000000000"]


def test_the_file_wins_over_the_environment_variable_when_configured_in_code(
    key_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SIGNOFF_LLM_API_KEY", "sk-from-env-1111111111")
    cfg = LLMConfig(base_url="http://m.test/v1", model="m", api_key_file=str(key_file))
    assert cfg.api_key() == KEY


def test_setting_both_variables_is_an_error_that_quotes_neither(key_file: Path) -> None:
    env = {**BASE, "SIGNOFF_LLM_API_KEY_FILE": str(key_file), "SIGNOFF_LLM_API_KEY": "sk-env-2222222222"}
    with pytest.raises(ConfigError, match="both SIGNOFF_LLM_API_KEY and SIGNOFF_LLM_API_KEY_FILE") as caught:
        LLMConfig.from_env(Environment(env))
    assert "sk-env" not in str(caught.value) and KEY not in str(caught.value)


def test_an_empty_key_variable_beside_the_file_is_not_a_conflict(key_file: Path) -> None:
    env = {**BASE, "SIGNOFF_LLM_API_KEY_FILE": str(key_file), "SIGNOFF_LLM_API_KEY": ""}
    assert LLMConfig.from_env(Environment(env)).api_key() == KEY


def test_a_missing_file_is_a_config_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(ConfigError, match=f"API key file '{missing}' .* does not exist"):
        LLMConfig.from_env(Environment({**BASE, "SIGNOFF_LLM_API_KEY_FILE": str(missing)}))


def test_an_empty_file_is_a_config_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.write_text(" \n")
    empty.chmod(0o600)
    with pytest.raises(ConfigError, match=f"'{empty}' .* is empty"):
        LLMConfig(base_url="http://m.test/v1", model="m", api_key_file=str(empty))


def test_a_directory_is_not_a_key_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is not a regular file"):
        read_api_key_file(str(tmp_path))


def test_a_fifo_is_refused_at_once_rather_than_hanging_the_worker(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    outcome: list[BaseException] = []

    def read() -> None:
        with pytest.raises(ConfigError) as refused:
            read_api_key_file(str(fifo))
        outcome.append(refused.value)

    reader = threading.Thread(target=read)
    reader.start()
    reader.join(10)
    if reader.is_alive():  # unblock it: open the write end once
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("reading a FIFO key file blocked")
    assert "is not a regular file" in str(outcome[0])


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file; the unreadable case needs another user")
def test_an_unreadable_file_is_a_config_error(key_file: Path) -> None:
    key_file.chmod(0)
    with pytest.raises(ConfigError, match="is not readable by this worker"):
        read_api_key_file(str(key_file))


def test_a_file_that_goes_missing_fails_the_request_with_a_keyless_error(key_file: Path) -> None:
    cfg = LLMConfig(base_url="http://m.test/v1", model="m", api_key_file=str(key_file))
    key_file.unlink()
    with pytest.raises(ConfigError, match="does not exist") as caught:
        cfg.api_key()
    assert KEY not in str(caught.value)


def test_a_key_pasted_where_the_path_belongs_is_not_echoed() -> None:
    with pytest.raises(ConfigError) as caught:
        LLMConfig.from_env(Environment({**BASE, "SIGNOFF_LLM_API_KEY_FILE": KEY}))
    message = str(caught.value)
    assert KEY not in message and KEY[:8] not in message
    assert "SIGNOFF_LLM_API_KEY_FILE" in message and "may be the key itself" in message


def test_a_path_that_cannot_be_opened_is_a_config_error_naming_it(key_file: Path) -> None:
    below_a_file = f"{key_file}/key"
    with pytest.raises(ConfigError, match=f"'{below_a_file}' .* cannot be opened: Not a directory"):
        read_api_key_file(below_a_file)


async def test_the_key_is_in_no_repr(key_file: Path) -> None:
    cfg = LLMConfig(base_url="http://m.test/v1", model="m", api_key_file=str(key_file))
    async with OpenAIChatClient(cfg) as client:
        assert KEY not in repr(cfg) and KEY not in repr(client)
