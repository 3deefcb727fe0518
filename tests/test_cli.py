"""The `signoff` CLI as a real subprocess against the session's dev server.

Runs are served by an in-process worker on the test's task queue, so the
subprocess is started with asyncio (the worker keeps working while it runs).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from signoff.contract import AgentRunResult
from tests.helpers import (
    Reply,
    ScriptedModelServer,
    ScriptedRequest,
    agents_for,
    assert_eventually,
    call,
    running_worker,
    start_run,
    wait_pending,
)

ROOT = Path(__file__).resolve().parent.parent
CLIENT = ROOT / "client.py"


@dataclass
class Done:
    code: int
    out: str
    err: str


Cli = Callable[..., Awaitable[Done]]


def cli_env(address: str, task_queue: str) -> dict[str, str]:
    """The caller's environment minus any signoff/Temporal config, pointed at the test server."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SIGNOFF_", "TEMPORAL_"))}
    env.update(TEMPORAL_ADDRESS=address, SIGNOFF_TASK_QUEUE=task_queue, USER="tester", NO_COLOR="1")
    return env


async def spawn(env: dict[str, str], *args: str, cwd: Path = ROOT) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, str(CLIENT), *args, cwd=cwd, env=env,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip


async def finish(proc: asyncio.subprocess.Process, stdin: str = "", timeout: float = 60) -> Done:
    out, err = await asyncio.wait_for(proc.communicate(stdin.encode()), timeout)
    assert proc.returncode is not None
    return Done(proc.returncode, out.decode(), err.decode())


async def read_until(proc: asyncio.subprocess.Process, text: str, timeout: float = 30) -> str:
    """The process's output up to and including the first line containing `text`."""
    assert proc.stdout is not None
    seen = ""
    while text not in seen:
        line = await asyncio.wait_for(proc.stdout.readline(), timeout)
        assert line, f"output ended before {text!r}:\n{seen}"
        seen += line.decode()
    return seen


@pytest.fixture
def cli_environ(env: WorkflowEnvironment, task_queue: str) -> dict[str, str]:
    return cli_env(env.client.service_client.config.target_host, task_queue)


@pytest.fixture
def cli(cli_environ: dict[str, str]) -> Cli:
    async def run(*args: str, stdin: str = "", cwd: Path = ROOT) -> Done:
        return await finish(await spawn(cli_environ, *args, cwd=cwd), stdin)

    return run


def echo_then_report(request: ScriptedRequest) -> Reply:
    if request.round == 1:
        return Reply.tool_calls([call("run_command", "call_1", command="echo hi")])
    return Reply.text(f"saw: {request.last.content}")


def two_calls_then_report(request: ScriptedRequest) -> Reply:
    if request.round == 1:
        return Reply.tool_calls([call("run_command", "call_a", command="echo a"),
                                 call("run_command", "call_b", command="echo b")])
    return Reply.text("done")


@asynccontextmanager
async def served(
    client: Client, task_queue: str, workspace: Path, script: Callable[[ScriptedRequest], Reply] = echo_then_report
) -> AsyncIterator[None]:
    with ScriptedModelServer(script) as model:
        async with running_worker(client, task_queue, model, agents_for(workspace)):
            yield


async def test_run_prints_workflow_id_and_ui_link(client: Client, task_queue: str, tmp_path: Path, cli: Cli) -> None:
    workflow_id = f"cli-{uuid.uuid4()}"
    async with served(client, task_queue, tmp_path):
        done = await cli("run", "say hi", "--id", workflow_id)
        handle = client.get_workflow_handle(workflow_id)
        await wait_pending(handle)
        await handle.signal("tool_approval", {"call_id": "*", "approved": False})
        await handle.result()
    assert done.code == 0, done.err
    assert f"started run {workflow_id}" in done.out
    assert f"http://localhost:8233/namespaces/default/workflows/{workflow_id}" in done.out


async def test_pending_lists_the_waiting_call(client: Client, task_queue: str, tmp_path: Path, cli: Cli) -> None:
    async with served(client, task_queue, tmp_path):
        handle = await start_run(client, task_queue)
        await wait_pending(handle)

        async def listed() -> str:
            done = await cli("pending")
            assert done.code == 0, done.err
            assert handle.id in done.out
            return done.out

        out = await assert_eventually(listed, timeout=30)  # visibility is eventually consistent
        await handle.signal("tool_approval", {"call_id": "*", "approved": False})
        await handle.result()
    (row,) = [line for line in out.splitlines() if handle.id in line]
    assert row.split()[1:3] == ["call_1", "run_command"]
    assert row.endswith('{"command": "echo hi"}')


