"""Bench 1, round overhead: `python -m bench.round_overhead [--runs 50]`.

Sequential runs of "model → one auto tool → model", alternating signoff (AgentRun on
worker.py), the floor (FloorRun) and the in-process agent, all against the same dev
server and scripted model. Reports s/run and the worker's CPU s/run, and their ratios.
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid

from bench.bench_agents import bench_agent
from bench.common import BenchEnv, check_result, prompt_for, run, workers
from bench.report import summary, table, target, write_results
from bench.runs import START, finish
from signoff.chat.config import LLMConfig
from signoff.chat.openai import OpenAIChatClient

TARGET = 1.05
TOOL, ROUNDS = "noop", 1


async def in_process(agent) -> None:
    from signoff.agent.session import AgentSession

    session = AgentSession()
    events = [e async for e in agent.run(prompt_for(TOOL, ROUNDS), session=session)]
    text = next((m.content for m in reversed(session.messages) if m.role == "assistant"), None)
    check_result(text, session.messages, TOOL, ROUNDS, "in-process")
    if events[-1].type != "finish":
        raise AssertionError(f"in-process run ended with {events[-1]}")


async def measure(bench: BenchEnv, runs: int, warmup: int) -> dict:
    queues = {"signoff": f"bench-{uuid.uuid4().hex[:8]}", "floor": f"floor-{uuid.uuid4().hex[:8]}"}
    client = bench.client
    async with workers(bench, *((k, q) for k, q in queues.items())) as procs:
        worker = dict(zip(queues, procs, strict=True))
        agent = bench_agent(OpenAIChatClient(LLMConfig(base_url=bench.model.base_url, model="scripted")))

        async def one(kind: str) -> tuple[float, float]:
            cpu0 = worker[kind].cpu_seconds() if kind in worker else time.process_time()
            t0 = time.perf_counter()
            if kind == "in-process":
                await in_process(agent)
            else:
                await finish(await START[kind](client, queues[kind], TOOL, ROUNDS), TOOL, ROUNDS)
            elapsed = time.perf_counter() - t0
            cpu = worker[kind].cpu_seconds() if kind in worker else time.process_time()
            return elapsed, cpu - cpu0

        kinds = ["signoff", "floor", "in-process"]
        for _ in range(warmup):
            for kind in kinds:
                await one(kind)
        wall: dict[str, list[float]] = {k: [] for k in kinds}
        cpu: dict[str, list[float]] = {k: [] for k in kinds}
        for i in range(runs):
            for kind in kinds if i % 2 == 0 else kinds[::-1]:  # alternate to spread drift evenly
                w, c = await one(kind)
                wall[kind].append(w)
                cpu[kind].append(c)
    return {"wall": wall, "cpu": cpu}


async def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args(argv)
    from bench.common import bench_env

    async with bench_env() as bench:
        raw = await measure(bench, args.runs, args.warmup)
    wall, cpu = raw["wall"], raw["cpu"]
    stats = {k: {"wall_s": summary(v), "worker_cpu_s": summary(cpu[k])} for k, v in wall.items()}
    paired = [s / f for s, f in zip(wall["signoff"], wall["floor"], strict=True)]
    ratios = {
        "signoff/floor mean": statistics.fmean(wall["signoff"]) / statistics.fmean(wall["floor"]),
        "signoff/floor p50": stats["signoff"]["wall_s"]["p50"] / stats["floor"]["wall_s"]["p50"],
        "signoff/floor paired median": statistics.median(paired),
        "signoff/in-process p50": stats["signoff"]["wall_s"]["p50"] / stats["in-process"]["wall_s"]["p50"],
        "floor/in-process p50": stats["floor"]["wall_s"]["p50"] / stats["in-process"]["wall_s"]["p50"],
        "signoff/floor worker CPU mean": (
            stats["signoff"]["worker_cpu_s"]["mean"] / stats["floor"]["worker_cpu_s"]["mean"]
        ),
    }
    rows = [
        [
            k,
            s["wall_s"]["mean"],
            s["wall_s"]["p50"],
            s["wall_s"]["p95"],
            s["worker_cpu_s"]["mean"] if k != "in-process" else "-",
        ]
        for k, s in stats.items()
    ]
    verdict = ratios["signoff/floor p50"] <= TARGET
    t1 = table(
        f"Round overhead: {args.runs} sequential runs of model → noop → model",
        ["driver", "mean s/run", "p50 s/run", "p95 s/run", "worker CPU s/run"],
        rows,
    )
    goal = f"≤ {TARGET} ({target(verdict)})"
    ratio_rows = [[k, v, goal if k == "signoff/floor p50" else ""] for k, v in ratios.items()]
    t2 = table("Ratios", ["ratio", "value", "target"], ratio_rows)
    data = {
        "args": vars(args),
        "stats": stats,
        "ratios": ratios,
        "target": {"signoff/floor p50": TARGET, "met": verdict},
        "raw": raw,
    }
    write_results("round_overhead", data, [t1, t2])
    return data


if __name__ == "__main__":
    run(main)
