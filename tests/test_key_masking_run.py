"""A provider echoing the key in its errors, on the real dev server: the key is nowhere.

The provider answers three attempts of the first model turn: an SSE `event: error`
quoting the whole key, a mid-stream `{"error": ...}` chunk quoting all but its last two
characters, then a 401 quoting all but its first two (not retried, so the run fails
after ~3 s of Temporal's backoff). Every place an operator or a log sees errors is
checked: `describe` while the turn is retried, the history, the run's failure, the
`result` command's output and the worker's log.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.json_format import MessageToJson
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle

from tests.helpers import (
    Reply,
    ScriptedModelServer,
    ScriptedRequest,
    agents_for,
    running_worker,
    start_run,
)
from tests.processes import REPO, clean_env
from tests.waiting import assert_eventually

KEY = "sk-proj-Hq3W8eZr5Ty1Uo9Ip7As"
ECHOES = [
    Reply.failing_stream(f"Incorrect API key provided: {KEY}", text="Thinking"),
    Reply.failing_stream(f"quota exceeded for key {KEY[:-2]}", event=False),
    Reply.error(401, f"Incorrect API key provided: {KEY[2:]}. You can find your key at ..."),
]


def runs_of_key(text: str) -> list[str]:
    return [KEY[i : i + 8] for i in range(len(KEY) - 7) if KEY[i : i + 8] in text]


def echoing_script() -> Callable[[ScriptedRequest], Reply]:
    lock, attempts = threading.Lock(), itertools.count()

    def script(request: ScriptedRequest) -> Reply:
        with lock:
            return ECHOES[min(next(attempts), len(ECHOES) - 1)]

    return script


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedModelServer]:
    monkeypatch.setenv("SIGNOFF_LLM_API_KEY", KEY)  # what the worker's chat client reads
    with ScriptedModelServer(echoing_script()) as server:
        yield server


async def described(handle: WorkflowHandle[Any, Any], expected: str) -> str:
    """`describe` as JSON, once the pending model turn's last failure mentions `expected`."""

    async def check() -> str:
        text = MessageToJson((await handle.describe()).raw_description)
        assert expected in text, text
        return text

    return await assert_eventually(check, timeout=15)


def failure_chain(exc: BaseException) -> str:
    texts: list[str] = []
    current: BaseException | None = exc
    while current is not None:
        texts.append(str(current))
        current = getattr(current, "cause", None) or current.__cause__
    return "\n".join(texts)


async def test_key_echoed_by_the_provider_reaches_no_history_describe_result_or_log(
    client: Client, task_queue: str, model: ScriptedModelServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="temporalio")
    async with running_worker(client, task_queue, model, agents_for(tmp_path)):
        handle = await start_run(client, task_queue, "hello")
        seen = [
            await described(handle, "provider sent an error event"),
            await described(handle, "provider reported an error mid-stream"),
        ]
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()
        history = (await handle.fetch_history()).to_json()
    address = client.service_client.config.target_host
    cli = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, str(REPO / "client.py"), "result", handle.id],
        env=clean_env(TEMPORAL_ADDRESS=address, NO_COLOR="1"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    shown = {
        "describe": "\n".join(seen),
        "history": history,
        "failure": failure_chain(failed.value),
        "result command": cli.stdout + cli.stderr,
        "worker log": caplog.text,
    }

    assert model.request_count == 3
    for place, text in shown.items():
        assert "***" in text, f"{place} does not show the provider's (masked) error:\n{text}"
        assert runs_of_key(text) == [], f"{place} holds part of the key:\n{text}"
    assert "provider reported an error mid-stream" in history  # the retried turn's last failure
    assert "provider returned HTTP 401: Incorrect API key provided: ***." in shown["failure"]
    assert "provider sent an error event" in caplog.text
