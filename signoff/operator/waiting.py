"""The runs that wait for a decision, and asking many runs a few at a time.

The visibility queries that find waiting runs (`signoff pending`, `signoff approve --query`,
the inbox), and `bounded`, which runs one job per run with at most `AT_ONCE` in flight, so
that a namespace of many waiting runs is asked without opening a request per run at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from signoff.contract import SA_STATUS, STATUS_AWAITING, STATUS_AWAITING_INPUT, WORKFLOW_TYPE

WAITING_QUERY = (
    f'WorkflowType="{WORKFLOW_TYPE}" AND ExecutionStatus="Running" '
    f'AND {SA_STATUS} IN ("{STATUS_AWAITING}", "{STATUS_AWAITING_INPUT}")'
)
WAITING_OR_PAUSED_QUERY = WAITING_QUERY.replace(
    'ExecutionStatus="Running"', '(ExecutionStatus="Running" OR ExecutionStatus="Paused")'
)
"""Servers before 1.30 know no `Paused` status and refuse this one: `waiting_runs` then asks `WAITING_QUERY`."""
AT_ONCE = 16
"""Runs queried or decided concurrently."""
T = TypeVar("T")


async def bounded(jobs: Sequence[Callable[[], Awaitable[T]]]) -> list[T | BaseException]:
    """Run `jobs` at most `AT_ONCE` at a time; each one's result or exception, in order."""
    gate = asyncio.Semaphore(AT_ONCE)

    async def one(job: Callable[[], Awaitable[T]]) -> T:
        async with gate:
            return await job()

    return await asyncio.gather(*(one(job) for job in jobs), return_exceptions=True)
