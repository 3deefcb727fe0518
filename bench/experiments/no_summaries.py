"""Experiment: AgentRun without activity summaries (the Web UI's `model turn 2` and
`run_command: ls -la`).

`BENCH_WORKER_PREFIX="-m bench.experiments.no_summaries"`: measures what the summaries cost.
Each is one more payload in its command, which the worker's payload visitor encodes, and for
which it asks the workflow's sandbox for a serialization context. The floor's worker runs
unchanged.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from temporalio import workflow

_original = workflow.execute_activity_method


def _without_summary(*args: Any, **kwargs: Any) -> Any:
    kwargs.pop("summary", None)
    return _original(*args, **kwargs)


if __name__ == "__main__":
    sys.argv = sys.argv[1:]
    if sys.argv[0].endswith("worker.py"):
        from signoff.runtime import worker

        workflow.execute_activity_method = _without_summary
        worker.main(sys.argv[1:])
    else:  # -m bench.floor
        import bench.floor

        asyncio.run(bench.floor.serve())
