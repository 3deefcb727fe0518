"""An approved command's processes end with it (issue 27, weak points): real /bin/sh, real
processes, checked in /proc the moment the call returns.

A background job, a `setsid` daemon and a double-forked one each outlived the call before;
now the command's supervisor (`signoff.tools.supervise`) is their subreaper and ends them all
when the shell exits, times out or is cancelled. One test runs it through a real worker and
dev server: the run's answer comes, and the daemon its approved command started is gone.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.client import Client

from signoff.approval.requests import ToolApprovalResponse
from signoff.tools import RunCommand, WorkspaceScope
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
from tests.waiting import wait_until

# Each leaves a `sleep 300` behind that writes its pid to the file named, then returns at once.
LEFT_BEHIND = {
    "background job": "sh -c 'echo $$ > {pid}; exec sleep 300' > /dev/null 2>&1 &",
    "background job holding the output": "sh -c 'echo $$ > {pid}; exec sleep 300' &",
    "setsid": "setsid sh -c 'echo $$ > {pid}; exec sleep 300' > /dev/null 2>&1 &",
    "setsid --fork": "setsid -f sh -c 'echo $$ > {pid}; exec sleep 300' > /dev/null 2>&1",
    "double fork": "( setsid sh -c 'echo $$ > {pid}; exec sleep 300' & ) > /dev/null 2>&1",
    "ignores every signal it can": (
        "setsid sh -c 'trap \"\" TERM HUP INT QUIT; echo $$ > {pid}; exec sleep 300' > /dev/null 2>&1 &"
    ),
}


def is_alive(pid: int) -> bool:
    """Whether `pid` runs; a zombie (killed, not yet reaped) counts as dead."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


async def pid_in(path: Path) -> int:
    await wait_until(lambda: path.exists() and path.read_text().strip() != "", 10.0, f"{path} was never written")
    return int(path.read_text())


@pytest.fixture
def run(tmp_path: Path) -> RunCommand:
    return RunCommand(WorkspaceScope(tmp_path))


@pytest.mark.parametrize("how", list(LEFT_BEHIND))
async def test_what_a_command_leaves_running_is_gone_when_the_call_returns(
    run: RunCommand, tmp_path: Path, how: str
) -> None:
    pid_file = tmp_path / "left.pid"
    command = f"{LEFT_BEHIND[how].format(pid=pid_file)}\nwhile [ ! -s {pid_file} ]; do sleep 0.01; done; echo done"
    started = time.monotonic()
    result = await run.execute({"command": command, "timeout_secs": 60})
    took = time.monotonic() - started
    pid = int(pid_file.read_text())
    assert result.content == "exit code: 0\ndone\n", result.content
    assert not is_alive(pid), f"{how}: {pid} outlived the call"
    assert took < 10, f"{how}: the call took {took:.1f}s (it ends when the shell exits)"


async def test_a_setsid_daemon_is_gone_when_its_command_times_out(run: RunCommand, tmp_path: Path) -> None:
    pid_file = tmp_path / "left.pid"
    command = f"{LEFT_BEHIND['setsid'].format(pid=pid_file)} echo started; sleep 30"
    result = await run.execute({"command": command, "timeout_secs": 1})
    assert result.is_error and "timed out after 1s" in result.content and "started" in result.content
    assert not is_alive(int(pid_file.read_text()))


async def test_a_setsid_daemon_is_gone_when_its_call_is_cancelled(run: RunCommand, tmp_path: Path) -> None:
    pid_file, shell_file = tmp_path / "left.pid", tmp_path / "shell.pid"
    command = f"echo $$ > {shell_file}; {LEFT_BEHIND['double fork'].format(pid=pid_file)}\nsleep 30"
    task = asyncio.create_task(run.execute({"command": command}))
    daemon, shell = await pid_in(pid_file), await pid_in(shell_file)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not is_alive(daemon) and not is_alive(shell)


async def test_a_shell_killed_by_a_signal_is_reported_as_before(run: RunCommand) -> None:
    result = await run.execute({"command": "echo going; kill -9 $$"})
    assert (result.is_error, result.content) == (False, "exit code: -9\ngoing\n")


async def test_a_command_that_kills_its_supervisor_still_loses_its_background_jobs(
    run: RunCommand, tmp_path: Path
) -> None:
    """Without a tool user the command may signal its supervisor (the same user): then the
    worker itself ends what is left of the command's session (a `setsid` one escapes that:
    README, threat model)."""
    pid_file = tmp_path / "left.pid"
    command = f"{LEFT_BEHIND['background job'].format(pid=pid_file)} sleep 0.2; kill -9 $PPID; echo after"
    result = await run.execute({"command": command, "timeout_secs": 30})
    assert not is_alive(int(pid_file.read_text())), result.content


# --- as another user, who cannot signal the supervisor ---------------------------------------


@pytest.fixture
def shared_workspace() -> Iterator[Path]:
    """A workspace `nobody` owns, where every user can reach it (pytest's tmp is root-only)."""
    if os.geteuid() != 0:
        pytest.skip("switching to another user needs root")
    try:
        user = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("this machine has no user 'nobody'")
    path = Path(tempfile.mkdtemp(prefix="signoff-tool-user-", dir="/tmp"))
    os.chown(path, user.pw_uid, user.pw_gid)
    yield path
    shutil.rmtree(path)


async def test_a_tool_users_command_cannot_kill_its_supervisor_and_its_daemon_is_gone(shared_workspace: Path) -> None:
    run = RunCommand(WorkspaceScope(shared_workspace), user="nobody")
    pid_file = shared_workspace / "left.pid"
    command = f"{LEFT_BEHIND['setsid'].format(pid=pid_file)} sleep 0.2; kill -9 $PPID || echo refused"
    result = await run.execute({"command": command, "timeout_secs": 30})
    assert result.content.startswith("exit code: 0\n") and "refused" in result.content, result.content
    assert not is_alive(int(pid_file.read_text()))


# --- through a real worker and dev server ------------------------------------------------------


async def test_the_daemon_an_approved_command_starts_is_gone_when_the_run_has_its_result(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    pid_file = tmp_path / "daemon.pid"
    command = f"{LEFT_BEHIND['double fork'].format(pid=pid_file)}\nwhile [ ! -s {pid_file} ]; do sleep 0.01; done"

    def script(request: ScriptedRequest) -> Reply:
        if request.round == 1:
            return Reply.tool_calls([call("run_command", "call_1", command=command)])
        return Reply.text(request.messages[-1].content or "")

    with ScriptedModelServer(script) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_run(client, task_queue)
            await wait_pending(handle)
            await handle.execute_update("submit_tool_approval", ToolApprovalResponse.approve("call_1"))
            result = await asyncio.wait_for(handle.result(), 30)
            daemon_alive = is_alive(int(pid_file.read_text()))
    assert result.text is not None and result.text.startswith("exit code: 0"), result.text
    assert not daemon_alive
