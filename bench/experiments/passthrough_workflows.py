"""Experiment: worker.py with the `workflows` package passed through the sandbox.

`BENCH_WORKER_PREFIX="-m bench.experiments.passthrough_workflows"` makes the benches run
`python -m bench.experiments.passthrough_workflows worker.py --agents ...`: the workflow
module is then imported once per process instead of once per new run. It measures the
proposed change to `worker.sandbox_runner`; it changes nothing in the worker itself.
"""

from __future__ import annotations

import runpy
import sys

import worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

_original = worker.sandbox_runner


def sandbox_runner() -> SandboxedWorkflowRunner:
    runner = _original()
    restrictions = runner.restrictions.with_passthrough_modules("workflows")
    return SandboxedWorkflowRunner(restrictions=restrictions)


if __name__ == "__main__":
    worker.sandbox_runner = sandbox_runner
    sys.argv = sys.argv[1:]
    if sys.argv[0].endswith("worker.py"):
        worker.main(sys.argv[1:])
    else:  # -m bench.floor
        import asyncio

        import bench.floor

        asyncio.run(bench.floor.serve())
