"""Bench 6, large payloads: `python -m bench.large_payloads [--runs 5] [--rounds 10]`.

Runs whose every round returns a 300,000-character tool output, on two signoff workers
of the same run: one with the file payload store (`SIGNOFF_PAYLOAD_STORE`, the default
threshold of 256 KiB) and one without (payloads inline, the baseline). Both workers
keep tool outputs whole (`SIGNOFF_MAX_TOOL_OUTPUT=400000`) and the default transcript
budget. Reports, per run, the history bytes (serialized events, every run of the chain)
and the wall time from start to result, and the ratios store/inline in the same run.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench.bench_agents import BIG_AGENT, BIG_OUTPUT
from bench.common import BenchError, bench_env, run, workers
from bench.history_growth import chain
from bench.report import summary, table, write_results
from bench.runs import history_bytes, start_signoff
from signoff.config.environment import Environment
from signoff.runtime.connection import ConnectionSettings, connect

TOOL = "big"


async def measure(client, queue: str, rounds: int, runs: int) -> dict:
    seconds, sizes = [], []
    for _ in range(runs):
        started = time.perf_counter()
        handle = await start_signoff(client, queue, TOOL, rounds, agent=BIG_AGENT)
        result = await handle.result()
        seconds.append(time.perf_counter() - started)
        tool_messages = [m.content or "" for m in result.messages if m.role == "tool"]
        if not (result.text or "").startswith(f"done {rounds}: big:{rounds}|") or len(tool_messages) != rounds:
            raise BenchError(f"{handle.id}: unexpected result {(result.text or '')[:60]!r}")
        sizes.append(sum(history_bytes(events) for events in await chain(client, handle.id)))
    return {"seconds": summary(seconds), "history_bytes": summary(sizes), "raw_seconds": seconds, "raw_bytes": sizes}


async def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args(argv)
    store = Path(tempfile.mkdtemp(prefix="signoff-bench-store-"))
    queues = {"store": f"store-{uuid.uuid4().hex[:8]}", "inline": f"inline-{uuid.uuid4().hex[:8]}"}
    common = {"SIGNOFF_MAX_TOOL_OUTPUT": "400000"}
    env = {queues["store"]: {**common, "SIGNOFF_PAYLOAD_STORE": store.as_uri()}, queues["inline"]: common}
    rows: dict[str, list[Any]] = {}
    async with bench_env() as bench, workers(bench, *(("signoff", q) for q in queues.values()), env=env):
        settings = ConnectionSettings.load(
            Environment({"TEMPORAL_ADDRESS": bench.address, "SIGNOFF_PAYLOAD_STORE": store.as_uri()})
        )
        stored_client = await connect(settings)
        for kind in ("inline", "store", "inline", "store"):  # alternate, to spread drift
            half = await measure(
                stored_client if kind == "store" else bench.client, queues[kind], args.rounds, max(1, args.runs // 2)
            )
            rows.setdefault(kind, []).append(half)
    data = {kind: _merge(halves) for kind, halves in rows.items()}
    store_bytes = sum(f.stat().st_size for f in store.rglob("*") if f.is_file())
    ratio_bytes = data["store"]["history_bytes"]["p50"] / data["inline"]["history_bytes"]["p50"]
    ratio_time = data["store"]["seconds"]["p50"] / data["inline"]["seconds"]["p50"]
    text = table(
        f"Large payloads: {args.rounds} rounds of {BIG_OUTPUT:,}-character tool outputs per run "
        f"(store / inline: history bytes {ratio_bytes:.3f}×, time {ratio_time:.2f}×)",
        ["worker", "runs", "history bytes p50", "s/run p50", "s/run p95"],
        [
            [kind, len(d["raw_seconds"]), d["history_bytes"]["p50"], d["seconds"]["p50"], d["seconds"]["p95"]]
            for kind, d in data.items()
        ],
    )
    result = {
        "args": vars(args),
        "rows": data,
        "store_bytes_total": store_bytes,
        "ratio_history_bytes": ratio_bytes,
        "ratio_seconds": ratio_time,
    }
    write_results("large_payloads", result, [text])
    return result


def _merge(halves: list[dict]) -> dict:
    seconds = [s for h in halves for s in h["raw_seconds"]]
    sizes = [b for h in halves for b in h["raw_bytes"]]
    return {"seconds": summary(seconds), "history_bytes": summary(sizes), "raw_seconds": seconds, "raw_bytes": sizes}


if __name__ == "__main__":
    run(main)
