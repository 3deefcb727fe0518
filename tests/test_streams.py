"""Every run hosts a Workflow Stream (CONTRACT v4): the model's text (`tokens`) and its events (`events`).

Against a real dev server, with the scripted model writing slowly: a run's stream has its
text, batched into a bounded number of signals per model turn, and the items of its `events`
query; a reader cut off mid-turn comes back from its offset and has every token once, in
order; a session that continues as new keeps its transcript, and its stream's offsets go on.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from signoff.activities.tokens import MAX_SIGNALS
from signoff.contract import TOPIC_EVENTS, TOPIC_TOKENS, AgentRunResult, RunOptions
from signoff.operator.stream import StreamItem, TurnText, follow, stream_offset
from tests.conftest import start_dev_server
from tests.helpers import (
    Reply,
    ScriptedModelServer,
    ScriptedRequest,
    agents_for,
    assert_eventually,
    running_worker,
    start_run,
)
from tests.processes import READY, Processes
from tests.test_durability import worker_env

PUBLISH_SIGNAL = "__temporal_workflow_stream_publish"
LONG = " ".join(f"word{i}" for i in range(60))


def slow(request: ScriptedRequest) -> Reply:
    """A long answer in many small deltas, written slowly: readers see it arrive in pieces."""
    users = [m.content for m in request.messages if m.role == "user"]
    return Reply(content=f"{users[-1]}: {LONG}", chunks=40, pause=0.02)


async def collect(items: AsyncIterator[StreamItem], until: Any) -> list[StreamItem]:
    got: list[StreamItem] = []
    async for item in items:
        got.append(item)
        if until(got):
            break
    return got


async def publish_signals(handle: WorkflowHandle) -> int:
    history = await handle.fetch_history()
    return sum(
        1
        for e in history.events
        if e.HasField("workflow_execution_signaled_event_attributes")
        and e.workflow_execution_signaled_event_attributes.signal_name == PUBLISH_SIGNAL
    )


async def test_a_run_streams_its_text_in_few_signals_and_its_events(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    with ScriptedModelServer(slow) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_run(client, task_queue, "hello")
            items = [item async for item in follow(client, handle.id)]
            result: AgentRunResult = await handle.result()
            events = await handle.query("events")
    tokens = [i for i in items if i.topic == TOPIC_TOKENS]
    text = TurnText()
    for item in tokens:
        text.add(item.data)
    assert text.texts == {1: result.text}
    assert {i.data["turn"] for i in tokens} == {1} and all(i.data["attempt"] == 1 for i in tokens)
    assert 1 < len(tokens) <= MAX_SIGNALS, "the text came whole, or in more signals than a turn may send"
    assert await publish_signals(handle) == len(tokens)
    assert [i.data for i in items if i.topic == TOPIC_EVENTS] == events
    offsets = [i.offset for i in items]
    assert offsets == sorted(set(offsets))


async def test_a_reader_cut_off_mid_turn_comes_back_from_its_offset_and_has_every_token_once(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    with ScriptedModelServer(slow) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_run(
                client, task_queue, None, id=f"session-{uuid.uuid4()}", options=RunOptions(session=True)
            )
            answer = asyncio.ensure_future(handle.execute_update("send_message", {"text": "one"}))
            first = await collect(follow(client, handle.id, topics=[TOPIC_TOKENS]), lambda got: len(got) == 1)
            cut_at = first[-1].offset
            mid_turn = not answer.done()
            rest = await collect(
                follow(client, handle.id, cut_at + 1, topics=[TOPIC_TOKENS]),
                lambda got: "".join(i.data["text"] for i in first + got) == f"one: {LONG}",
            )
            settled = await answer
            await handle.execute_update("end_session", {})
            await handle.result()
    assert mid_turn, "the turn had ended before the reader was cut off"
    assert settled["text"] == f"one: {LONG}"
    offsets = [i.offset for i in first + rest]
    assert offsets == sorted(set(offsets)) and rest[0].offset > cut_at


@pytest.fixture(scope="module")
async def small_history_env() -> AsyncIterator[WorkflowEnvironment]:
    """A dev server that suggests continue-as-new after a few events."""
    env = await start_dev_server("--dynamic-config-value", "limit.historyCount.suggestContinueAsNew=12")
    yield env
    await env.shutdown()


async def test_a_session_that_continues_as_new_keeps_its_transcript_and_its_stream_offsets(
    small_history_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    client, queue = small_history_env.client, f"tq-{uuid.uuid4()}"

    def quick(request: ScriptedRequest) -> Reply:
        return Reply.text(f"re: {request.last.content}", chunks=4)

    with ScriptedModelServer(quick) as model:
        async with running_worker(client, queue, model, agents_for(tmp_path)):
            handle = await start_run(
                client, queue, None, id=f"session-{uuid.uuid4()}", options=RunOptions(session=True)
            )
            reader = asyncio.ensure_future(collect(follow(client, handle.id), lambda got: False))
            answers = [await handle.execute_update("send_message", {"text": f"m{i}"}) for i in range(1, 6)]
            offset_at_end = await stream_offset(client, handle.id)
            result = await handle.execute_update("end_session", {}, result_type=AgentRunResult)
            items = await asyncio.wait_for(reader, 30)
            runs = [w async for w in client.list_workflows(f'WorkflowId="{handle.id}"')]
            late = [i async for i in follow(client, handle.id, offset_at_end - 3)]  # the closed run's log, read late
    assert len(runs) > 1, "the session never continued as new"
    assert [a["text"] for a in answers] == [f"re: m{i}" for i in range(1, 6)]
    assert [m.content for m in result.messages if m.role == "user"] == [f"m{i}" for i in range(1, 6)]
    offsets = [i.offset for i in items]
    assert offsets == list(range(offsets[0], offsets[0] + len(offsets))), "a gap or a repeat across the moves"
    text = TurnText()
    for item in items:
        if item.topic == TOPIC_TOKENS:
            text.add(item.data)
    assert list(text.texts.values()) == [f"re: m{i}" for i in range(1, 6)]
    seqs = [i.data["seq"] for i in items if i.topic == TOPIC_EVENTS]
    assert seqs == list(range(len(seqs)))
    assert offset_at_end == offsets[-1] + 1 or offsets[-1] >= offset_at_end
    assert [i.offset for i in late] == [i.offset for i in items if i.offset >= offset_at_end - 3]
    assert [i.data for i in late] == [i.data for i in items if i.offset >= offset_at_end - 3]


async def test_a_model_turn_retried_after_its_worker_died_streams_its_text_again_as_the_next_attempt(
    client: Client, task_queue: str, procs: Processes, tmp_path: Path
) -> None:
    """The worker dies while the model writes: the reader has part of attempt 1, then attempt 2
    whole (the retried activity on the next worker); the latest attempt of the turn is the answer."""
    first_seen: list[bool] = []

    def slow_then_quick(request: ScriptedRequest) -> Reply:
        pause = 0.5 if not first_seen else 0.0  # the first worker's request writes slowly
        first_seen.append(True)
        return Reply(content=f"answer: {LONG}", chunks=30, pause=pause)

    address = client.service_client.config.target_host
    with ScriptedModelServer(slow_then_quick) as model:
        env = worker_env(address, task_queue, model, tmp_path)
        first = procs.worker("worker-1", env)
        await first.wait_for_output(READY)
        handle = await start_run(client, task_queue, "go")
        items: list[StreamItem] = []

        async def read() -> None:
            async for item in follow(client, handle.id, topics=[TOPIC_TOKENS]):
                items.append(item)

        reader = asyncio.ensure_future(read())
        await assert_eventually(lambda: _has(items, 1), 30)
        first.kill()
        second = procs.worker("worker-2", env)
        await second.wait_for_output(READY)
        result = AgentRunResult.model_validate(await asyncio.wait_for(handle.result(), 120))
        await asyncio.wait_for(reader, 30)
    attempts = [i.data["attempt"] for i in items]
    assert attempts[0] == 1 and attempts[-1] == 2 and attempts == sorted(attempts), attempts
    text = TurnText()
    for item in items:
        text.add(item.data)
    assert text.texts == {1: result.text} and result.text == f"answer: {LONG}"


async def _has(items: list[StreamItem], attempt: int) -> None:
    assert any(i.data["attempt"] == attempt for i in items)