async def test_approve_decides_the_only_pending_call(client: Client, task_queue: str, tmp_path: Path, cli: Cli) -> None:
    async with served(client, task_queue, tmp_path):
        handle = await start_run(client, task_queue, "say hi")
        await wait_pending(handle)
        done = await cli("approve", handle.id, "--approver", "alice")
        result: AgentRunResult = await handle.result()
    assert (done.code, done.out.strip()) == (0, "approved call_1; nothing else pending")
    assert [(a.call_id, a.approved, a.approver) for a in result.approvals] == [("call_1", True, "alice")]
    assert result.text == "saw: exit code: 0\nhi\n"


async def test_deny_with_reason_reaches_model_as_rejection(
    client: Client, task_queue: str, tmp_path: Path, cli: Cli
) -> None:
    async with served(client, task_queue, tmp_path):
        handle = await start_run(client, task_queue)
        await wait_pending(handle)
        done = await cli("deny", handle.id, "call_1", "--reason", "Back up first")
        result: AgentRunResult = await handle.result()
    assert (done.code, done.out.strip()) == (0, "denied call_1; nothing else pending")
    assert result.text == "saw: Rejected: Back up first"
    assert result.approvals[0].approver == "tester"  # $USER


async def test_approve_with_edited_arguments_runs_them(
    client: Client, task_queue: str, tmp_path: Path, cli: Cli
) -> None:
    async with served(client, task_queue, tmp_path):
        handle = await start_run(client, task_queue)
        await wait_pending(handle)
        done = await cli("approve", handle.id, "call_1", "--edit", '{"command": "echo edited"}')
        result: AgentRunResult = await handle.result()
    assert done.code == 0, done.err
    assert result.text == "saw: exit code: 0\nedited\n"
    assert result.approvals[0].edited_arguments == {"command": "echo edited"}


async def test_approve_unknown_call_fails_naming_pending_ids(
    client: Client, task_queue: str, tmp_path: Path, cli: Cli
) -> None:
    async with served(client, task_queue, tmp_path):
        handle = await start_run(client, task_queue)
        await wait_pending(handle)
        done = await cli("approve", handle.id, "nope")
        await handle.signal("tool_approval", {"call_id": "*", "approved": False})
        await handle.result()
    assert done.code == 1
    assert "'nope'" in done.err and "pending call ids: call_1" in done.err


async def test_several_pending_calls_need_a_call_id_or_all(
    client: Client, task_queue: str, tmp_path: Path, cli: Cli
) -> None:
    async with served(client, task_queue, tmp_path, two_calls_then_report):
        handle = await start_run(client, task_queue)
        await wait_pending(handle, count=2)
        ambiguous = await cli("approve", handle.id)
        everything = await cli("approve", handle.id, "--all")
        result: AgentRunResult = await handle.result()
    assert ambiguous.code == 2
    assert "call_a" in ambiguous.err and "call_b" in ambiguous.err and "--all" in ambiguous.err
    assert (everything.code, everything.out.strip()) == (0, "approved call_a, call_b; nothing else pending")
    assert [a.approved for a in result.approvals] == [True, True]


async def test_result_json_prints_the_raw_result(client: Client, task_queue: str, tmp_path: Path, cli: Cli) -> None:
    async with served(client, task_queue, tmp_path):
        handle = await start_run(client, task_queue)
        await wait_pending(handle)
        await handle.signal("tool_approval", {"call_id": "call_1", "approved": True})
        done = await cli("result", handle.id, "--json")
        readable = await cli("result", handle.id)
    assert done.code == 0, done.err
    raw = json.loads(done.out)
    assert AgentRunResult.model_validate(raw) == await handle.result()
    assert (raw["finish_reason"], raw["rounds"]) == ("stop", 2)
    assert "finished: stop after 2 round(s)" in readable.out and "saw: exit code: 0" in readable.out


async def test_result_of_a_failed_run_exits_1(client: Client, task_queue: str, tmp_path: Path, cli: Cli) -> None:
    async with served(client, task_queue, tmp_path):
        handle = await start_run(client, task_queue, agent="nope")
        done = await cli("result", handle.id)
    assert done.code == 1
    assert "the run failed: unknown agent 'nope'" in done.err


