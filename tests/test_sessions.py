"""Durable sessions (CONTRACT v4): `options.session`, `send_message`, `end_session`, the `session` query.

Against a real dev server, with the scripted OpenAI-compatible model: turns whose history
reaches the model, a parked turn that a decision continues, bad inputs refused by the
validators, a worker killed mid-turn, and a session that continues as new between turns.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from signoff.contract import AgentRunResult, RunOptions
from signoff.messages import ChatMessage
from signoff.runtime.worker import connect_address
from tests.conftest import start_dev_server
from tests.helpers import (
    Reply,
    ScriptedModelServer,
    ScriptedRequest,
    agents_for,
    assert_eventually,
    call,
    running_worker,
    start_run,
)
from tests.processes import READY, Processes, free_port
from tests.test_durability import worker_env


def chat(request: ScriptedRequest) -> Reply:
    """`run: CMD` asks for run_command (gated); after a tool, report it; else echo what it saw."""
    last = request.last
    if last.role == "tool":
        return Reply.text(f"ran: {last.content}")
    text = last.content or ""
    if text.startswith("run: "):
        turn = sum(m.role == "user" for m in request.messages)
        return Reply(content="on it", calls=(call("run_command", f"call_t{turn}", command=text[5:]),))
    users = [m.content for m in request.messages if m.role == "user"]
    return Reply.text(f"#{len(users)} {text} (seen: {' | '.join(u or '' for u in users)})")


async def start_session(client: Client, queue: str, prompt: str | None = None, **options: Any) -> WorkflowHandle:
    return await start_run(
        client, queue, prompt, id=f"session-{uuid.uuid4()}", options=RunOptions(session=True, **options)
    )


async def send(handle: WorkflowHandle, text: str) -> dict[str, Any]:
    answer: dict[str, Any] = await handle.execute_update("send_message", {"text": text})
    return answer


async def refused(handle: WorkflowHandle, update: str, payload: Any) -> str:
    with pytest.raises(WorkflowUpdateFailedError) as failure:
        await handle.execute_update(update, payload)
    return str(failure.value.cause)


async def settled(handle: WorkflowHandle, turn: int, status: str = "Completed", timeout: float = 20) -> dict[str, Any]:
    async def check() -> dict[str, Any]:
        view: dict[str, Any] = await handle.query("session")
        assert (view["turn"], view["status"]) == (turn, status), view
        return view

    return await assert_eventually(check, timeout)


async def test_turns_carry_the_history_to_the_model_and_end_session_gives_the_result(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    with ScriptedModelServer(chat) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_session(client, task_queue)
            assert (await handle.query("status"))["status"] == "AwaitingMessage"
            assert (await handle.query("session"))["turn"] == 0
            first = await send(handle, "hello")
            second = await send(handle, "again")
            view = await handle.query("session")
            result = await handle.execute_update("end_session", {}, result_type=AgentRunResult)
            final: AgentRunResult = await handle.result()
    assert first == {"status": "Completed", "text": "#1 hello (seen: hello)", "pending": []}
    assert second["text"] == "#2 again (seen: hello | again)"
    assert view == {"status": "Completed", "text": second["text"], "pending": [], "turn": 2, "session": True}
    assert model.requests[-1].messages[-2:] == [ChatMessage.assistant(first["text"]), ChatMessage.user("again")]
    assert [m.role for m in model.requests[-1].messages if m.role != "system"] == ["user", "assistant", "user"]
    assert result == final
    assert final.finish_reason.value == "stop" and final.text == second["text"] and final.rounds == 2
    assert [(m.role, m.content) for m in final.messages] == [
        ("user", "hello"),
        ("assistant", first["text"]),
        ("user", "again"),
        ("assistant", second["text"]),
    ]


async def test_a_session_started_with_a_prompt_answers_it_first(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    with ScriptedModelServer(chat) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_session(client, task_queue, "first")
            view = await settled(handle, 1)
            answer = await send(handle, "second")
            await handle.execute_update("end_session", {})
            result: AgentRunResult = await handle.result()
    assert view["text"] == "#1 first (seen: first)"
    assert answer["text"] == "#2 second (seen: first | second)"
    assert len(result.messages) == 4


async def test_a_parked_turn_answers_awaiting_approval_and_its_decision_continues_the_turn(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    with ScriptedModelServer(chat) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_session(client, task_queue)
            parked = await send(handle, "run: echo hi")
            while_parked = await refused(handle, "send_message", {"text": "more"})
            end_parked = await refused(handle, "end_session", {})
            (request,) = parked["pending"]
            ack = await handle.execute_update(
                "submit_tool_approval",
                {"call_id": request["call_id"], "approved": True, "arguments_digest": request["arguments_digest"]},
            )
            view = await settled(handle, 1)
            after = await send(handle, "thanks")
            await handle.execute_update("end_session", {})
            result: AgentRunResult = await handle.result()
    assert parked["status"] == "AwaitingApproval" and parked["text"] == "on it"
    assert (request["call_id"], request["name"], request["arguments"]) == (
        "call_t1",
        "run_command",
        {"command": "echo hi"},
    )
    assert "turn 1 waits for decisions on call_t1" in while_parked
    assert "turn 1 waits for decisions on call_t1" in end_parked and "end the session" in end_parked
    assert ack["accepted"] == ["call_t1"]
    assert view["text"] == "ran: exit code: 0\nhi\n" and view["pending"] == []
    assert after["text"].startswith("#2 thanks")
    assert [a.call_id for a in result.approvals] == ["call_t1"] and result.approvals[0].approved
    assert [m.role for m in result.messages] == ["user", "assistant", "tool", "assistant", "user", "assistant"]


@pytest.mark.parametrize(
    "payload, message",
    [
        ({"text": ""}, "the message is empty"),
        ({"text": "  \n "}, "the message is empty"),
        ({"text": "x" * 65_537}, "text: String should have at most 65536 characters"),
        ({}, "text: Field required"),
        ({"text": "hi", "more": 1}, "more: Extra inputs are not permitted"),
        ("hi", "invalid SessionMessage"),
        ({"text": 3}, "text: Input should be a valid string"),
    ],
)
async def test_bad_messages_are_refused_naming_the_problem(
    client: Client, task_queue: str, tmp_path: Path, payload: Any, message: str
) -> None:
    with ScriptedModelServer(chat) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_session(client, task_queue)
            why = await refused(handle, "send_message", payload)
            assert (await handle.query("session"))["turn"] == 0  # nothing was taken
            await handle.terminate("done")
    assert message in why, why
    assert "Traceback" not in why


async def test_end_session_takes_nothing_and_a_closed_session_refuses_messages(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    with ScriptedModelServer(chat) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_session(client, task_queue)
            extra = await refused(handle, "end_session", {"now": True})
            await send(handle, "hello")
            await handle.execute_update("end_session", {})
            result: AgentRunResult = await handle.result()
            with pytest.raises(RPCError) as after:
                await send(handle, "anyone?")
    assert "now: Extra inputs are not permitted" in extra
    assert result.text == "#1 hello (seen: hello)"
    assert "completed" in after.value.message


async def test_a_run_that_is_no_session_refuses_session_updates(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    with ScriptedModelServer([Reply(calls=(call("run_command", "call_1", command="true"),))]) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_run(client, task_queue, "go")
            await assert_eventually(lambda: _pending(handle))
            message = await refused(handle, "send_message", {"text": "hi"})
            end = await refused(handle, "end_session", {})
            view = await handle.query("session")
            await handle.terminate("done")
    assert "this run is not a session" in message and "this run is not a session" in end
    assert view["session"] is False


async def _pending(handle: WorkflowHandle) -> None:
    assert await handle.query("pending_approvals")


async def test_a_message_sent_while_the_first_turn_runs_is_refused(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    release = threading.Event()

    def slow(request: ScriptedRequest) -> Reply:
        release.wait(30)
        return chat(request)

    with ScriptedModelServer(slow) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_session(client, task_queue, "first")
            await assert_eventually(lambda: _asked(model, 1))
            why = await refused(handle, "send_message", {"text": "second"})
            running = await handle.query("session")
            release.set()
            await settled(handle, 1)
            await handle.execute_update("end_session", {})
            await handle.result()
    assert "turn 1 is still running: send a message once it has answered" in why
    assert (running["status"], running["turn"]) == ("Running", 1)


async def _asked(model: ScriptedModelServer, count: int) -> None:
    assert model.request_count >= count


# --- a worker killed mid-turn ---------------------------------------------------------------


async def test_a_turn_survives_its_worker_killed_while_the_model_answers(
    client: Client, task_queue: str, procs: Processes, tmp_path: Path
) -> None:
    """The worker dies while the turn's model request is in flight: `send_message` waits on, the
    chat activity is retried on the next worker (after its heartbeat timeout), and answers."""
    hold = threading.Event()

    def first_hangs(request: ScriptedRequest) -> Reply:
        if request.last.content == "slow" and not hold.is_set():
            hold.wait(60)  # the first worker's request: answered only once that worker is gone
        return chat(request)

    address = client.service_client.config.target_host
    with ScriptedModelServer(first_hangs) as model:
        env = worker_env(address, task_queue, model, tmp_path)
        first = procs.worker("worker-1", env)
        await first.wait_for_output(READY)
        handle = await start_session(client, task_queue)
        assert (await send(handle, "quick"))["text"].startswith("#1 quick")
        answer = asyncio.ensure_future(send(handle, "slow"))
        await assert_eventually(lambda: _asked(model, 2), 15)
        first.kill()
        hold.set()
        second = procs.worker("worker-2", env)
        await second.wait_for_output(READY)
        slow_answer = await asyncio.wait_for(answer, 90)
        await handle.execute_update("end_session", {})
        result = AgentRunResult.model_validate(await handle.result())
    assert slow_answer["status"] == "Completed" and slow_answer["text"] == "#2 slow (seen: quick | slow)"
    assert [m.content for m in result.messages if m.role == "user"] == ["quick", "slow"]
    assert result.rounds == 2


# --- continue-as-new between turns ------------------------------------------------------------


@pytest.fixture(scope="module")
async def small_history_env() -> AsyncIterator[WorkflowEnvironment]:
    """A dev server that suggests continue-as-new after a few events."""
    env = await start_dev_server("--dynamic-config-value", "limit.historyCount.suggestContinueAsNew=12")
    yield env
    await env.shutdown()


async def test_a_session_continues_as_new_between_turns_and_keeps_its_transcript_and_turns(
    small_history_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    client, queue = small_history_env.client, f"tq-{uuid.uuid4()}"
    with ScriptedModelServer(chat) as model:
        async with running_worker(client, queue, model, agents_for(tmp_path)):
            handle = await start_session(client, queue)
            answers = [await send(handle, f"m{i}") for i in range(1, 5)]
            parked = await send(handle, "run: echo later")
            (request,) = parked["pending"]
            await handle.execute_update("submit_tool_approval", {"call_id": request["call_id"], "approved": True})
            view = await settled(handle, 5)
            last = await send(handle, "m6")
            result = await handle.execute_update("end_session", {}, result_type=AgentRunResult)
            runs = [w async for w in client.list_workflows(f'WorkflowId="{handle.id}"')]
    assert [a["text"].split(" (")[0] for a in answers] == ["#1 m1", "#2 m2", "#3 m3", "#4 m4"]
    assert view["text"] == "ran: exit code: 0\nlater\n"
    assert last["text"] == "#6 m6 (seen: m1 | m2 | m3 | m4 | run: echo later | m6)"
    assert len(runs) > 1, "the session never continued as new"
    assert [m.content for m in result.messages if m.role == "user"] == ["m1", "m2", "m3", "m4", "run: echo later", "m6"]
    assert [a.call_id for a in result.approvals] == ["call_t5"]


async def test_a_session_idle_across_a_server_restart_takes_its_next_message(
    task_queue: str, procs: Processes, tmp_path: Path
) -> None:
    """Between turns the session waits on nothing but its state: the dev server (its database
    kept) and the worker restarted, the next message is answered with the whole history."""
    db, port, ui_port = tmp_path / "t.db", free_port(), free_port()
    address = f"127.0.0.1:{port}"
    with ScriptedModelServer(chat) as model:
        env = worker_env(address, task_queue, model, tmp_path)
        server = await procs.dev_server("server-1", db, port, ui_port)
        first = procs.worker("worker-1", env)
        await first.wait_for_output(READY)
        handle = await start_session(await connect_address(address), task_queue)
        await send(handle, "before")
        await first.terminate()
        await server.terminate()
        await procs.dev_server("server-2", db, port, ui_port)
        procs.worker("worker-2", env)
        handle = (await connect_address(address)).get_workflow_handle(handle.id)
        after = await asyncio.wait_for(send(handle, "after"), 60)
        await handle.execute_update("end_session", {})
        result = AgentRunResult.model_validate(await handle.result())
    assert after["text"] == "#2 after (seen: before | after)"
    assert [m.content for m in result.messages if m.role == "user"] == ["before", "after"]


async def test_a_session_cancelled_between_turns_finishes_cancelled(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    with ScriptedModelServer(chat) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_session(client, task_queue)
            await send(handle, "hello")
            await handle.cancel()
            result = AgentRunResult.model_validate(await handle.result())
    assert result.finish_reason.value == "cancelled" and result.text == "#1 hello (seen: hello)"
