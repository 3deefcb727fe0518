"""One system's runs in the side-by-side bench: an auto run, an approval and a denial, each
measured and checked (`bench.peers.checks`)."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable

from temporalio.client import Client, WorkflowHandle

from bench.actions import billable_actions, exempt_upserts
from bench.anatomy import payloads
from bench.common import BenchEnv, WorkerProcess, check_text
from bench.peers.checks import Checks
from bench.runs import START, approve, deny, finish, history_bytes, history_events, result_text, wait_paused

SYSTEMS = ("signoff", "pydantic_ai", "openai_agents", "floor")
LABELS = {"signoff": "signoff", "pydantic_ai": "Pydantic AI", "openai_agents": "OpenAI Agents", "floor": "floor"}
RUNS = ("auto", "approval", "denial")
REASON = "not this time"


class Context:
    """One system's worker and queue in the shared bench."""

    def __init__(self, bench: BenchEnv, checks: Checks, kind: str, queue: str, worker: WorkerProcess) -> None:
        self.bench, self.checks, self.kind, self.queue, self.worker = bench, checks, kind, queue, worker
        self.last_actions: Counter[str] = Counter()  # the billable Actions of the last run, by kind

    @property
    def client(self) -> Client:
        return self.bench.client

    async def start(self, tool: str) -> tuple[WorkflowHandle, str]:
        tag = uuid.uuid4().hex[:12]
        return await START[self.kind](self.client, self.queue, tool, 1, f"{self.kind}-{tag}", tag), tag

    async def shape(self, workflow_id: str) -> dict[str, float]:
        """The finished run's history: events, bytes, payloads and billable Actions."""
        events = await history_events(self.client, workflow_id)
        self.last_actions = billable_actions(events)
        return {
            "events": float(len(events)),
            "bytes": float(history_bytes(events)),
            "payloads": float(sum(len(payloads(e)) for e in events)),
            "actions": float(sum(self.last_actions.values())),
            "exempt_upserts": float(exempt_upserts(events)),
        }


async def auto_run(ctx: Context) -> dict[str, float]:
    cpu0, t0 = ctx.worker.cpu_seconds(), time.perf_counter()
    handle, tag = await ctx.start("noop")
    await finish(handle, "noop", 1)
    wall, cpu = time.perf_counter() - t0, ctx.worker.cpu_seconds() - cpu0
    ctx.checks.run(handle.id, tag, "noop", "noop:1", 1, "auto")
    return {"start_to_result": wall, "worker_cpu": cpu, **await ctx.shape(handle.id)}


async def approval_run(ctx: Context, approved: bool) -> dict[str, float]:
    """Start, wait for the pause, decide by update, wait for the result; check it."""
    cpu0, t0 = ctx.worker.cpu_seconds(), time.perf_counter()
    handle, tag = await ctx.start("gated_noop")
    await wait_paused(ctx.client, handle.id)
    t_paused = time.perf_counter()
    if approved:
        await approve(handle, ctx.kind)
        await finish(handle, "gated_noop", 1)
    else:
        await deny(handle, ctx.kind, REASON)
        check_text(result_text(await handle.result()), 1, f"Rejected: {REASON}", handle.id)
    t_done = time.perf_counter()
    cpu = ctx.worker.cpu_seconds() - cpu0
    message = "gated:1" if approved else f"Rejected: {REASON}"
    ctx.checks.run(handle.id, tag, "gated_noop", message, int(approved), "approved" if approved else "denied")
    return {
        "start_to_paused": t_paused - t0,
        "decision_to_result": t_done - t_paused,
        "worker_cpu": cpu,
        **await ctx.shape(handle.id),
    }


async def approved_run(ctx: Context) -> dict[str, float]:
    return await approval_run(ctx, True)


async def denied_run(ctx: Context) -> dict[str, float]:
    return await approval_run(ctx, False)


RUN: dict[str, Callable[[Context], Awaitable[dict[str, float]]]] = {
    "auto": auto_run,
    "approval": approved_run,
    "denial": denied_run,
}
# Tool calls each kind of run makes: the tool runs once, or not at all when denied.
TOOL_CALLS = {"auto": 1, "approval": 1, "denial": 0}


async def block(ctx: Context) -> dict[str, dict[str, float]]:
    return {run: await RUN[run](ctx) for run in RUNS}
