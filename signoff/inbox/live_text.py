"""The model's text as it comes, on a call's page: one reader of each run's stream, fanned out.

A poll of a run's Workflow Stream is an update, recorded in the run's history, so the inbox
reads each run once, however many pages show it: `RunTexts` keeps one reader (topic
`tokens`, operator/stream.py) per run while at least one page listens, and gives every
listener the text so far (`turns`: each model turn's text, the latest attempt's), then each
delta as it comes (`text`: `{"turn", "text", "restart"}`), as server-sent events. The reader
stops when the last page goes, and ends when the run closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from temporalio.client import Client

from signoff.contract import TOPIC_TOKENS
from signoff.inbox.live import KEEPALIVE_SECONDS
from signoff.operator.stream import TurnText, follow

LISTENER_BACKLOG = 1000
"""Deltas a slow page may fall behind before it is sent the whole text again."""


class _RunReader:
    def __init__(self, client: Client, workflow_id: str) -> None:
        self.texts = TurnText()
        self.listeners: set[asyncio.Queue[dict[str, Any]]] = set()
        self.task = asyncio.ensure_future(self._read(client, workflow_id))

    async def _read(self, client: Client, workflow_id: str) -> None:
        with contextlib.suppress(Exception):  # a run gone, Temporal away: the pages keep what they have
            async for item in follow(client, workflow_id, topics=[TOPIC_TOKENS]):
                turn, text, over = self.texts.add(item.data)
                if text or over:
                    self._send({"turn": turn, "text": text, "restart": over})
        self._send({"closed": True})

    def _send(self, message: dict[str, Any]) -> None:
        for queue in list(self.listeners):
            if queue.full():  # too slow: start it over from the whole text
                while not queue.empty():
                    queue.get_nowait()
                queue.put_nowait({"turns": dict(self.texts.texts)})
            else:
                queue.put_nowait(message)


class RunTexts:
    """One stream reader per run that a page shows; every page of it gets the same text."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self._runs: dict[str, _RunReader] = {}

    @property
    def readers(self) -> int:
        """Runs read now (one reader each)."""
        return len(self._runs)

    async def listen(self, workflow_id: str) -> AsyncGenerator[dict[str, Any], None]:
        reader = self._runs.get(workflow_id)
        if reader is None or reader.task.done():
            reader = self._runs[workflow_id] = _RunReader(self.client, workflow_id)
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(maxsize=LISTENER_BACKLOG)
        reader.listeners.add(queue)
        try:
            yield {"turns": dict(reader.texts.texts)}
            while True:
                yield await queue.get()
        finally:
            reader.listeners.discard(queue)
            if not reader.listeners and self._runs.get(workflow_id) is reader:
                del self._runs[workflow_id]
                reader.task.cancel()

    async def close(self) -> None:
        for reader in self._runs.values():
            reader.task.cancel()
        self._runs.clear()


async def text_stream(texts: RunTexts, workflow_id: str) -> AsyncIterator[str]:
    """`text/event-stream`: `turns` (the whole text), then `text` per delta; `closed` once the run is."""
    yield "retry: 2000\n\n"
    messages = texts.listen(workflow_id)
    pending: asyncio.Future[dict[str, Any]] | None = None
    try:
        while True:
            pending = pending or asyncio.ensure_future(anext(messages))
            done, _ = await asyncio.wait({pending}, timeout=KEEPALIVE_SECONDS)
            if not done:
                yield ": keepalive\n\n"
                continue
            message, pending = pending.result(), None
            kind = "turns" if "turns" in message else "closed" if "closed" in message else "text"
            yield f"event: {kind}\ndata: {json.dumps(message, ensure_ascii=True, separators=(',', ':'))}\n\n"
            if kind == "closed":
                return
    finally:
        if pending is not None:
            pending.cancel()
            with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                await pending
        await messages.aclose()
