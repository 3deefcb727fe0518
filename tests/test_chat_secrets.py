"""The API key is read from the environment per request and never shown anywhere."""

from __future__ import annotations

import pytest

from signoff.chat import LLMConfig, OpenAIChatClient
from signoff.errors import ProviderError
from signoff.messages import ChatMessage
from signoff.testing import Reply, ScriptedModelServer

KEY = "sk-test-7f3a9c1e5b"
KEY_ENV = "SIGNOFF_TEST_CHAT_KEY"


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, KEY)
    return KEY


async def complete_once(reply: Reply) -> tuple[ScriptedModelServer, OpenAIChatClient]:
    with ScriptedModelServer([reply]) as server:
        cfg = LLMConfig(base_url=server.base_url, model="m", api_key_env=KEY_ENV)
        async with OpenAIChatClient(cfg) as client:
            await client.complete([ChatMessage.user("hi")], [])
    return server, client


async def test_api_key_is_sent_as_a_bearer_header(key: str) -> None:
    server, _ = await complete_once(Reply.text("ok"))
    assert server.requests[0].headers["authorization"] == f"Bearer {key}"


async def test_no_authorization_header_without_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    server, _ = await complete_once(Reply.text("ok"))
    assert "authorization" not in server.requests[0].headers


async def test_key_is_read_when_the_request_is_made(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = LLMConfig(base_url="http://m.test/v1", model="m", api_key_env=KEY_ENV)
    monkeypatch.setenv(KEY_ENV, "rotated-key")
    assert cfg.api_key() == "rotated-key"


async def test_key_appears_in_no_error_repr_or_config(key: str) -> None:
    with pytest.raises(ProviderError) as caught:
        await complete_once(Reply.error(401, f"Incorrect API key provided: {key}"))
    cfg = LLMConfig(base_url="http://m.test/v1", model="m", api_key_env=KEY_ENV)
    client = OpenAIChatClient(cfg)
    shown = [
        str(caught.value),
        repr(caught.value),
        caught.value.message,
        repr(client),
        repr(cfg),
        str(cfg),
    ]
    assert not any(key in text for text in shown)
    assert caught.value.message == "Incorrect API key provided: ***"
    await client.aclose()


def test_extra_header_values_stay_out_of_the_repr() -> None:
    cfg = LLMConfig(base_url="http://m.test/v1", model="m", headers={"api-key": "secret-header"})
    assert "secret-header" not in repr(cfg)
