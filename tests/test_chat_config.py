"""LLMConfig: built from the environment or a preset, validated when built."""

from __future__ import annotations

from typing import Any

import pytest

import signoff.chat
from signoff.chat import PRESETS, LLMConfig
from signoff.config.environment import Environment
from signoff.errors import ConfigError


def test_from_env_reads_base_url_and_model() -> None:
    env = {"SIGNOFF_LLM_BASE_URL": "https://llm.example.com/v1/", "SIGNOFF_LLM_MODEL": "m1"}
    cfg = LLMConfig.from_env(Environment(env))
    assert (cfg.base_url, cfg.model, cfg.api_key_env) == (
        "https://llm.example.com/v1",
        "m1",
        "SIGNOFF_LLM_API_KEY",
    )


def test_from_env_accepts_a_preset_name_with_its_default_model() -> None:
    cfg = LLMConfig.from_env(Environment({"SIGNOFF_LLM_BASE_URL": "deepseek"}))
    assert (cfg.base_url, cfg.model) == ("https://api.deepseek.com/v1", "deepseek-chat")


def test_from_env_model_overrides_the_presets_default() -> None:
    cfg = LLMConfig.from_env(Environment({"SIGNOFF_LLM_BASE_URL": "openai", "SIGNOFF_LLM_MODEL": "gpt-4.1"}))
    assert (cfg.base_url, cfg.model) == (PRESETS["openai"], "gpt-4.1")


def test_from_env_without_base_url_names_the_variable_to_set() -> None:
    with pytest.raises(ConfigError, match="SIGNOFF_LLM_BASE_URL is not set"):
        LLMConfig.from_env(Environment({"SIGNOFF_LLM_MODEL": "m"}))


def test_from_env_with_a_url_but_no_model_names_the_variable_to_set() -> None:
    with pytest.raises(ConfigError, match="SIGNOFF_LLM_MODEL is not set"):
        LLMConfig.from_env(Environment({"SIGNOFF_LLM_BASE_URL": "http://localhost:9999/v1"}))


def test_from_env_defaults_to_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIGNOFF_LLM_BASE_URL", "ollama")
    monkeypatch.setenv("SIGNOFF_LLM_MODEL", "qwen2.5")
    assert LLMConfig.from_env() == LLMConfig(base_url="http://localhost:11434/v1", model="qwen2.5")


def test_preset_without_a_default_model_needs_one() -> None:
    with pytest.raises(ConfigError, match="pass model"):
        LLMConfig.preset("vllm")
    assert LLMConfig.preset("vllm", model="my-model").base_url == "http://localhost:8000/v1"


def test_unknown_preset_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="deepseek, openai, ollama, vllm"):
        LLMConfig.preset("anthropic")


@pytest.mark.parametrize("url", ["ftp://host/v1", "localhost:8000/v1", "https://", "http://h/v1?x=1"])
def test_base_url_must_be_plain_http_or_https(url: str) -> None:
    with pytest.raises(ConfigError, match="base URL"):
        LLMConfig(base_url=url, model="m")


def test_credentials_in_the_base_url_are_refused_without_echoing_them() -> None:
    with pytest.raises(ConfigError) as caught:
        LLMConfig(base_url="https://user:hunter2@llm.example.com/v1", model="m")
    assert "hunter2" not in str(caught.value)


@pytest.mark.parametrize("field", ["connect_timeout", "read_timeout"])
def test_timeouts_must_be_positive(field: str) -> None:
    timeout: dict[str, Any] = {field: 0}
    with pytest.raises(ConfigError, match=field):
        LLMConfig(base_url="http://h/v1", model="m", **timeout)


def test_empty_model_is_refused() -> None:
    with pytest.raises(ConfigError, match="model"):
        LLMConfig(base_url="http://h/v1", model=" ")


def test_chat_package_exports_what_we_mean() -> None:
    assert sorted(signoff.chat.__all__) == sorted(
        ["ChatClient", "ChatOptions", "OnText", "OpenAIChatClient", "LLMConfig", "PRESETS"]
    )


def test_openai_client_satisfies_the_chat_client_protocol() -> None:
    client = signoff.chat.OpenAIChatClient(LLMConfig(base_url="http://h/v1", model="m"))
    assert isinstance(client, signoff.chat.ChatClient)
