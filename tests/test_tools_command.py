"""run_command: real /bin/sh subprocesses in a real workspace."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from signoff.tools import RunCommand, WorkspaceScope
from tests.waiting import wait_until

# Starts a background child, records its pid, and waits for it.
SPAWN_CHILD = "sleep 30 & echo $! > child.pid; wait"


@pytest.fixture
def run(tmp_path: Path) -> RunCommand:
    return RunCommand(WorkspaceScope(tmp_path))


def is_alive(pid: int) -> bool:
    """Whether `pid` runs; a zombie (killed, not yet reaped) counts as dead."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def read_pid(path: Path) -> int:
    return int(path.read_text().strip())


async def test_successful_command_reports_exit_code_zero_and_output(run: RunCommand) -> None:
    result = await run.execute({"command": "echo hello"})
    assert (result.is_error, result.content) == (False, "exit code: 0\nhello\n")


async def test_failing_command_reports_its_exit_code_as_a_normal_result(run: RunCommand) -> None:
    result = await run.execute({"command": "echo oops; exit 3"})
    assert (result.is_error, result.content) == (False, "exit code: 3\noops\n")


async def test_stderr_is_captured_with_stdout(run: RunCommand) -> None:
    result = await run.execute({"command": "echo out; echo err >&2"})
    assert result.content == "exit code: 0\nout\nerr\n"


async def test_command_runs_in_the_workspace(run: RunCommand, tmp_path: Path) -> None:
    result = await run.execute({"command": "pwd -P"})
    assert result.content == f"exit code: 0\n{os.path.realpath(tmp_path)}\n"


async def test_long_output_keeps_start_and_end_with_a_note(tmp_path: Path) -> None:
    run = RunCommand(WorkspaceScope(tmp_path), max_output_bytes=100)
    result = await run.execute({"command": "printf START; yes x | head -c 1000; printf END"})
    assert result.content.startswith("exit code: 0\nSTART")
    assert result.content.endswith("END")
    assert "[output truncated: 908 bytes omitted]" in result.content


async def test_timeout_is_an_error_with_the_output_so_far(run: RunCommand) -> None:
    result = await run.execute({"command": "echo started; sleep 30", "timeout_secs": 1})
    assert result.is_error
    assert "timed out after 1s" in result.content and "started" in result.content


async def test_timeout_kills_the_commands_children(run: RunCommand, tmp_path: Path) -> None:
    await run.execute({"command": SPAWN_CHILD, "timeout_secs": 1})
    child = read_pid(tmp_path / "child.pid")
    await wait_until(lambda: not is_alive(child), 5.0, f"child {child} still alive")


async def test_cancellation_kills_the_command_and_its_children(run: RunCommand, tmp_path: Path) -> None:
    task = asyncio.create_task(run.execute({"command": SPAWN_CHILD}))
    pid_file = tmp_path / "child.pid"
    await wait_until(lambda: pid_file.exists() and pid_file.read_text().strip() != "", 5.0, "no child pid written")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    child = read_pid(pid_file)
    await wait_until(lambda: not is_alive(child), 5.0, f"child {child} still alive")


async def test_signoff_api_key_is_hidden_from_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIGNOFF_LLM_API_KEY", "sk-secret")
    run = RunCommand(WorkspaceScope(tmp_path))
    result = await run.execute({"command": 'echo "key=${SIGNOFF_LLM_API_KEY:-unset}"'})
    assert result.content == "exit code: 0\nkey=unset\n"


async def test_missing_command_argument_is_an_error_result(run: RunCommand) -> None:
    result = await run.execute({"timeout_secs": 5})
    assert result.is_error and "command: Field required" in result.content


async def test_non_positive_timeout_is_an_error_result(run: RunCommand) -> None:
    result = await run.execute({"command": "true", "timeout_secs": 0})
    assert result.is_error and "timeout_secs" in result.content


def test_run_command_does_not_ask_by_itself_and_is_not_idempotent(run: RunCommand) -> None:
    assert (run.requires_approval({"command": "ls"}), run.idempotent, run.kind) == (
        False,
        False,
        "command",
    )
