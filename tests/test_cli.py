"""The `signoff` CLI as a real subprocess against the session's dev server (`tests/cli_harness.py`)."""
# ruff: noqa: F811 - the harness's fixtures are imported by name and taken as parameters

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from temporalio.client import Client

from signoff.approval.digest import arguments_digest
from signoff.contract import AgentRunResult
from tests.cli_harness import (  # noqa: F401
    Cli,
    cli,
    cli_env,
    cli_environ,
    finish,
    read_until,
    served,
    spawn,
)
from tests.helpers import (
    Reply,
    ScriptedRequest,
    assert_eventually,
    call,
    start_run,
    wait_pending,
)


def two_calls_then_report(request: ScriptedRequest) -> Reply:
    if request.round == 1:
        return Reply.tool_calls(
            [call("run_command", "call_a", command="echo a"), call("run_command", "call_b", command="echo b")]
        )
    return Reply.text("done")


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
    block = out[out.index(handle.id) :].split("\n\n")[0].splitlines()
    assert block[0].split()[:4] == [handle.id, "call_1", "run_command", "waiting"]
    assert block[1:5] == [
        "    about      Run a shell command",
        '    arguments  {"command": "echo hi"}',
        f"    digest     {arguments_digest({'command': 'echo hi'})}",
        "    policy     anyone may decide",
    ]
    assert block[5] == "    deadline   none (waits until decided)"


async def test_approve_decides_the_only_pending_call(client: Client, task_queue: str, tmp_path: Path, cli: Cli) -> None:
    async with served(client, task_queue, tmp_path):
        handle = await start_run(client, task_queue, "say hi")
        await wait_pending(handle)
        shown = await cli("pending", handle.id)
        done = await cli("approve", handle.id, "--approver", "alice")
        result: AgentRunResult = await handle.result()
    assert shown.code == 0, shown.err
    assert (done.code, done.err) == (0, "")
    assert done.out.splitlines() == ['approved call_1: run_command {"command": "echo hi"}', "nothing else pending"]
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
    assert done.code == 0, done.err
    assert done.out.splitlines()[-2:] == ['denied call_1: run_command {"command": "echo hi"}', "nothing else pending"]
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
    assert result.text == (
        "saw: exit code: 0\nedited\n\n[signoff: tester edited this call's arguments before it ran; "
        'it ran with {"command": "echo edited"}]'
    )
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
        unseen = await cli("approve", handle.id, "--all")  # the refusal went to a script, not a person
        await cli("pending", handle.id)
        everything = await cli("approve", handle.id, "--all")
        result: AgentRunResult = await handle.result()
    assert ambiguous.code == 2
    assert "call_a" in ambiguous.err and "call_b" in ambiguous.err and "--all" in ambiguous.err
    assert '"command": "echo a"' in ambiguous.out and '"command": "echo b"' in ambiguous.out  # shown whole
    assert unseen.code == 2 and "not decided (not shown to you before): call_a, call_b" in unseen.out
    assert everything.code == 0, everything.err
    assert everything.out.splitlines() == [
        'approved call_a: run_command {"command": "echo a"}',
        'approved call_b: run_command {"command": "echo b"}',
        "nothing else pending",
    ]
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
        'arguments  {"command": "echo hi"}',
        f"approve    signoff approve {handle.id} call_1",
        "call_1 approved by bob",
        "run_command (call_1)\n    exit code: 0",
        "assistant: saw: exit code: 0",  # the model's text as it came (the stream)
        "finished: stop",
        "answer:",
    ]
    positions = [done.out.find(text) for text in expected]
    assert -1 not in positions, done.out
    assert positions == sorted(positions), done.out


async def test_watch_shows_the_models_text_as_it_comes_once(
    client: Client, task_queue: str, tmp_path: Path, cli_environ: dict[str, str]
) -> None:
    text = "streamed " + " ".join(f"piece{i}" for i in range(30))

    def slow(request: ScriptedRequest) -> Reply:
        return Reply(content=text, chunks=30, pause=0.03)

    async with served(client, task_queue, tmp_path, slow):
        handle = await start_run(client, task_queue)
        watcher = await spawn(cli_environ, "watch", handle.id)
        seen = await read_until(watcher, "assistant: streamed")
        done = await finish(watcher)
        done.out = seen + done.out
    assert done.code == 0, done.err
    assert f"assistant: {text}\n" in done.out, done.out  # as it came, whole, once
    assert done.out.count("piece29") == 2, done.out  # and in the result's answer


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
    for text in (
        "Approval needed",
        "run_command",
        '{"command": "ls -la"}',
        "signoff approve signoff-demo-",
        "http://localhost:8233/namespaces/default/workflows/signoff-demo-",
        "approved by tester",
        "finished: stop",
        "The command ran.",
        "README.txt",
    ):
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
        ["approve", "some-run", "--query", "WorkflowId='x'"],
        ["deny", "--tool", "run_command", "some-run"],
        ["approve", "some-run", "--all", "--digest", "0123456789abcdef"],
        ["approve", "some-run", "call_1", "--digest", "0123"],  # too short to bind
        ["approve", "some-run", "call_1", "--digest", "0123abcd"],  # 32 bits: a model could search for a match
        ["approve", "some-run", "call_1", "--grant-uses", "2"],
        ["extend", "some-run", "call_1", "--seconds", "-5"],
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
