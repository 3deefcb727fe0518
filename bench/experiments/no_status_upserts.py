"""Experiment: AgentRun without search-attribute upserts (status and pending tools).

`BENCH_WORKER_PREFIX="-m bench.experiments.no_status_upserts"`: measures what the
`SignoffStatus` / `SignoffPendingTools` upserts cost the server per pause. The Web UI's
current details are still set. The floor's worker runs unchanged. `--running-only`: drop
only the upsert that removes them when a wait ends, keep the one that starts it.
"""

from __future__ import annotations

import asyncio
import sys

from temporalio import workflow

from signoff.approval.requests import ToolApprovalRequest
from signoff.contract import STATUS_AWAITING
from signoff.workflows.details import describe_pending
from signoff.workflows.feed import RunRecord

_original = RunRecord.set_status


def _set_status(self: RunRecord, status: str, pending: list[ToolApprovalRequest]) -> None:
    details = describe_pending(workflow.info().workflow_id, pending) if status == STATUS_AWAITING else ""
    workflow.set_current_details(details)
    self.status = status


def _set_status_but_ending_a_wait(self: RunRecord, status: str, pending: list[ToolApprovalRequest]) -> None:
    (_original if status == STATUS_AWAITING else _set_status)(self, status, pending)


if __name__ == "__main__":
    running_only = sys.argv[1:2] == ["--running-only"]
    sys.argv = sys.argv[2:] if running_only else sys.argv[1:]
    if sys.argv[0].endswith("worker.py"):
        from signoff.runtime import worker

        RunRecord.set_status = _set_status_but_ending_a_wait if running_only else _set_status  # type: ignore[method-assign]
        worker.main(sys.argv[1:])
    else:  # -m bench.floor
        import bench.floor

        asyncio.run(bench.floor.serve())
