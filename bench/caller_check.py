"""Bench 11, the tool activity's caller check: `python -m bench.caller_check [--calls 1000]`.

Before an approved call runs, the tool activity asks the server about the calling run (type,
task queue, status, chain; once per run, `activities/tool.py`). Against one parked `AgentRun`
(its search attributes set, as in production), this process asks that question alternately
the way the activity does now (the raw `DescribeWorkflowExecution`, `raw_description`) and the
way it did before (the SDK's `WorkflowHandle.describe`, reading the same fields), and reports
this process's CPU and the wall time per question, p50/p95, and now ÷ before. Interleaved in
one run, so a loaded machine slows both alike; one RPC either way.
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections.abc import Awaitable, Callable

from temporalio.api.enums.v1 import WorkflowExecutionStatus as ExecutionStatus
from temporalio.client import Client, WorkflowExecutionStatus

from bench.common import BenchError, bench_env, run, workers
from bench.report import summary, table, write_results
from bench.runs import start_signoff, wait_paused
from signoff.activities.tool import raw_description
from signoff.contract import WORKFLOW_TYPE

Ask = Callable[[Client, str, str], Awaitable[tuple[str, str, bool, str]]]


async def raw(client: Client, workflow_id: str, run_id: str) -> tuple[str, str, bool, str]:
    """What the activity asks now."""
    info = await raw_description(client, workflow_id, run_id)
    running = info.status == ExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING
    return info.type.name, info.task_queue, running, info.first_run_id or info.execution.run_id


async def sdk(client: Client, workflow_id: str, run_id: str) -> tuple[str, str, bool, str]:
    """What it asked before (its code until the cut)."""
    described = await client.get_workflow_handle(workflow_id, run_id=run_id).describe()
    running = described.status == WorkflowExecutionStatus.RUNNING
    first = described.raw_description.workflow_execution_info.first_run_id or described.run_id
    return described.workflow_type, described.task_queue, running, first


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=1000, help="questions of each kind")
    args = parser.parse_args()
    queue = f"caller-{uuid.uuid4().hex[:8]}"
    asks: dict[str, Ask] = {"sdk_describe": sdk, "raw_describe": raw}
    cpu: dict[str, list[float]] = {name: [] for name in asks}
    wall: dict[str, list[float]] = {name: [] for name in asks}
    async with bench_env() as bench, workers(bench, ("signoff", queue)):
        handle = await start_signoff(bench.client, queue, "gated_noop", 1)
        await wait_paused(bench.client, handle.id)
        run_id = handle.result_run_id or ""
        expected = (WORKFLOW_TYPE, queue, True, run_id)
        for index in range(args.calls * 2 + 20):
            name = list(asks)[index % 2]
            cpu0, wall0 = time.process_time(), time.perf_counter()
            answer = await asks[name](bench.client, handle.id, run_id)
            if index >= 20:  # the first ones warm both paths up
                cpu[name].append((time.process_time() - cpu0) * 1000)
                wall[name].append((time.perf_counter() - wall0) * 1000)
            if answer != expected:
                raise BenchError(f"{name} answered {answer}, not {expected}")
        await handle.terminate("measured")
    stats = {name: {"cpu_ms": summary(cpu[name]), "wall_ms": summary(wall[name])} for name in asks}
    rows = [
        [what, *(stats[n][what]["p50"] for n in asks), *(stats[n][what]["p95"] for n in asks)]
        for what in ("cpu_ms", "wall_ms")
    ]
    for row, what in zip(rows, ("cpu_ms", "wall_ms"), strict=True):
        row.append(stats["raw_describe"][what]["p50"] / stats["sdk_describe"][what]["p50"])
    headers = ["per question (ms)", "before p50", "now p50", "before p95", "now p95", "p50 now ÷ before"]
    title = f"The tool activity's caller check: {args.calls} questions each, interleaved, against one parked AgentRun"
    write_results("caller_check", {"calls": args.calls, "stats": stats}, [table(title, headers, rows)])


if __name__ == "__main__":
    run(main)
