"""What auto mode costs per gated call: `python -m bench.auto_mode [--runs 30]`.

Runs that each make one gated call (`gated_noop`), on two workers of the same run, alternating:

- `person`: signoff as configured by default; the call is approved by an update as soon as the
  run pauses (what a person costs is their own time: not measured);
- `auto`: a policy file giving `gated_noop` auto mode (criteria set `bench`); the scripted model
  answers the evaluator's request (`response_format` json_schema `signoff_auto_verdict`) with a
  confident approve at zero latency, so the figures are signoff's own cost of an evaluation:
  one more activity, its event, and the decision applied in the workflow.

Reports start → finished and the call's wait (requested → decided, from the audit record: for
`auto`, the evaluator's added latency as the run saw it), the evaluator's own time (the
`auto_evaluation` event's `latency_ms`), history events per run, and the evaluator's tokens per
gated call (the scripted server's counts: about four characters a token of what was sent and
answered; a real provider's would differ by its tokenizer, not by much).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench.common import BenchEnv, BenchError, bench_env, run, workers
from bench.report import summary, table, write_results
from bench.runs import START, approve, finish, history_events, wait_paused

TOOL, ROUNDS = "gated_noop", 1
POLICY = {
    TOOL: {"auto": {"criteria": "bench", "min_confidence": 0.9}},
    "criteria": {
        "bench": {
            "effect": "does nothing",
            "approve_when": ["the tool is gated_noop"],
            "deny_when": ["anything that changes a system"],
            "escalate_when": ["anything else"],
        }
    },
}


async def one(bench: BenchEnv, kind: str, queue: str) -> dict[str, float]:
    client = bench.client
    t0 = time.perf_counter()
    handle = await START["signoff"](client, queue, TOOL, ROUNDS)
    if kind == "person":
        await wait_paused(client, handle.id)
        await approve(handle, "signoff")
    result = await finish(handle, TOOL, ROUNDS)
    t_done = time.perf_counter()
    (record,) = result.approvals
    if kind == "auto" and record.approver != "auto:bench":
        raise BenchError(f"{handle.id}: auto mode did not approve the call (approver {record.approver!r})")
    assert record.requested_at is not None and record.decided_at is not None
    sample = {
        "start_to_finished": t_done - t0,
        "call_wait": (record.decided_at - record.requested_at).total_seconds(),
        "events": float(len(await history_events(client, handle.id))),
    }
    if kind == "auto":
        (verdict,) = [e for e in await handle.query("events", 0) if e["type"] == "auto_evaluation"]
        sample |= {
            "evaluator_ms": float(verdict["latency_ms"]),
            "prompt_tokens": float(verdict["prompt_tokens"]),
            "completion_tokens": float(verdict["completion_tokens"]),
        }
    return sample


async def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="signoff-bench-auto-"))
    (folder / "policies.json").write_text(json.dumps(POLICY))
    queues = {kind: f"{kind}-{uuid.uuid4().hex[:8]}" for kind in ("person", "auto")}
    env = {queues["auto"]: {"SIGNOFF_POLICY_FILE": str(folder / "policies.json")}}
    samples: dict[str, list[dict[str, float]]] = {k: [] for k in queues}
    async with bench_env() as bench, workers(bench, *[("signoff", q) for q in queues.values()], env=env):
        for _ in range(args.warmup):
            for kind, queue in queues.items():
                await one(bench, kind, queue)
        for i in range(args.runs):
            for kind in list(queues) if i % 2 == 0 else list(queues)[::-1]:
                samples[kind].append(await one(bench, kind, queues[kind]))
    stats = {k: {m: summary([s[m] for s in v]) for m in v[0]} for k, v in samples.items()}
    auto = stats["auto"]
    rows = [
        [
            kind,
            s["start_to_finished"]["p50"] * 1000,
            s["start_to_finished"]["p95"] * 1000,
            s["call_wait"]["p50"] * 1000,
            s["events"]["p50"],
        ]
        for kind, s in stats.items()
    ]
    text = table(
        f"What auto mode costs: {args.runs} runs each, one gated call (ms); person = approved at once by an update",
        ["worker", "start→finished p50", "p95", "call wait p50", "events/run"],
        rows,
    )
    cost = table(
        "The evaluation itself (per gated call)",
        ["evaluator p50 ms", "p95 ms", "prompt tokens", "completion tokens"],
        [
            [
                auto["evaluator_ms"]["p50"],
                auto["evaluator_ms"]["p95"],
                auto["prompt_tokens"]["p50"],
                auto["completion_tokens"]["p50"],
            ]
        ],
    )
    data: dict[str, Any] = {"args": vars(args), "stats": stats, "raw": samples}
    write_results("auto_mode", data, [text, cost])
    return data


if __name__ == "__main__":
    run(main)
