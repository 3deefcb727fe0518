"""Running the `signoff` CLI as a real subprocess against the session's dev server.

Runs are served by an in-process worker on the test's task queue, so the subprocess is
started with asyncio (the worker keeps working while it runs). Each test has its own
`XDG_STATE_HOME`, so what one test's operator was shown is not another's.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from signoff.agent.builder import ChatClientAgent
from tests.helpers import (
    Reply,
    ScriptedModelServer,
    ScriptedRequest,
    agents_for,
    call,
    running_worker,
)

ROOT = Path(__file__).resolve().parent.parent
CLIENT = ROOT / "client.py"


@dataclass
class Done:
    code: int
    out: str
    err: str


Cli = Callable[..., Awaitable[Done]]


def cli_env(address: str, task_queue: str, state: Path | None = None) -> dict[str, str]:
    """The caller's environment minus any signoff/Temporal config, pointed at the test server."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SIGNOFF_", "TEMPORAL_", "COLUMNS"))}
    env.update(TEMPORAL_ADDRESS=address, SIGNOFF_TASK_QUEUE=task_queue, USER="tester", NO_COLOR="1")
    if state is not None:
        env["XDG_STATE_HOME"] = str(state)
    return env


async def spawn(env: dict[str, str], *args: str, cwd: Path = ROOT) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        str(CLIENT),
        *args,
        cwd=cwd,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


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
def cli_environ(env: WorkflowEnvironment, task_queue: str, tmp_path: Path) -> dict[str, str]:
    return cli_env(env.client.service_client.config.target_host, task_queue, tmp_path / "state")


@pytest.fixture
def cli(cli_environ: dict[str, str]) -> Cli:
    async def run(*args: str, stdin: str = "", cwd: Path = ROOT, **extra_env: str) -> Done:
        return await finish(await spawn({**cli_environ, **extra_env}, *args, cwd=cwd), stdin)

    return run


def echo_then_report(request: ScriptedRequest) -> Reply:
    if request.round == 1:
        return Reply.tool_calls([call("run_command", "call_1", command="echo hi")])
    return Reply.text(f"saw: {request.last.content}")


@asynccontextmanager
async def served(
    client: Client,
    task_queue: str,
    workspace: Path,
    script: Callable[[ScriptedRequest], Reply] = echo_then_report,
    extra: Sequence[ChatClientAgent] = (),
    **worker_options: Any,
) -> AsyncIterator[ScriptedModelServer]:
    with ScriptedModelServer(script) as model:
        async with running_worker(client, task_queue, model, agents_for(workspace, extra=extra), **worker_options):
            yield model
