"""Experiment: AgentRun without search-attribute upserts (status and pending tools).

`BENCH_WORKER_PREFIX="-m bench.experiments.no_status_upserts"`: measures what the
`SignoffStatus` / `SignoffPendingTools` upserts cost the server per pause and finish.
The floor's worker runs unchanged. `--running-only`: drop only the upsert back to
`running` (the one in the update's workflow task), keep the others.
"""

from __future__ import annotations

import asyncio
import sys

from temporalio import workflow

from signoff.contract import STATUS_RUNNING


def _set_status(self, status: str, pending: list) -> None:  # type: ignore[no-untyped-def]
    self._status = status
    workflow.set_current_details("")


def _set_status_but_running(self, status: str, pending: list) -> None:  # type: ignore[no-untyped-def]
    if status == STATUS_RUNNING:
        _set_status(self, status, pending)
    else:
        _original(self, status, pending)


if __name__ == "__main__":
    running_only = sys.argv[1:2] == ["--running-only"]
    sys.argv = sys.argv[2:] if running_only else sys.argv[1:]
    if sys.argv[0].endswith("worker.py"):
        from signoff.runtime import worker
        from signoff.workflows.agent_run import AgentRun

        _original = AgentRun._set_status
        AgentRun._set_status = _set_status_but_running if running_only else _set_status  # type: ignore[method-assign]
        worker.main(sys.argv[1:])
    else:  # -m bench.floor
        import bench.floor

        asyncio.run(bench.floor.serve())
