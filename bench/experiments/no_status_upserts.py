"""Experiment: AgentRun without search-attribute upserts (status and pending tools).

`BENCH_WORKER_PREFIX="-m bench.experiments.no_status_upserts"`: measures what the
`SignoffStatus` / `SignoffPendingTools` upserts cost the server per pause and finish.
"""

from __future__ import annotations

import sys

import worker
from temporalio import workflow
from workflows.agent_run import AgentRun


def _set_status(self: AgentRun, status: str, pending: list) -> None:
    self._status = status
    workflow.set_current_details("")


if __name__ == "__main__":
    AgentRun._set_status = _set_status  # type: ignore[method-assign]
    sys.argv = sys.argv[1:]
    if sys.argv[0].endswith("worker.py"):
        worker.main(sys.argv[1:])
