"""Running a bench worker until SIGTERM, with the ready line `bench.common.WorkerProcess` waits for.

Imports nothing but temporalio, so the peers' workers (`bench.peers`) load only their own
frameworks, as they would in production.
"""

from __future__ import annotations

import asyncio
import signal

from temporalio.worker import Worker


async def run_until_stopped(kind: str, worker: Worker) -> None:
    """Run `worker`, print `<kind>: worker on task queue '<queue>'`, stop on SIGINT or SIGTERM."""
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    print(f"{kind}: worker on task queue {worker.task_queue!r}", flush=True)
    async with worker:
        await stop.wait()
