"""What the bench's tools do, the same for every system measured: answer, and count the call.

The instructions and the two tool bodies (`noop`, `gated_noop`) are here, free of signoff's
imports, so that signoff's bench agent, the floor and the peers' workers (`bench.peers`) all
run the very same code. When `$BENCH_TOOL_LOG` names a file, every call appends one line,
`<workflow id> <tool>`, so a bench can check that each run's tool ran exactly once (after a
crash too); when it is unset (every bench but `bench.peers`) nothing is written.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

from temporalio import activity

INSTRUCTIONS = "You are a benchmark agent. Call the tool you are asked to call."
TOOL_LOG = "BENCH_TOOL_LOG"


def record(tool: str) -> None:
    """Append `<workflow id> <tool>` to `$BENCH_TOOL_LOG`, if it is set (one short write)."""
    path = os.environ.get(TOOL_LOG)
    if not path:
        return
    try:
        workflow_id = activity.info().workflow_id or "-"
    except RuntimeError:  # called outside an activity (an in-process agent)
        workflow_id = "-"
    with open(path, "a") as log:
        log.write(f"{workflow_id} {tool}\n")


def noop(x: str) -> str:
    record("noop")
    return f"noop:{x}"


def gated(x: str) -> str:
    record("gated_noop")
    return f"gated:{x}"


def calls(path: Path) -> Counter[tuple[str, str]]:
    """How many times each `(workflow id, tool)` ran, from the log."""
    if not path.exists():
        return Counter()
    found: Counter[tuple[str, str]] = Counter()
    for line in path.read_text().splitlines():
        workflow_id, _, tool = line.partition(" ")
        found[workflow_id, tool] += 1
    return found
