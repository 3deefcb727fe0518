"""What the model says cannot wedge a run (issue 16, finding 1; CONTRACT v3 "Input limits").

Each test sends the run a model answer that once failed its workflow task forever, or
left a call that could never be decided, and checks the run's history for
WorkflowTaskFailed, the answer each call got, and how many model requests were paid.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from temporalio.client import Client

from signoff.contract import AgentRunResult
from signoff.messages import ChatMessage, ToolCall
from tests.helpers import (
    Reply,
    ScriptedModelServer,
    ScriptedRequest,
    agents_for,
    running_worker,
    start_run,
    task_failures,
    wait_pending,
)


def tool_answers(request: ScriptedRequest) -> list[str]:
    return [m.content or "" for m in request.messages if m.role == "tool"]


def once(*calls: ToolCall) -> Callable[[ScriptedRequest], Reply]:
    """A script: these calls first, then a text listing the tool answers it was shown."""

    def script(request: ScriptedRequest) -> Reply:
        if request.round == 1:
            return Reply.tool_calls(list(calls), chunks=1)
        return Reply.text(json.dumps(tool_answers(request)))

    return script


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        ('{"command": NaN}', "NaN is not a JSON number"),
        ('{"command": "ls", "timeout_secs": Infinity}', "Infinity is not a JSON number"),
        ('{"command": "ls", "timeout_secs": -1e400}', "is too large for a JSON number"),
        ('{"command": ' * 100_000 + '"ls"' + "}" * 100_000, "nested deeper than 64 levels"),
    ],
)
async def test_arguments_that_are_not_strict_json_are_answered_once_without_a_retry(
    client: Client, task_queue: str, tmp_path: Path, arguments: str, why: str
) -> None:
    with ScriptedModelServer(once(ToolCall(id="call_1", name="run_command", arguments=arguments))) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_run(client, task_queue)
            result: AgentRunResult = await handle.result()
            assert await task_failures(handle) == []
            events = await handle.query("events")
    # The event, not the transcript: a 1.5 MB answer makes the transcript budget elide its tool result.
    [answer] = [e["content"] for e in events if e["type"] == "tool_result"]
    assert answer.startswith("Error: invalid JSON arguments for run_command: ") and why in answer
    assert model.request_count == 2 and result.approvals == []


async def test_five_thousand_calls_in_one_answer_are_cut_without_wedging_the_run(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    calls = [ToolCall(id=f"c{i}", name="list_dir", arguments="{}") for i in range(5_000)]
    with ScriptedModelServer(once(*calls)) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_run(client, task_queue)
            result: AgentRunResult = await handle.result()
            events = await handle.query("events")
            assert await task_failures(handle) == []
    answers = json.loads(result.text or "")
    assert len(answers) == 5_000 and answers[64:] == ["Error: too many tool calls in one turn (limit 64)"] * 4_936
    assert model.request_count == 2
    # One event says what was cut; the feed keeps the run's start instead of 10,000 events about it.
    cut = [e for e in events if e["type"] == "error"]
    assert len(cut) == 1 and "4,936 past the limit of 64" in cut[0]["message"]
    assert events[0]["seq"] == 0


async def test_two_calls_with_one_id_each_get_an_id_of_their_own_and_the_model_sees_its_own(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    dup = [ToolCall(id="dup", name="run_command", arguments=json.dumps({"command": f"echo {n}"})) for n in (1, 2)]
    with ScriptedModelServer(once(*dup)) as model:  # strict: each tool message must answer a call it was sent
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_run(client, task_queue)
            pending = await wait_pending(handle, 2)
            ids = [p["call_id"] for p in pending]
            assert len(set(ids)) == 2 and "dup" not in ids
            for call_id, verdict in zip(ids, (True, False), strict=True):
                await handle.execute_update("submit_tool_approval", {"call_id": call_id, "approved": verdict})
            result: AgentRunResult = await handle.result()
    assistant, *tools = model.requests[1].raw["messages"][-3:]
    assert [c["id"] for c in assistant["tool_calls"]] == ["dup", "dup"]
    assert [m["tool_call_id"] for m in tools] == ["dup", "dup"]
    assert json.loads(result.text or "") == ["exit code: 0\n1\n", "Rejected: User denied"]
    calls = result.messages[-4].tool_calls or []
    assert [(c.id, c.model_id) for c in calls] == [(ids[0], "dup"), (ids[1], "dup")]


@pytest.mark.parametrize("model_id", ["*", "", "a`b", "x" * 129, "call 1", "c\x1b[2J", "é"])
async def test_an_id_that_is_empty_a_wildcard_or_malformed_is_replaced_by_one_of_signoffs(
    client: Client, task_queue: str, tmp_path: Path, model_id: str
) -> None:
    calls = [
        ToolCall(id=model_id, name="run_command", arguments='{"command": "echo w"}'),
        ToolCall(id="call_ok", name="run_command", arguments='{"command": "echo k"}'),
    ]
    with ScriptedModelServer(once(*calls)) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_run(client, task_queue)
            pending = await wait_pending(handle, 2)
            replaced = pending[0]["call_id"]
            assert replaced.startswith("call_") and replaced != "call_ok" and pending[1]["call_id"] == "call_ok"
            # "*" still means every pending call, and only that: it cannot name the model's call.
            await handle.execute_update("submit_tool_approval", {"call_id": "*", "approved": False, "reason": "no"})
            result: AgentRunResult = await handle.result()
    assert json.loads(result.text or "") == ["Rejected: no", "Rejected: no"]
    assistant, first, _ = model.requests[1].raw["messages"][-3:]
    shown = model_id or replaced  # an empty id is none at all: the model is shown signoff's
    assert assistant["tool_calls"][0]["id"] == shown and first["tool_call_id"] == shown


async def test_a_resumed_transcript_with_one_id_twice_opens_two_calls_that_can_be_decided(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    dup = [ToolCall(id="dup", name="run_command", arguments=json.dumps({"command": f"echo {n}"})) for n in (1, 2)]
    transcript = [ChatMessage.user("go"), ChatMessage.assistant(None, dup)]
    with ScriptedModelServer([Reply.text("done")]) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_run(client, task_queue, prompt=None, messages=transcript)
            pending = await wait_pending(handle, 2)
            assert len({p["call_id"] for p in pending}) == 2
            await handle.execute_update("submit_tool_approval", {"call_id": "*", "approved": False})
            result: AgentRunResult = await handle.result()
    assert result.text == "done" and [m.content for m in result.messages[-3:-1]] == ["Rejected: User denied"] * 2
    assert [m["tool_call_id"] for m in model.requests[0].raw["messages"][-2:]] == ["dup", "dup"]
