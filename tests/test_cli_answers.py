"""The CLI says what is going on (issue 16, finding 6): edits checked and shown, runs that wait
say for what, a mistyped id says so, no worker is named as the reason, `--version`, `--json`."""

# ruff: noqa: F811 - the harness's fixtures are imported by name and taken as parameters

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from temporalio.client import Client

from signoff.cli.workers import no_worker
from signoff.contract import AgentRunResult, RunOptions
from tests.cli_harness import Cli, cli, cli_environ, read_until, served, spawn  # noqa: F401
from tests.helpers import start_run, wait_pending


async def test_version_names_the_installed_package(cli: Cli) -> None:
    done = await cli("--version")
    assert done.code == 0 and done.out.startswith("signoff 0.")


async def test_an_edit_that_does_not_fit_the_tool_is_refused_before_anything_is_sent(
    client: Client, task_queue: str, tmp_path: Path, cli: Cli
) -> None:
    async with served(client, task_queue, tmp_path):
        handle = await start_run(client, task_queue)
        await wait_pending(handle)
        unknown = await cli("approve", handle.id, "call_1", "--edit", '{"cmd": "ls"}', "--yes")
        wrong_type = await cli("approve", handle.id, "call_1", "--edit", '{"command": "ls", "timeout_secs": "x"}')
        assert len(await handle.query("pending_approvals")) == 1 and (await handle.query("events"))
        edited = await cli("approve", handle.id, "call_1", "--edit", '{"command": "echo edited"}', "--json")
        result: AgentRunResult = await handle.result()
    assert unknown.code == 2 and "('cmd' was unexpected)" in unknown.err and "nothing decided" in unknown.err
    assert wrong_type.code == 2 and "timeout_secs: 'x' is not of type 'integer'" in wrong_type.err
    assert edited.code == 0, edited.err
    assert "will run run_command with the edited arguments:" in edited.err
    assert edited.out.startswith("{"), edited
    ack = json.loads(edited.out)
    [decided] = ack["decided"]
    assert decided["edited_arguments"] == {"command": "echo edited"} and decided["arguments"] == {"command": "echo hi"}
    assert result.approvals[0].edited_arguments == {"command": "echo edited"}


async def test_an_edited_approval_answers_with_what_will_run(
    client: Client, task_queue: str, tmp_path: Path, cli: Cli
) -> None:
    async with served(client, task_queue, tmp_path):
        handle = await start_run(client, task_queue)
        await wait_pending(handle)
        done = await cli("approve", handle.id, "call_1", "--edit", '{"command": "echo edited"}')
        await handle.result()
    assert done.code == 0, done.err
    assert 'approved call_1: run_command {"command": "echo edited"}' in done.out
    assert '(edited; the model asked {"command": "echo hi"})' in done.out


async def test_deny_and_extend_answer_json(client: Client, task_queue: str, tmp_path: Path, cli: Cli) -> None:
    async with served(client, task_queue, tmp_path):
        handle = await start_run(client, task_queue, options=RunOptions(approval_timeout_seconds=600))
        await wait_pending(handle)
        assert (await cli("pending", handle.id)).code == 0
        extended = await cli("extend", handle.id, "call_1", "--seconds", "60", "--json")
        denied = await cli("deny", handle.id, "call_1", "--reason", "no", "--json")
        await handle.result()
    assert extended.code == 0 and json.loads(extended.out)["call_id"] == "call_1"
    assert denied.code == 0 and json.loads(denied.out)["decided"][0]["outcome"] == "denied"


async def test_watch_and_result_of_a_mistyped_id_say_there_is_no_such_run(cli: Cli) -> None:
    for command in ("watch", "result"):
        done = await cli(command, "no-such-run-1234")
        assert done.code == 1 and "no run with id 'no-such-run-1234'" in done.err, (command, done)
        assert "still waiting" not in done.out + done.err


async def test_result_of_a_waiting_run_says_what_it_waits_for(
    client: Client, task_queue: str, tmp_path: Path, cli: Cli, cli_environ: dict[str, str]
) -> None:
    async with served(client, task_queue, tmp_path):
        handle = await start_run(client, task_queue)
        await wait_pending(handle)
        at_once = await cli("result", handle.id, "--no-wait")
        waiting = await spawn(cli_environ, "result", handle.id)
        assert waiting.stderr is not None
        said = (await asyncio.wait_for(waiting.stderr.readline(), 30)).decode()
        await handle.execute_update("submit_tool_approval", {"call_id": "call_1", "approved": True})
        out, _ = await asyncio.wait_for(waiting.communicate(), 60)
    assert at_once.code == 1 and "has not finished: it waits for a decision on call_1 (run_command)" in at_once.err
    assert "it waits for a decision on call_1 (run_command)" in said and "Waiting for its result" in said
    assert waiting.returncode == 0 and "saw: exit code: 0" in out.decode()


async def test_run_wait_with_no_worker_says_no_worker_polls_the_task_queue(
    task_queue: str, cli_environ: dict[str, str]
) -> None:
    run = await spawn(cli_environ, "run", "hello", "--wait")
    seen = await read_until(run, "still waiting", timeout=60)
    run.terminate()
    await run.wait()
    assert f"no worker polls task queue {task_queue!r}" in seen
    assert "Timeout expired" not in seen


async def test_a_task_queue_is_unserved_until_a_worker_polls_it(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    assert await no_worker(client, task_queue) == (
        f"no worker polls task queue {task_queue!r}: start one (python worker.py, or signoff-worker, "
        f"with SIGNOFF_TASK_QUEUE={task_queue})"
    )
    async with served(client, task_queue, tmp_path):
        handle = await start_run(client, task_queue)
        await wait_pending(handle)
        assert await no_worker(client, task_queue) is None
        await handle.terminate()
