"""Live updates: the namespace's waiting calls, watched while someone looks, as server-sent events.

While at least one page listens (`GET /events`), the watcher lists the waiting calls every
`interval` seconds (visibility, then each waiting run's `status` query) and, when the set
changed, sends every listener the whole state: the keys of the calls that wait (with their
vote counts) and how the calls that stopped waiting were decided (the run's `audit`
query), with when the scan began. Each message is the whole state, not a change: a page that reloads or reconnects
gets it at once and reconciles, so nothing is lost (calls that came meanwhile appear) and
nothing is resurrected (a call decided meanwhile shows as decided, by whom). A page
ignores a state older than itself (a call it lists may be newer than that scan).

Under `SIGNOFF_INBOX_SCOPE=mine` each listener gets the state of the calls it may see: the
waiting calls it may decide, and how the calls it could see were decided (`known`).

A viewer may hold at most `MAX_STREAMS_PER_VIEWER` streams open at once (a tab each): one more
is refused with 429 and a plain message, so nobody the inbox knows can tie it up with streams.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import time
from collections import Counter, OrderedDict
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any

from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send
from temporalio.client import Client

from signoff.approval.names import name_key
from signoff.errors import CommandError
from signoff.inbox.calls import Decided, WaitingCall, every_waiting_call, how_decided
from signoff.operator.waiting import bounded
from signoff.text.neutral import neutralise

DECIDED_KEPT = 1000
WATCHED = 5000
"""The most waiting calls the watcher follows (the list itself pages through any number)."""
KEEPALIVE_SECONDS = 15.0
FRESH_SECONDS = 0.2
MAX_STREAMS_PER_VIEWER = 8
"""Event streams one viewer may hold open at once (one per open tab; browsers allow six
connections to a host over HTTP/1.1 anyway)."""
Visible = Callable[[WaitingCall], bool]
"""Which calls a listener may see (None: all)."""


class Watcher:
    """Watches the waiting calls while someone listens; tells every listener the state."""

    def __init__(self, client: Client, interval: float = 1.0, limit: int = WATCHED) -> None:
        self.client, self.interval, self.limit = client, interval, limit
        self.waiting: dict[str, WaitingCall] | None = None
        self.decided: OrderedDict[str, Decided] = OrderedDict()
        self.known: OrderedDict[str, WaitingCall] = OrderedDict()
        """Calls seen waiting, the latest `DECIDED_KEPT` more than the watched ones: who may
        see how they were decided."""
        self.problem: str | None = None
        self.scanned_at = 0.0
        """When the last scan started (seconds since 1970): a page rendered later knows more."""
        self._listeners: dict[asyncio.Queue[dict[str, Any]], Visible | None] = {}
        self._task: asyncio.Task[None] | None = None
        self._scan_lock = asyncio.Lock()

    def note(self, key: str, decided: Decided) -> None:
        """Remember how a call was decided (by this inbox: known before the next scan)."""
        self.decided[key] = decided
        self.decided.move_to_end(key)
        while len(self.decided) > DECIDED_KEPT:
            self.decided.popitem(last=False)

    def recently_decided(self, visible: Visible | None = None) -> list[tuple[str, Decided]]:
        """How calls that stopped waiting were decided, oldest first (those `visible` may see)."""
        waiting = self.waiting or {}
        return [
            (key, d)
            for key, d in self.decided.items()
            if key not in waiting and (visible is None or (key in self.known and visible(self.known[key])))
        ]

    def state(self, visible: Visible | None = None) -> dict[str, Any]:
        """The whole state (of the calls `visible` may see): waiting keys with their votes, the
        decided with how; all inert."""
        waiting = {k: c for k, c in (self.waiting or {}).items() if visible is None or visible(c)}
        return {
            "waiting": {key: len(call.request.votes) for key, call in waiting.items()},
            "decided": {
                key: {"text": neutralise(d.text), "approved": d.approved} for key, d in self.recently_decided(visible)
            },
            "problem": self.problem,
            "at": self.scanned_at,
        }

    def _know(self, calls: dict[str, WaitingCall]) -> None:
        for key, call in calls.items():
            self.known[key] = call
            self.known.move_to_end(key)
        while len(self.known) > len(calls) + DECIDED_KEPT:
            self.known.popitem(last=False)

    async def _how_decided(self, call: WaitingCall) -> Decided:
        return await how_decided(self.client, call.workflow_id, call.request.call_id, call.request.arguments_digest)

    async def scan(self) -> None:
        """List the waiting calls once; note how each call that stopped waiting was decided."""
        async with self._scan_lock:
            started = time.time()
            try:
                calls, _ = await every_waiting_call(self.client, self.limit)
            except CommandError as exc:
                self.problem = f"cannot list waiting calls: {exc}"
                return
            except Exception as exc:  # Temporal unreachable: say so, keep the last state
                self.problem = f"cannot reach Temporal: {exc}"
                return
            self.problem = None
            now = {call.key: call for call in calls}
            gone = [c for key, c in (self.waiting or {}).items() if key not in now and key not in self.decided]
            answers = await bounded([functools.partial(self._how_decided, c) for c in gone])
            for call, answer in zip(gone, answers, strict=True):
                self.note(call.key, answer if isinstance(answer, Decided) else Decided("no longer waiting"))
            self._know(now)
            self.waiting, self.scanned_at = now, started

    async def listen(self, visible: Visible | None = None) -> AsyncGenerator[dict[str, Any], None]:
        """The state (of the calls `visible` may see) now, then each time it changes, until
        the listener goes away."""
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(maxsize=1)
        self._listeners[queue] = visible
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._watch())
        try:
            if time.time() - self.scanned_at > FRESH_SECONDS:  # a new page: no state older than it
                await self.scan()
            last = self.state(visible)
            yield last
            while True:
                state = await queue.get()
                if state != last:
                    last = state
                    yield state
        finally:
            self._listeners.pop(queue, None)

    async def _watch(self) -> None:
        while self._listeners:
            await self.scan()
            for queue, visible in list(self._listeners.items()):
                with contextlib.suppress(asyncio.QueueEmpty):
                    queue.get_nowait()  # a slow listener needs only the newest state
                queue.put_nowait(self.state(visible))
            await asyncio.sleep(self.interval)
        self._task = None

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


async def event_stream(watcher: Watcher, visible: Visible | None = None) -> AsyncIterator[str]:
    """`text/event-stream`: a `state` event per change, a comment every 15 s to keep proxies open."""
    yield "retry: 2000\n\n"
    states = watcher.listen(visible)
    pending: asyncio.Task[dict[str, Any]] | None = None
    try:
        while True:
            pending = pending or asyncio.ensure_future(anext(states))
            done, _ = await asyncio.wait({pending}, timeout=KEEPALIVE_SECONDS)
            if not done:
                yield ": keepalive\n\n"
                continue
            state, pending = pending.result(), None
            yield f"event: state\ndata: {json.dumps(state, ensure_ascii=True, separators=(',', ':'))}\n\n"
    finally:
        if pending is not None:
            pending.cancel()
            with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                await pending
        await states.aclose()


class StreamSlots:
    """How many event streams each viewer holds open, at most `per_viewer` each."""

    def __init__(self, per_viewer: int = MAX_STREAMS_PER_VIEWER) -> None:
        self.per_viewer = per_viewer
        self.open: Counter[str] = Counter()

    def take(self, viewer: str) -> bool:
        """A slot for one more stream of `viewer` (False: they hold `per_viewer` already)."""
        key = name_key(viewer)
        if self.open[key] >= self.per_viewer:
            return False
        self.open[key] += 1
        return True

    def give_back(self, viewer: str) -> None:
        key = name_key(viewer)
        self.open[key] -= 1
        if self.open[key] <= 0:
            del self.open[key]


class HeldStream(StreamingResponse):
    """A streaming response that gives its slot back when it ends, however it ends."""

    def __init__(self, content: AsyncIterator[str], release: Callable[[], None]) -> None:
        super().__init__(content, media_type="text/event-stream", headers={"x-accel-buffering": "no"})
        self._release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._release()
