"""Bench, live tokens through the run's Workflow Stream: `python -m bench.streams [--runs 4] [--tokens 1000]`.

A signoff worker (its own process) runs one-turn runs whose model writes `--tokens` deltas
(a word each, `--pause` seconds apart: a model writing at that pace). Reported, per run:

- signals per model turn: the stream's publish signals in the run's history (the chat
  activity batches them: at most `signoff.activities.tokens.MAX_SIGNALS`);
- history bytes per 1,000 tokens: the bytes of those signals, and of one reader's polls
  (updates, recorded too), against the rest of the run's history (the baseline: the same
  run without its stream's events);
- time to first token: from the run's start to the first `tokens` item a reader has,
  against the same model asked in process (`OpenAIChatClient.complete`'s first delta).
"""

from __future__ import annotations

import argparse
import time
import uuid
from typing import Any

from temporalio.api.history.v1 import HistoryEvent

from bench.common import BenchError, bench_env, run, workers
from bench.report import summary, table, write_results
from bench.runs import history_bytes, history_events
from signoff.activities.tokens import MAX_SIGNALS
from signoff.chat.config import LLMConfig
from signoff.chat.openai import OpenAIChatClient
from signoff.contract import TOPIC_TOKENS, AgentRunInput, AgentRunResult
from signoff.messages import ChatMessage
from signoff.operator.stream import follow
from signoff.testing import Reply, ScriptedModelServer, ScriptedRequest

PUBLISH = "__temporal_workflow_stream_publish"
POLL = "__temporal_workflow_stream_poll"


def _is_publish(event: HistoryEvent) -> bool:
    return (
        event.HasField("workflow_execution_signaled_event_attributes")
        and event.workflow_execution_signaled_event_attributes.signal_name == PUBLISH
    )


def _is_poll(event: HistoryEvent) -> bool:
    if event.HasField("workflow_execution_update_accepted_event_attributes"):
        return event.workflow_execution_update_accepted_event_attributes.accepted_request.input.name == POLL
    return False


def _poll_completions(events: list[HistoryEvent]) -> list[HistoryEvent]:
    polls = {e.workflow_execution_update_accepted_event_attributes.protocol_instance_id for e in events if _is_poll(e)}
    return [
        e
        for e in events
        if e.HasField("workflow_execution_update_completed_event_attributes")
        and e.workflow_execution_update_completed_event_attributes.meta.update_id in polls
    ]


async def one_run(client: Any, queue: str, tokens: int) -> dict[str, float]:
    started = time.perf_counter()
    handle = await client.start_workflow(
        "AgentRun",
        AgentRunInput(prompt="write"),
        id=f"stream-{uuid.uuid4()}",
        task_queue=queue,
        result_type=AgentRunResult,
    )
    first: float | None = None
    text = ""
    async for item in follow(client, handle.id, topics=[TOPIC_TOKENS]):
        if first is None:
            first = time.perf_counter() - started
        text += item.data["text"]
    result: AgentRunResult = await handle.result()
    if text != result.text or len((result.text or "").split()) != tokens:
        raise BenchError(f"{handle.id}: the stream's text is not the answer ({len(text)} vs {len(result.text or '')})")
    events = await history_events(client, handle.id, handle.result_run_id or "")
    signals = [e for e in events if _is_publish(e)]
    polls = [e for e in events if _is_poll(e)] + _poll_completions(events)
    total = history_bytes(events)
    signal_bytes, poll_bytes = history_bytes(signals), history_bytes(polls)
    assert first is not None
    return {
        "signals": len(signals),
        "signal_bytes_per_1k": signal_bytes * 1000 / tokens,
        "poll_bytes_per_1k": poll_bytes * 1000 / tokens,
        "baseline_bytes": total - signal_bytes - poll_bytes,
        "total_bytes": total,
        "ttft_stream": first,
    }


async def in_process_ttft(base_url: str) -> float:
    config = LLMConfig(base_url=base_url, model="scripted")
    async with OpenAIChatClient(config) as chat:
        started = time.perf_counter()
        first: list[float] = []

        def on_text(_delta: str) -> None:
            if not first:
                first.append(time.perf_counter() - started)

        await chat.complete([ChatMessage.user("write")], [], on_text=on_text)
    return first[0]


async def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=1000)
    parser.add_argument("--pause", type=float, default=0.005, help="seconds between the model's deltas")
    args = parser.parse_args(argv)
    words = " ".join(f"w{i}" for i in range(args.tokens))

    def script(_request: ScriptedRequest) -> Reply:
        return Reply(content=words, chunks=args.tokens, pause=args.pause)

    queue = f"streams-{uuid.uuid4().hex[:8]}"
    rows: list[dict[str, float]] = []
    local: list[float] = []
    with ScriptedModelServer(script) as model:
        async with (
            bench_env() as bench,
            workers(bench, ("signoff", queue), env={queue: {"SIGNOFF_LLM_BASE_URL": model.base_url}}),
        ):
            for _ in range(args.runs):
                rows.append(await one_run(bench.client, queue, args.tokens))
                local.append(await in_process_ttft(model.base_url))
    if any(r["signals"] > MAX_SIGNALS for r in rows):
        raise BenchError(f"a model turn sent more than {MAX_SIGNALS} signals: {[r['signals'] for r in rows]}")
    stats = {key: summary([r[key] for r in rows]) for key in rows[0]}
    stats["ttft_in_process"] = summary(local)
    ratio_ttft = stats["ttft_stream"]["p50"] / stats["ttft_in_process"]["p50"]
    ratio_bytes = stats["total_bytes"]["p50"] / stats["baseline_bytes"]["p50"]
    text = table(
        f"Live tokens: {args.tokens} deltas per model turn, {args.pause * 1000:g} ms apart, one reader "
        f"(time to first token stream / in process {ratio_ttft:.1f}×; history with / without the stream "
        f"{ratio_bytes:.2f}×)",
        ["measure", "p50", "p95", "max"],
        [
            ["signals per model turn", stats["signals"]["p50"], stats["signals"]["p95"], stats["signals"]["max"]],
            ["signal bytes per 1,000 tokens", *(stats["signal_bytes_per_1k"][k] for k in ("p50", "p95", "max"))],
            ["poll bytes per 1,000 tokens", *(stats["poll_bytes_per_1k"][k] for k in ("p50", "p95", "max"))],
            ["history bytes, run without stream", *(stats["baseline_bytes"][k] for k in ("p50", "p95", "max"))],
            ["time to first token, stream (s)", *(stats["ttft_stream"][k] for k in ("p50", "p95", "max"))],
            ["time to first token, in process (s)", *(stats["ttft_in_process"][k] for k in ("p50", "p95", "max"))],
        ],
    )
    result = {
        "args": vars(args),
        "stats": stats,
        "max_signals": MAX_SIGNALS,
        "ratio_ttft": ratio_ttft,
        "ratio_history_bytes": ratio_bytes,
    }
    write_results("streams", result, [text])
    return result


if __name__ == "__main__":
    run(main)
