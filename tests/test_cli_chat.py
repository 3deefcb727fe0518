"""`signoff chat` as a real subprocess: a session's turns, its approvals inline, leaving and coming back."""

from __future__ import annotations

import asyncio
import signal
import uuid
from pathlib import Path

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle

from signoff.contract import AgentRunResult
from tests.cli_harness import Cli, cli, cli_environ, finish, read_until, served, spawn  # noqa: F401
from tests.helpers import assert_eventually
from tests.test_sessions import chat


async def test_chat_talks_approves_inline_leaves_at_end_of_input_and_comes_back_to_end(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    cli: Cli,  # noqa: F811
) -> None:
    session_id = f"chat-{uuid.uuid4().hex[:8]}"
    async with served(client, task_queue, tmp_path, chat):
        first = await cli("chat", "--id", session_id, stdin="hello\n\nrun: echo hi\n")
        handle = client.get_workflow_handle(session_id)
        parked = await handle.query("session")
        second = await cli("chat", "--id", session_id, stdin="y\nthanks\n/end\n")
        result = AgentRunResult.model_validate(await handle.result())

    assert first.code == 0, first.err
    assert f"started session {session_id}" in first.out
    assert "agent> #1 hello (seen: hello)" in first.out
    assert "agent> on it" in first.out and "call_t2" in first.out and "Approve run_command" in first.out
    assert f"Come back with: signoff chat --id {session_id}" in first.out
    assert (parked["status"], parked["turn"]) == ("AwaitingApproval", 2)

    assert second.code == 0, second.err
    history, _, rest = second.out.partition("Approve run_command")
    assert "you> hello" in history and "agent> #1 hello" in history and "you> run: echo hi" in history
    assert "agent> ran: exit code: 0" in rest and "agent> #3 thanks" in rest
    assert "finish" in rest.lower()
    assert [m.content for m in result.messages if m.role == "user"] == ["hello", "run: echo hi", "thanks"]
    assert [(a.call_id, a.approved, a.approver) for a in result.approvals] == [("call_t2", True, "tester")]


async def test_ctrl_c_leaves_the_session_waiting(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    cli_environ: dict[str, str],  # noqa: F811
) -> None:
    session_id = f"chat-{uuid.uuid4().hex[:8]}"
    async with served(client, task_queue, tmp_path, chat):
        proc = await spawn(cli_environ, "chat", "--id", session_id)
        await read_until(proc, "started session")
        handle = client.get_workflow_handle(session_id)
        await assert_eventually(lambda: _idle(handle))
        assert proc.stdout is not None
        await asyncio.wait_for(proc.stdout.readuntil(b"you> "), 30)  # at the prompt
        proc.send_signal(signal.SIGINT)
        done = await finish(proc, timeout=30)
        described = await handle.describe()
        again = await finish(await spawn(cli_environ, "chat", "--id", session_id), "hi\n/end\n")
    assert done.code == 130, done.err
    assert f"signoff chat --id {session_id}" in done.out
    assert described.status == WorkflowExecutionStatus.RUNNING
    assert again.code == 0 and "agent> #1 hi" in again.out, again.err


async def _idle(handle: WorkflowHandle) -> None:
    assert (await handle.query("status"))["status"] == "AwaitingMessage"


async def test_chat_refuses_a_run_that_is_no_session_and_an_ended_one(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    cli: Cli,  # noqa: F811
) -> None:
    async with served(client, task_queue, tmp_path, chat):
        run = await client.start_workflow(
            "AgentRun", {"prompt": "run: true"}, id=f"r-{uuid.uuid4()}", task_queue=task_queue
        )
        await assert_eventually(lambda: _parked(run))
        not_a_session = await cli("chat", "--id", run.id, stdin="hi\n")
        await run.terminate("done")
        ended = await cli("chat", "--id", run.id, stdin="hi\n")
    assert not_a_session.code == 1 and "is not a session" in not_a_session.err
    assert ended.code == 1 and "has ended" in ended.err


async def _parked(handle: WorkflowHandle) -> None:
    assert await handle.query("pending_approvals")
