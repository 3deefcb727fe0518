"""No run wedges: each limit the v1 runs hit now has a defined outcome (issue 8's findings).

Every test runs on the real dev server without an external payload store, so what keeps
the run within Temporal's limits is signoff's own caps and budgets.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowFailureError, WorkflowUpdateFailedError
from temporalio.testing import WorkflowEnvironment

from signoff.contract import AgentRunResult, RunOptions
from signoff.loop.limits import cap_text
from signoff.messages import ToolCall, Usage
from tests.conftest import start_dev_server
from tests.helpers import (
    Reply,
    ScriptedModelServer,
    ScriptedRequest,
    agents_for,
    call,
    running_worker,
    start_run,
    wait_pending,
)

BIG = 376 * 1024


def tool_messages(request: ScriptedRequest) -> list[str]:
    return [m.content or "" for m in request.messages if m.role == "tool"]


async def test_nine_large_reads_in_one_round_finish_with_cut_outputs(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    (tmp_path / "big.txt").write_text("x" * BIG)

    def script(request: ScriptedRequest) -> Reply:
        if request.round == 1:
            return Reply.tool_calls([call("read_file", f"call_{i}", path="big.txt") for i in range(9)])
        return Reply.text(f"{len(tool_messages(request))} results, longest {max(map(len, tool_messages(request)))}")

    with ScriptedModelServer(script) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            result: AgentRunResult = await (await start_run(client, task_queue)).result()
    contents = [m.content or "" for m in result.messages if m.role == "tool"]
    cut = [c for c in contents if "characters cut: tool output over the limit of 65,536 characters" in c]
    elided = [c for c in contents if c.startswith("[elided: a tool result of 65,")]
    assert result.finish_reason == "stop" and len(contents) == 9
    assert len(cut) + len(elided) == 9 and cut and elided  # cut to 64K each, then the oldest elided
    assert sum(map(len, contents)) <= 500_000


@pytest.mark.parametrize("size", [65_537, 200_000, 10_000_000])
def test_a_cut_output_fits_its_limit_and_says_truly_how_much_was_cut(size: int) -> None:
    text = "A" * (size // 2) + "Z" * (size - size // 2)
    once = cap_text(text, 65_536)
    kept = once.count("A") + once.count("Z")
    assert len(once) <= 65_536 and once.startswith("A") and once.endswith("Z")
    assert f"[... {size - kept:,} characters cut: tool output over the limit of 65,536 characters ...]" in once
    assert cap_text(once, 65_536) == once  # the loop caps what the tool activity capped: no second cut


@pytest.fixture(scope="module")
async def small_history_env() -> AsyncIterator[WorkflowEnvironment]:
    env = await start_dev_server("--dynamic-config-value", "limit.historyCount.suggestContinueAsNew=40")
    yield env
    await env.shutdown()


async def test_a_large_read_every_round_stays_within_budget_across_continue_as_new(
    small_history_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    client, queue = small_history_env.client, f"tq-{uuid.uuid4()}"
    (tmp_path / "big.txt").write_text("y" * (256 * 1024))
    rounds = 24

    def script(request: ScriptedRequest) -> Reply:
        if request.round <= rounds:
            return Reply.tool_calls([call("read_file", f"call_{request.round}", path="big.txt")])
        return Reply.text(f"saw {len(tool_messages(request))} tool messages")

    with ScriptedModelServer(script) as model:
        async with running_worker(client, queue, model, agents_for(tmp_path)):
            handle = await start_run(client, queue, options=RunOptions(max_rounds=rounds + 1))
            result: AgentRunResult = await handle.result()
        sizes = [sum(len(m.content or "") for m in r.messages) for r in model.requests]
    runs = [w async for w in client.list_workflows(f'WorkflowId="{handle.id}"')]
    assert result.text == f"saw {rounds} tool messages" and len(runs) > 1
    assert max(sizes) < 600_000  # the transcript budget (500,000 bytes) with one round's growth
    elided = [m.content for m in result.messages if m.role == "tool" and (m.content or "").startswith("[elided: ")]
    assert elided and "removed to keep the transcript within its budget of 500,000 bytes" in str(elided[0])


def one_gated_call(request: ScriptedRequest) -> Reply:
    if request.round == 1:
        return Reply.tool_calls([call("run_command", "call_1", command="echo hi")])
    return Reply.text(tool_messages(request)[-1])


async def test_an_oversized_denial_reason_is_refused_and_never_stored(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    huge = "r" * 1_200_000
    with ScriptedModelServer(one_gated_call) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_run(client, task_queue)
            await wait_pending(handle)
            with pytest.raises(WorkflowUpdateFailedError) as failure:
                await handle.execute_update(
                    "submit_tool_approval", {"call_id": "call_1", "approved": False, "reason": huge}
                )
            await handle.signal("tool_approval", {"call_id": "call_1", "approved": False, "reason": huge})
            await wait_pending(handle)
            events = await handle.query("events", 0)
            await handle.signal("tool_approval", {"call_id": "call_1", "approved": False, "reason": "too risky"})
            result: AgentRunResult = await handle.result()
    assert "reason: String should have at most 4096 characters" in str(failure.value.cause)
    (ignored,) = [e for e in events if e["type"] == "decision_ignored"]
    assert "4096" in ignored["reason"] and len(json.dumps(ignored)) < 5_000
    assert ignored["payload"] is None  # over a limit: not stored, not even cut short
    assert result.text == "Rejected: too risky"
    assert len(result.model_dump_json()) < 20_000


async def test_thousands_of_calls_in_one_answer_are_answered_past_the_per_turn_limit(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    calls = [ToolCall(id=f"c{i}", name="list_dir", arguments="{}") for i in range(2_100)]

    def script(request: ScriptedRequest) -> Reply:
        if request.round == 1:
            return Reply.tool_calls(calls, chunks=1)
        return Reply.text(f"{len(tool_messages(request))} answers")

    with ScriptedModelServer(script) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_run(client, task_queue)
            result: AgentRunResult = await handle.result()
            history = await handle.fetch_history()
    contents = [m.content for m in result.messages if m.role == "tool"]
    scheduled = [e for e in history.events if e.HasField("activity_task_scheduled_event_attributes")]
    assert result.text == "2100 answers"
    assert contents[64:] == ["Error: too many tool calls in one turn (limit 64)"] * (2_100 - 64)
    assert len(scheduled) == 2 + 64  # two model turns and the calls within the limit


async def test_a_model_answer_too_large_to_record_fails_the_run_once_without_retrying(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    with ScriptedModelServer([Reply.text("z" * 3_000_000, chunks=30)]) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_run(client, task_queue)
            with pytest.raises(WorkflowFailureError) as failure:
                await handle.result()
    assert failure.value.cause.type == "PayloadTooLarge"  # type: ignore[attr-defined]
    assert "over the payload limit" in str(failure.value.cause) and "SIGNOFF_PAYLOAD_STORE" in str(failure.value.cause)
    assert model.request_count == 1


async def test_an_empty_decision_list_is_recorded(client: Client, task_queue: str, tmp_path: Path) -> None:
    with ScriptedModelServer(one_gated_call) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_run(client, task_queue)
            await wait_pending(handle)
            await handle.signal("tool_approval", [])
            await handle.signal("tool_approval", {"call_id": "*", "approved": True})
            await handle.result()
            events = await handle.query("events", 0)
    (ignored,) = [e for e in events if e["type"] == "decision_ignored"]
    assert "no decision given" in ignored["reason"]


@pytest.mark.parametrize("options", [{"max_rounds": 1_000_000}, {"max_rounds": 0}, {"max_total_tokens": 0}])
async def test_limits_out_of_range_fail_the_run_as_invalid_input(
    client: Client, task_queue: str, tmp_path: Path, options: dict[str, int]
) -> None:
    with ScriptedModelServer(one_gated_call) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await client.start_workflow(
                "AgentRun", {"prompt": "hi", "options": options}, id=f"run-{uuid.uuid4()}", task_queue=task_queue
            )
            with pytest.raises(WorkflowFailureError) as failure:
                await handle.result()
    assert failure.value.cause.type == "InvalidInput"  # type: ignore[attr-defined]
    assert f"options.{next(iter(options))}" in str(failure.value.cause)


async def test_a_spent_token_budget_finishes_with_length(client: Client, task_queue: str, tmp_path: Path) -> None:
    def script(request: ScriptedRequest) -> Reply:
        usage = Usage(prompt_tokens=600, completion_tokens=100, total_tokens=700)
        return Reply.tool_calls([call("list_dir", f"call_{request.round}")], usage=usage)

    with ScriptedModelServer(script) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_run(client, task_queue, options=RunOptions(max_total_tokens=2_000, max_rounds=50))
            result: AgentRunResult = await handle.result()
    assert (result.finish_reason, result.rounds, result.usage.total_tokens) == ("length", 3, 2_100)
    assert result.messages[-1].role == "tool"  # every call answered before the run ended


async def test_tool_activities_run_at_most_32_at_once_and_answers_keep_their_order(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    running, peak = 0, 0

    async def slow(n: int) -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.2)
        running -= 1
        return f"done {n}"

    from signoff.agent.builder import AgentBuilder
    from signoff.tools import tool

    agent = AgentBuilder("slow").with_tool(tool(name="slow")(slow)).build()

    def script(request: ScriptedRequest) -> Reply:
        if request.round == 1:
            return Reply.tool_calls([call("slow", f"c{i}", n=i) for i in range(48)], chunks=1)
        return Reply.text(",".join(tool_messages(request)))

    with ScriptedModelServer(script) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path, extra=[agent])):
            result: AgentRunResult = await (await start_run(client, task_queue, agent="slow")).result()
    assert result.text == ",".join(f"done {i}" for i in range(48))
    assert 1 < peak <= 32
