"""Experiment: worker.py whose run memory does not query a run it has not seen when the
chat input already holds the whole transcript (`base == 0`).

`BENCH_WORKER_PREFIX="-m bench.experiments.no_first_query"`. Today `RunMemory.transcript`
queries the workflow (`messages`) on the first model turn of every run, since it has no
entry for the run yet, although `base == 0` means the input is the transcript. Measures
the proposed one-line fix; changes nothing in the activities themselves.
"""

from __future__ import annotations

import asyncio
import sys

from activities import run_memory

_original = run_memory.RunMemory.transcript


async def transcript(self, base, new):  # type: ignore[no-untyped-def]
    if base == 0:
        self._store(run_memory._run_key(), list(new))
        return list(new)
    return await _original(self, base, new)


if __name__ == "__main__":
    run_memory.RunMemory.transcript = transcript
    args = sys.argv[1:]
    if args and args[0] == "--passthrough":
        import worker
        from bench.experiments.passthrough_workflows import sandbox_runner

        worker.sandbox_runner = sandbox_runner
        args = args[1:]
    sys.argv = args
    if args[0].endswith("worker.py"):
        import worker

        worker.main(args[1:])
    else:
        import bench.floor

        asyncio.run(bench.floor.serve())