async def test_watch_shows_events_until_the_run_finishes(
    client: Client, task_queue: str, tmp_path: Path, cli_environ: dict[str, str]
) -> None:
    async with served(client, task_queue, tmp_path):
        handle = await start_run(client, task_queue)
        watcher = await spawn(cli_environ, "watch", handle.id)
        seen = await read_until(watcher, "approve    signoff approve")  # shown while still pending
        await handle.execute_update("submit_tool_approval", {"call_id": "call_1", "approved": True, "approver": "bob"})
        done = await finish(watcher)
        done.out = seen + done.out
    assert done.code == 0, done.err
    expected = [
        "Approval needed",
        "arguments  {\"command\": \"echo hi\"}",
        f"approve    signoff approve {handle.id} call_1",
        "call_1 approved by bob",
        "run_command (call_1)\n    exit code: 0",
        "finished: stop",
        "answer:",
        "saw: exit code: 0",
    ]
    positions = [done.out.find(text) for text in expected]
    assert -1 not in positions, done.out
    assert positions == sorted(positions), done.out


async def test_run_wait_reads_the_decision_from_stdin(
    client: Client, task_queue: str, tmp_path: Path, cli: Cli
) -> None:
    async with served(client, task_queue, tmp_path):
        done = await cli("run", "say hi", "--wait", stdin="n\n")
    assert done.code == 0, done.err
    assert 'Approve run_command {"command": "echo hi"}? [y/n/reason] n\n' in done.out
    assert "call_1 denied by tester" in done.out
    assert done.out.rstrip().endswith("saw: Rejected: User denied")


async def test_run_wait_with_a_reason_denies_with_it(client: Client, task_queue: str, tmp_path: Path, cli: Cli) -> None:
    async with served(client, task_queue, tmp_path):
        done = await cli("run", "say hi", "--wait", stdin="\nnot on a Friday\n")  # blank: asked again
    assert done.code == 0, done.err
    assert done.out.count("[y/n/reason]") == 2
    assert done.out.rstrip().endswith("saw: Rejected: not on a Friday")


async def test_run_wait_without_input_waits_for_a_decision_elsewhere(
    client: Client, task_queue: str, tmp_path: Path, cli_environ: dict[str, str]
) -> None:
    workflow_id = f"cli-{uuid.uuid4()}"
    async with served(client, task_queue, tmp_path):
        runner = await spawn(cli_environ, "run", "say hi", "--wait", "--id", workflow_id)
        runner.stdin.close()  # type: ignore[union-attr]
        seen = await read_until(runner, "waiting for a decision made elsewhere")
        await client.get_workflow_handle(workflow_id).signal("tool_approval", {"call_id": "call_1", "approved": True})
        done = await finish(runner)
    assert done.code == 0, done.err
    assert "[y/n/reason] \n(no more input" in seen
    assert "saw: exit code: 0" in done.out


async def test_demo_yes_runs_end_to_end(cli: Cli, tmp_path: Path) -> None:
    done = await cli("demo", "--yes", cwd=tmp_path)
    assert done.code == 0, done.err
    out = done.out
    assert "built-in scripted model (no LLM configured" in out
    assert "(already running)" in out  # it used the session's server, as TEMPORAL_ADDRESS says
    for text in ("Approval needed", "run_command", '{"command": "ls -la"}', "signoff approve signoff-demo-",
                 "http://localhost:8233/namespaces/default/workflows/signoff-demo-", "approved by tester",
                 "finished: stop", "The command ran.", "README.txt"):
        assert text in out, (text, out)
    (workspace,) = (tmp_path / ".signoff" / "demo-workspace").iterdir()
    assert (workspace / "README.txt").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["approve"],  # no run
        ["approve", "some-run", "call_1", "--all"],
        ["approve", "some-run", "--edit", "[1]"],
        ["approve", "some-run", "--edit", "{not json"],
        ["run", "hi", "--max-rounds", "0"],
    ],
)
async def test_usage_errors_exit_2_before_connecting(args: list[str]) -> None:
    done = await finish(await spawn(cli_env("localhost:1", "unused"), *args))
    assert done.code == 2, done
    assert done.err


async def test_unknown_run_exits_1(cli: Cli) -> None:
    done = await cli("approve", f"no-such-run-{uuid.uuid4()}")
    assert done.code == 1
    assert "no run with id" in done.err
