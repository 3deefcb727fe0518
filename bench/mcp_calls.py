"""Bench 9, MCP calls: `python -m bench.mcp_calls [--runs 20] [--rounds 10] [--calls 200]`.

What does a tool from an MCP server cost against a plain Python tool? Runs of `--rounds`
rounds of model → tool → model on one signoff worker (`worker.py`), in ABBA order:

- `plain`: agent `bench` calls the Python tool `noop` (the agent has no MCP server): the baseline;
- `plain, MCP agent`: agent `bench_mcp` calls the same `noop`; its MCP server is listed at run start;
- `MCP stdio`: agent `bench_mcp` calls `mcp__bench__noop` on its stdio server (trusted, read-only);
- `MCP HTTP`: agent `bench_mcp_http` calls the same tool over streamable HTTP (a server this
  process starts).

Reports s/run (p50) and the ratio to `plain`, the cost of the listing per run and of one call
((p50 - baseline p50) / rounds), and the worker's CPU per run. Then, in this process and
without Temporal, one call of each `--calls` times: the function, and `MCPTool.execute` over
stdio and HTTP (p50), so the protocol's own share is visible.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
import uuid

from bench.bench_agents import AGENT, MCP_AGENT, MCP_HTTP_AGENT, MCP_STDIO, noop
from bench.common import REPO, BenchEnv, bench_env, free_port, run, workers
from bench.report import summary, table, write_results
from bench.runs import finish, start_signoff
from signoff import Tool
from signoff.runtime.devserver import is_listening
from signoff.tools.mcp import MCPServer

MCP_TOOL = "mcp__bench__noop"
KINDS = {  # kind: (agent, tool)
    "plain": (AGENT, "noop"),
    "plain, MCP agent": (MCP_AGENT, "noop"),
    "MCP stdio": (MCP_AGENT, MCP_TOOL),
    "MCP HTTP": (MCP_HTTP_AGENT, MCP_TOOL),
}


async def durable(bench: BenchEnv, url: str, runs: int, rounds: int) -> dict[str, dict[str, list[float]]]:
    queue = f"mcp-{uuid.uuid4().hex[:8]}"
    async with workers(bench, ("signoff", queue), env={queue: {"BENCH_MCP_URL": url}}) as (worker,):

        async def one(kind: str) -> tuple[float, float]:
            agent, tool = KINDS[kind]
            cpu, started = worker.cpu_seconds(), time.perf_counter()
            await finish(await start_signoff(bench.client, queue, tool, rounds, agent=agent), tool, rounds)
            return time.perf_counter() - started, worker.cpu_seconds() - cpu

        for kind in KINDS:  # warm up: every server started, every code path imported
            await one(kind)
        samples: dict[str, dict[str, list[float]]] = {k: {"wall": [], "cpu": []} for k in KINDS}
        order = list(KINDS)
        for i in range(runs):
            for kind in order if i % 2 == 0 else order[::-1]:
                wall, cpu = await one(kind)
                samples[kind]["wall"].append(wall)
                samples[kind]["cpu"].append(cpu)
    return samples


async def direct(url: str, calls: int) -> dict[str, list[float]]:
    """One call at a time, in this process: the function, then MCP over stdio and HTTP."""
    from signoff.tools.mcp.sessions import MCPSessions
    from signoff.tools.mcp.tool import open_tools

    sessions = MCPSessions()
    try:
        (stdio_tool,), _ = await open_tools([MCP_STDIO], sessions)
        (http_tool,), _ = await open_tools([MCPServer(name="bench", url=url, trusted=True)], sessions)
        tools: dict[str, Tool] = {"function": noop, "MCP stdio": stdio_tool, "MCP HTTP": http_tool}
        samples: dict[str, list[float]] = {k: [] for k in tools}
        for _ in range(calls):
            for kind, tool in tools.items():
                started = time.perf_counter()
                result = await tool.execute({"x": "1"})
                samples[kind].append(time.perf_counter() - started)
                if result.content != "noop:1":
                    raise AssertionError(f"{kind}: {result}")
    finally:
        await sessions.aclose()
    return samples


async def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args(argv)
    port = free_port()
    http = subprocess.Popen(
        [sys.executable, "-m", "bench.mcp_noop_server", "--http", str(port)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        while not is_listening(f"127.0.0.1:{port}"):
            if http.poll() is not None:
                raise RuntimeError("the MCP HTTP server exited")
            await asyncio.sleep(0.05)
        async with bench_env() as bench:
            raw = await durable(bench, url, args.runs, args.rounds)
        calls = await direct(url, args.calls)
    finally:
        http.kill()
        http.wait()
    base = summary(raw["plain"]["wall"])["p50"]
    listed = summary(raw["plain, MCP agent"]["wall"])["p50"]
    stats = {k: {"wall_s": summary(v["wall"]), "worker_cpu_s": summary(v["cpu"])} for k, v in raw.items()}
    rows = []
    for kind, s in stats.items():
        p50 = s["wall_s"]["p50"]
        per_call = (p50 - listed) / args.rounds * 1000 if kind.startswith("MCP") else None
        rows.append(
            [
                kind,
                s["wall_s"]["p50"],
                s["wall_s"]["p95"],
                p50 / base,
                f"{per_call:.2f}" if per_call is not None else "-",
                s["worker_cpu_s"]["mean"],
            ]
        )
    direct_stats = {k: summary(v) for k, v in calls.items()}
    t1 = table(
        f"MCP calls: {args.runs} runs of {args.rounds} rounds each, per kind (listing at run start: "
        f"{(listed - base) * 1000:.1f} ms/run)",
        ["kind", "p50 s/run", "p95 s/run", "ratio to plain", "ms/call over plain", "worker CPU s/run"],
        rows,
    )
    t2 = table(
        f"One call in process, no Temporal ({args.calls} each)",
        ["tool", "p50 ms", "p95 ms", "ratio to function"],
        [
            [k, s["p50"] * 1000, s["p95"] * 1000, s["p50"] / direct_stats["function"]["p50"]]
            for k, s in direct_stats.items()
        ],
    )
    data = {
        "args": vars(args),
        "stats": stats,
        "direct": direct_stats,
        "raw": raw,
        "raw_direct": calls,
        "listing_ms_per_run": (listed - base) * 1000,
    }
    write_results("mcp_calls", data, [t1, t2])
    return data


if __name__ == "__main__":
    run(main)
