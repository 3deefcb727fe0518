"""Experiment: worker.py with activities that heartbeat only after HEARTBEAT_EVERY.

`BENCH_WORKER_PREFIX="-m bench.experiments.lazy_heartbeat"`: `heartbeating()` today
beats at once when an activity starts (one RecordActivityTaskHeartbeat RPC per chat and
tool call, which the activity's completion then waits behind); here the first beat comes
after `HEARTBEAT_EVERY` seconds, so a fast activity sends none. Measures the proposed
change; changes nothing in the activities themselves. Also `--passthrough` to combine
with the sandbox experiment.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator

from temporalio import activity

import activities.agent_activities as agent_activities


@contextlib.asynccontextmanager
async def heartbeating(every: float = agent_activities.HEARTBEAT_EVERY) -> AsyncIterator[None]:
    async def beat() -> None:
        while True:
            await asyncio.sleep(every)
            activity.heartbeat()

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()


if __name__ == "__main__":
    agent_activities.heartbeating = heartbeating
    args = sys.argv[1:]
    if args and args[0] == "--passthrough":  # passing `workflows` through is now the default
        args = args[1:]
    sys.argv = args
    if args[0].endswith("worker.py"):
        import worker

        worker.main(args[1:])
    else:
        import bench.floor

        asyncio.run(bench.floor.serve())
