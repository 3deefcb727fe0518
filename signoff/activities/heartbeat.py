"""Heartbeats in the background of a long activity: a dead worker is noticed, a cancel delivered."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from temporalio import activity

HEARTBEAT_EVERY = 2.0


@contextlib.asynccontextmanager
async def heartbeating(every: float = HEARTBEAT_EVERY) -> AsyncIterator[None]:
    """Heartbeat every `every` seconds while the block runs.

    The first beat comes after `every` seconds, not at once: an immediate one costs every
    short call a server round trip (4-5 ms on a noop tool, bench/README.md), and the
    heartbeat timeouts (10 s, 30 s) are far longer than `every`.
    """

    async def beat() -> None:
        while True:
            await asyncio.sleep(every)
            activity.heartbeat()

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
