"""The model's text as it comes: one model turn's deltas published to the run's Workflow Stream.

Every `AgentRun` hosts a Workflow Stream (`temporalio.contrib.workflow_streams`); the chat
activity publishes what the model writes to its topic `tokens` as items `{"turn", "text",
"attempt"}`. Each publish is a signal, recorded in the run's history, so the deltas are
batched: the first delta goes at once (the time to first token), later ones are gathered for
a pause that grows after each signal (`FIRST_PAUSE` times `PAUSE_GROWTH`, at most
`LONGEST_PAUSE`), and one model turn sends at most `MAX_SIGNALS` signals: what comes after
the last but one waits for the turn's end. Each signal carries one item, the deltas gathered
since the previous one joined, so an item is never a lone token.

The stream is a view: a publish that fails (the server unreachable, the run closed) stops
this turn's publishing and never fails the model turn, whose answer is recorded all the
same. A retried activity publishes its turn's text again, from the start, with the next
`attempt`: a reader shows the latest attempt of a turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from temporalio import activity
from temporalio.contrib.workflow_streams import WorkflowStreamClient

from signoff.contract import TOPIC_TOKENS

log = logging.getLogger(__name__)

MAX_SIGNALS = 24
"""The most signals one model turn publishes (bench/streams.py measures it)."""
FIRST_PAUSE = 0.1
"""Seconds gathered after the first signal before the next."""
PAUSE_GROWTH = 1.5
LONGEST_PAUSE = 2.0


class TokenStream:
    """One model turn's text deltas, batched into at most `MAX_SIGNALS` signals to its run."""

    def __init__(self, client: WorkflowStreamClient, turn: int, attempt: int) -> None:
        self._client = client
        self._topic = client.topic(TOPIC_TOKENS)
        self.turn, self.attempt = turn, attempt
        self._buffer: list[str] = []
        self._wake = asyncio.Event()
        self._closing = False
        self._broken = False
        self.signals = 0
        """Signals sent so far."""
        self.first_sent_at: float | None = None
        """`time.monotonic()` once the first delta was signalled."""

    def on_text(self, delta: str) -> None:
        """The chat client's callback: keep the delta; wake the publisher."""
        if delta and not self._broken:
            self._buffer.append(delta)
            self._wake.set()

    async def run(self) -> None:
        """Publish what gathers until `close`; pause between signals; keep the last for the end."""
        pause = FIRST_PAUSE
        while not self._broken:
            await self._until(lambda: bool(self._buffer) or self._closing)
            if self._closing:
                await self._send()
                return
            if self.signals >= MAX_SIGNALS - 1:  # the last one is the turn's end
                await self._until(lambda: self._closing)
                continue
            await self._send()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._until(lambda: self._closing), timeout=pause)
            pause = min(pause * PAUSE_GROWTH, LONGEST_PAUSE)

    async def _until(self, condition: Callable[[], bool]) -> None:
        while not condition():
            self._wake.clear()
            await self._wake.wait()

    async def _send(self) -> None:
        if not self._buffer or self._broken:
            return
        text = "".join(self._buffer)
        self._buffer.clear()
        item: dict[str, Any] = {"turn": self.turn, "text": text, "attempt": self.attempt}
        self._topic.publish(item)
        try:
            await self._client.flush()
        except Exception as exc:  # a view: never fail the model turn for it
            log.warning("signoff: stopped publishing turn %s's text to the run's stream: %s", self.turn, exc)
            self._broken = True
            return
        self.signals += 1
        if self.first_sent_at is None:
            self.first_sent_at = time.monotonic()

    def close(self) -> None:
        self._closing = True
        self._wake.set()


@contextlib.asynccontextmanager
async def published_tokens(turn: int | None) -> AsyncIterator[TokenStream | None]:
    """Within a chat activity: a `TokenStream` to the activity's run for model turn `turn`
    (None, and nothing published, when the run did not ask for it). Leaving the block sends
    what remains."""
    if turn is None:
        yield None
        return
    info = activity.info()
    stream = TokenStream(WorkflowStreamClient.from_within_activity(), turn, info.attempt)
    task = asyncio.create_task(stream.run())
    try:
        yield stream
    finally:
        stream.close()
        try:
            await task
        except Exception as exc:  # never the model turn's failure
            log.warning("signoff: the run's token stream ended with %s", exc)
