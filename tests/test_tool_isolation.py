"""What an approved `run_command` can see, with the real `python worker.py` on the dev server.

The worker's environment holds what an attacker's command would want (a provider key,
cloud credentials, Temporal settings). The model asks for one command; the test
approves it through the update, as an operator would, and reads what the tool reported.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.client import Client

from signoff.approval.requests import ToolApprovalResponse
from signoff.tools.process import ALLOWED_ENV
from tests.helpers import (
    Reply,
    ScriptedModelServer,
    ScriptedRequest,
    call,
    start_run,
    wait_pending,
)
from tests.processes import READY, REPO, Processes, clean_env

KEY = "sk-worker-key-8c2e5a1f9d"
WORKER_SECRETS = {"SIGNOFF_LLM_API_KEY": KEY, "AWS_SECRET_ACCESS_KEY": "aws-secret-4d7b0c2e9a"}
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="switching to another user needs root")


@pytest.fixture
def model() -> Iterator[ScriptedModelServer]:
    def run_then_report(request: ScriptedRequest) -> Reply:
        if request.round == 1:
            return Reply.tool_calls([call("run_command", "call_1", command=request.last.content)])
        return Reply.text("done")

    with ScriptedModelServer(run_then_report) as server:
        yield server


@pytest.fixture
def shared_workspace() -> Iterator[Path]:
    """A workspace `nobody` owns, where every user can reach it (pytest's tmp is root-only)."""
    try:
        user = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("this machine has no user 'nobody'")
    path = Path(tempfile.mkdtemp(prefix="signoff-tool-user-", dir="/tmp"))
    os.chown(path, user.pw_uid, user.pw_gid)
    yield path
    shutil.rmtree(path)


def worker_env(
    client: Client, task_queue: str, model: ScriptedModelServer, workspace: Path, **extra: str
) -> dict[str, str]:
    return clean_env(
        TEMPORAL_ADDRESS=client.service_client.config.target_host,
        SIGNOFF_TASK_QUEUE=task_queue,
        SIGNOFF_LLM_BASE_URL=model.base_url,
        SIGNOFF_LLM_MODEL="scripted",
        SIGNOFF_WORKSPACE=workspace,
        **extra,
    )


async def approved_command_output(client: Client, task_queue: str, command: str) -> str:
    """Start a run whose model asks for `command`, approve it, and return the tool's message."""
    handle = await start_run(client, task_queue, command)
    await wait_pending(handle, timeout=15)
    await handle.execute_update("submit_tool_approval", ToolApprovalResponse.approve("call_1"))
    result = await asyncio.wait_for(handle.result(), 30)
    return result.messages[2].content or ""


def env_names(listing: str) -> set[str]:
    return {line.split("=", 1)[0] for line in listing.splitlines() if "=" in line and not line.startswith("exit code")}


async def test_an_approved_command_sees_no_secret_or_temporal_setting_of_the_worker(
    client: Client, task_queue: str, model: ScriptedModelServer, procs: Processes, tmp_path: Path
) -> None:
    extra = {**WORKER_SECRETS, "SIGNOFF_TOOL_ENV": "EXTRA_FOR_TOOLS", "EXTRA_FOR_TOOLS": "visible"}
    worker = procs.worker("worker", worker_env(client, task_queue, model, tmp_path, **extra))
    await worker.wait_for_output(READY)

    listing = await approved_command_output(client, task_queue, "env")

    names = env_names(listing)
    assert "EXTRA_FOR_TOOLS=visible" in listing.splitlines()
    assert {n for n in names if not n.startswith("LC_")} - {"PWD", "EXTRA_FOR_TOOLS"} <= set(ALLOWED_ENV), names
    assert not any(n.startswith(("TEMPORAL_", "SIGNOFF_", "AWS_")) for n in names), names
    assert not [value for value in WORKER_SECRETS.values() if value in listing]


@needs_root
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv (util-linux)")
async def test_the_worker_process_is_not_dumpable(
    client: Client, task_queue: str, model: ScriptedModelServer, procs: Processes, tmp_path: Path
) -> None:
    # The kernel shows a dumpable process's /proc files as owned by its own uid and gid,
    # a non-dumpable one's as root's. Run as root with group nogroup, the two differ.
    as_nogroup = ["setpriv", "--regid=65534", "--clear-groups"]
    env = worker_env(client, task_queue, model, tmp_path, **WORKER_SECRETS)
    control = procs.start("control", [*as_nogroup, "sleep", "60"], env)
    worker = procs.start("worker", [*as_nogroup, sys.executable, str(REPO / "worker.py")], env)
    await worker.wait_for_output(READY)

    def owner(pid: int) -> tuple[int, int]:
        info = os.stat(f"/proc/{pid}/environ")
        return info.st_uid, info.st_gid

    assert (owner(control.pid), owner(worker.pid)) == ((0, 65534), (0, 0))


@needs_root
async def test_a_command_run_as_the_tool_user_cannot_read_the_workers_environment_or_key_file(
    client: Client, task_queue: str, model: ScriptedModelServer, procs: Processes, shared_workspace: Path
) -> None:
    key_file = shared_workspace / "llm_key"
    key_file.write_text(f"{KEY}\n")
    key_file.chmod(0o600)  # the worker's (root's) alone, though it lies in the workspace
    env = worker_env(
        client,
        task_queue,
        model,
        shared_workspace,
        SIGNOFF_TOOL_USER="nobody",
        SIGNOFF_LLM_API_KEY_FILE=str(key_file),
        AWS_SECRET_ACCESS_KEY=WORKER_SECRETS["AWS_SECRET_ACCESS_KEY"],
    )
    worker = procs.worker("worker", env)
    await worker.wait_for_output(READY)

    output = await approved_command_output(
        client, task_queue, f"id -u; cat /proc/{worker.pid}/environ; cat llm_key; echo HOME=$HOME"
    )  # the worker is the command's grandparent: its parent is the supervisor (signoff.tools.supervise)

    assert output.splitlines() == [
        "exit code: 0",
        str(pwd.getpwnam("nobody").pw_uid),
        f"cat: /proc/{worker.pid}/environ: Permission denied",
        "cat: llm_key: Permission denied",
        f"HOME={pwd.getpwnam('nobody').pw_dir}",
    ]
    assert model.requests[0].headers["authorization"] == f"Bearer {KEY}"  # the worker read the file


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("SIGNOFF_TOOL_USER", "no-such-user-4e2d", "SIGNOFF_TOOL_USER: there is no user with name 'no-such-user-4e2d'"),
        ("SIGNOFF_TOOL_ENV", "GOPATH=/go", "SIGNOFF_TOOL_ENV has entry 1 that is not a variable name"),
    ],
)
async def test_a_bad_tool_setting_stops_the_worker_at_start_with_what_to_do(
    name: str,
    value: str,
    message: str,
    client: Client,
    task_queue: str,
    model: ScriptedModelServer,
    procs: Processes,
    tmp_path: Path,
) -> None:
    worker = procs.worker("worker", worker_env(client, task_queue, model, tmp_path, **{name: value}))
    assert await worker.wait_exit(30) != 0
    assert message in worker.stderr().strip().splitlines()[-1]
    assert READY not in worker.stdout()
