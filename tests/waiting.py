"""Waiting for a condition with a deadline: the only poll loops the tests use.

Queries, files and processes have no push notification, so these poll; every wait
ends at a deadline with a message that says what did not happen.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")
POLL_SECONDS = 0.05


async def wait_until(condition: Callable[[], bool], timeout: float, failure: str | Callable[[], str]) -> None:
    """Poll `condition` until it holds. It may raise to fail at once (a process exited)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(failure() if callable(failure) else failure)
        await asyncio.sleep(POLL_SECONDS)


async def assert_eventually(check: Callable[[], Awaitable[T]], timeout: float = 10.0) -> T:
    """Retry `check` (an async callable that asserts) until it passes or time runs out."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await check()
        except Exception:  # a failed assertion, or a query before the run can answer
            if time.monotonic() > deadline:
                raise
        await asyncio.sleep(POLL_SECONDS)
