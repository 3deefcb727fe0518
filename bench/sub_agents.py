"""Bench 14, what a sub-agent round trip costs: `python -m bench.sub_agents [--runs 10] [--parked 200]`.

Two runs of agent `lead` on one in-process worker and the zero-latency scripted model, the same
work either way, alternating (ABBA):

- `plain`: the baseline: `lead` calls its own gated `run_command` once, approved by update, then
  answers;
- `delegated`: `lead` calls its sub-agent `research` once; the child run calls `run_command`
  (gated by the parent's policy), which waits and is listed at the top; approved by an update to
  the top run carrying the child's `workflow_id`, it runs in the child, whose answer the parent's
  model reads.

Reports, per run, history events and billable Temporal Cloud Actions (`bench.actions`, the
parent's and the child's together), decision → finished and start → waiting at the top
(p50/p95), each as `delegated ÷ plain`. With `--parked N`, also the worker's memory for N parked
runs of each kind (process RSS after they park, over the RSS before; the client and worker share
the process, so it is an upper bound of the worker's share).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import time
import uuid
from collections import Counter
from typing import Any

from temporalio.client import Client, WorkflowHandle

from bench.actions import billable_actions
from bench.common import BenchError, bench_env, run
from bench.report import summary, table, write_results
from bench.runs import history_events
from signoff.agent.builder import AgentBuilder, ChatClientAgent
from signoff.approval.policy import ApprovalPolicy
from signoff.chat.config import LLMConfig
from signoff.chat.openai import OpenAIChatClient
from signoff.contract import AgentRunInput, AgentRunResult
from signoff.messages import ToolCall
from signoff.runtime.settings import WorkerSettings
from signoff.runtime.worker import build_worker
from signoff.testing import Reply, ScriptedModelServer, ScriptedRequest
from signoff.tools.function import tool

KINDS = ("plain", "delegated")
ACTIONS: dict[str, Counter[str]] = {}
"""The last run's billable Actions by kind (the docs' usage names), per kind of run."""
PROMPTS = {"plain": "plain", "delegated": "delegated"}


def bench_agents() -> dict[str, ChatClientAgent]:
    @tool(name="run_command", approval=ApprovalPolicy())
    def gated(command: str) -> str:
        """Run a command."""
        return f"ran {command}"

    @tool(name="run_command")
    def ungated(command: str) -> str:
        """Run a command."""
        return f"ran {command}"

    researcher = AgentBuilder("researcher").with_instructions("child").with_tool(ungated).build()
    lead = AgentBuilder("lead").with_instructions("parent").with_tool(gated).with_sub_agent("research", researcher)
    return {"lead": lead.build()}


def script(request: ScriptedRequest) -> Reply:
    system = request.messages[0].content if request.messages[0].role == "system" else ""
    last = request.last
    if last.role == "tool":
        return Reply.text(f"answer: {last.content}")
    if system == "child":
        return Reply.tool_calls([ToolCall(id="call_c", name="run_command", arguments='{"command": "ls"}')])
    prompt = next(m.content for m in request.messages if m.role == "user")
    if prompt == "plain":
        return Reply.tool_calls([ToolCall(id="call_c", name="run_command", arguments='{"command": "ls"}')])
    return Reply.tool_calls([ToolCall(id="call_p", name="research", arguments='{"task": "ls"}')])


async def start(client: Client, queue: str, kind: str) -> WorkflowHandle[Any, AgentRunResult]:
    return await client.start_workflow(
        "AgentRun",
        AgentRunInput(agent="lead", prompt=PROMPTS[kind]),
        id=f"bench-{kind}-{uuid.uuid4().hex[:10]}",
        task_queue=queue,
        result_type=AgentRunResult,
    )


async def waiting(handle: WorkflowHandle[Any, Any], timeout: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pending = await handle.query("pending_approvals")
        if pending:
            return dict(pending[0])
        await asyncio.sleep(0.005)
    raise BenchError(f"{handle.id} never waited")


async def one(client: Client, queue: str, kind: str) -> dict[str, float]:
    t0 = time.perf_counter()
    handle = await start(client, queue, kind)
    item = await waiting(handle)
    t_waiting = time.perf_counter()
    expected = handle.id if kind == "plain" else f"{handle.id}--call_p"
    if item["workflow_id"] != expected:
        raise BenchError(f"{handle.id}: the waiting call is {item['workflow_id']}'s, not {expected}'s")
    decision = {"call_id": item["call_id"], "approved": True, "workflow_id": item["workflow_id"]}
    t_decided = time.perf_counter()
    await handle.execute_update("submit_tool_approval", decision)
    result = await handle.result()
    t_done = time.perf_counter()
    want = "answer: ran ls" if kind == "plain" else "answer: answer: ran ls"
    if result.text != want:
        raise BenchError(f"{handle.id} ({kind}) answered {result.text!r}, not {want!r}")
    runs = [handle.id] + ([expected] if kind == "delegated" else [])
    events, actions = 0, Counter[str]()
    for workflow_id in runs:
        history = await history_events(client, workflow_id)
        events += len(history)
        actions += billable_actions(history)
    if kind == "delegated":  # the child's own start is the second of the parent's two Start Child Workflow
        actions["Start Workflow"] -= 1
    ACTIONS[kind] = +actions
    return {
        "start_to_waiting": t_waiting - t0,
        "decision_to_finished": t_done - t_decided,
        "events": float(events),
        "actions": float(sum(actions.values())),
    }


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def parked_memory(client: Client, queue: str, kind: str, n: int) -> dict[str, float]:
    """RSS growth while `n` runs of `kind` wait (then they are cancelled)."""
    before = rss_mb()
    handles = []
    for start_at in range(0, n, 50):
        handles += await asyncio.gather(*(start(client, queue, kind) for _ in range(start_at, min(n, start_at + 50))))
    for handle in handles:
        await waiting(handle, 120.0)
    after = rss_mb()
    await asyncio.gather(*(h.cancel() for h in handles))
    await asyncio.gather(*(h.result() for h in handles))
    return {"runs": n, "rss_before_mb": before, "rss_after_mb": after, "kb_per_run": (after - before) * 1024 / n}


async def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--parked", type=int, default=0, help="also measure N parked runs of each kind")
    args = parser.parse_args(argv)
    samples: dict[str, list[dict[str, float]]] = {k: [] for k in KINDS}
    memory: dict[str, dict[str, float]] = {}
    queue = f"sub-agents-{uuid.uuid4().hex[:8]}"
    async with bench_env() as bench:
        with ScriptedModelServer(script) as model:
            config = LLMConfig(base_url=model.base_url, model="scripted")
            worker = build_worker(
                bench.client,
                bench_agents(),
                queue,
                default_client=lambda: OpenAIChatClient(config),
                settings=WorkerSettings(),
                max_cached_workflows=max(1000, 3 * args.parked),
            )
            async with worker:
                for _ in range(args.warmup):
                    for kind in KINDS:
                        await one(bench.client, queue, kind)
                for i in range(args.runs):
                    for kind in KINDS if i % 2 == 0 else KINDS[::-1]:
                        samples[kind].append(await one(bench.client, queue, kind))
                if args.parked:
                    for kind in KINDS:
                        memory[kind] = await parked_memory(bench.client, queue, kind, args.parked)
    stats = {k: {m: summary([s[m] for s in v]) for m in v[0]} for k, v in samples.items()}
    base = stats["plain"]
    rows = [
        [
            kind,
            s["events"]["p50"],
            s["actions"]["p50"],
            s["start_to_waiting"]["p50"] * 1000,
            s["decision_to_finished"]["p50"] * 1000,
            s["decision_to_finished"]["p95"] * 1000,
            s["events"]["p50"] / base["events"]["p50"],
            s["actions"]["p50"] / base["actions"]["p50"],
            s["decision_to_finished"]["p50"] / base["decision_to_finished"]["p50"],
        ]
        for kind, s in stats.items()
    ]
    texts = [
        table(
            f"A sub-agent round trip against a plain gated call: {args.runs} runs each (ms)",
            [
                "run",
                "history events",
                "Actions",
                "start→waiting p50",
                "decision→finished p50",
                "p95",
                "events vs plain",
                "Actions vs plain",
                "decision→finished vs plain",
            ],
            rows,
        )
    ]
    if memory:
        texts.append(
            table(
                f"Memory of {args.parked} parked runs on one worker (process RSS; client in the same process)",
                ["run", "RSS before MB", "RSS after MB", "KB per parked run", "vs plain"],
                [
                    [
                        k,
                        m["rss_before_mb"],
                        m["rss_after_mb"],
                        m["kb_per_run"],
                        m["kb_per_run"] / memory["plain"]["kb_per_run"] if memory["plain"]["kb_per_run"] > 0 else None,
                    ]
                    for k, m in memory.items()
                ],
            )
        )
    texts.append(
        table(
            "Billable Actions of one run, by kind (parent and child together)",
            ["Action", *KINDS],
            [[name, *(ACTIONS[k].get(name, 0) for k in KINDS)] for name in sorted(set().union(*ACTIONS.values()))],
        )
    )
    data = {"args": vars(args), "stats": stats, "memory": memory, "actions": ACTIONS, "raw": samples}
    write_results("sub_agents", data, texts)
    print(json.dumps({k: {m: s[m]["p50"] for m in s} for k, s in stats.items()}))
    return data


if __name__ == "__main__":
    run(main)
