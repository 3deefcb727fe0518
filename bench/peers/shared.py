"""What both peers' workers share: the decision a person sends, and where the model is.

The environment is the one `bench.common.WorkerProcess` gives every worker: `TEMPORAL_ADDRESS`,
`SIGNOFF_TASK_QUEUE` and `SIGNOFF_LLM_BASE_URL` (the scripted model's `/v1`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

MODEL = "scripted"
API_KEY = "bench"  # the scripted model checks no key; the SDKs insist on one
ACTIVITY_TIMEOUT = timedelta(minutes=10)


@dataclass
class Decision:
    """A person's answer to one paused tool call (the peers' `decide` update)."""

    call_id: str
    approved: bool
    reason: str | None = None


def model_base_url() -> str:
    return os.environ["SIGNOFF_LLM_BASE_URL"]


def worker_options() -> dict[str, Any]:
    """The Worker arguments the bench sets beyond a peer's documented ones: the task queue, and
    (only when `BENCH_PEER_STICKY_S` is set) the sticky queue's schedule-to-start timeout, which
    signoff's worker sets to 1 s and the SDK leaves at 10 s."""
    options: dict[str, Any] = {"task_queue": os.environ["SIGNOFF_TASK_QUEUE"]}
    if os.environ.get("BENCH_PEER_STICKY_S"):
        options["sticky_queue_schedule_to_start_timeout"] = timedelta(seconds=float(os.environ["BENCH_PEER_STICKY_S"]))
    return options
