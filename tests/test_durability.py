"""Durability with real processes: `worker.py` killed, the dev server restarted, zero config.

Each test runs `python worker.py` as a child process (SIGKILL is a crash, SIGTERM a
shutdown) against a real dev server, with the scripted model served from this process.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle

from signoff.approval.requests import ToolApprovalResponse
from signoff.contract import AgentRunResult
from signoff.messages import ChatMessage
from signoff.runtime.devserver import is_listening
from signoff.runtime.worker import connect_address
from tests.helpers import (
    Reply,
    ScriptedModelServer,
    ScriptedRequest,
    assert_eventually,
    call,
    result_unless,
    start_run,
    wait_pending,
)
from tests.processes import READY, REPO, Processes, clean_env, free_port, kill_group, pids_with_cwd

RESULT_TIMEOUT = 30.0


@pytest.fixture
def address(client: Client) -> str:
    return client.service_client.config.target_host


@pytest.fixture
def model() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(run_then_report) as server:
        yield server


def run_then_report(request: ScriptedRequest) -> Reply:
    """Round 1: the command in the prompt; then report what the tool said."""
    if request.round == 1:
        return Reply.tool_calls([call("run_command", "call_1", command=request.last.content)])
    return Reply.text(f"saw: {request.last.content}")


def worker_env(
    address: str, task_queue: str, model: ScriptedModelServer, workspace: Path, **extra: str
) -> dict[str, str]:
    return clean_env(
        TEMPORAL_ADDRESS=address,
        SIGNOFF_TASK_QUEUE=task_queue,
        SIGNOFF_LLM_BASE_URL=model.base_url,
        SIGNOFF_LLM_MODEL="scripted",
        SIGNOFF_WORKSPACE=workspace,
        **extra,
    )


def expected_transcript(command: str, output: str) -> list[ChatMessage]:
    return [
        ChatMessage.user(command),
        ChatMessage.assistant(None, [call("run_command", "call_1", command=command)]),
        ChatMessage.tool(output, "call_1"),
        ChatMessage.assistant(f"saw: {output}"),
    ]


async def result_of(handle: WorkflowHandle) -> AgentRunResult:
    return await asyncio.wait_for(handle.result(), RESULT_TIMEOUT)


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


# --- a worker crash ------------------------------------------------------------------


async def test_run_paused_for_approval_survives_worker_sigkill(
    client: Client, address: str, task_queue: str, model: ScriptedModelServer, procs: Processes, tmp_path: Path
) -> None:
    env = worker_env(address, task_queue, model, tmp_path)
    command = "echo ran >> ran.log; echo durable"
    first = procs.worker("worker-1", env)
    await first.wait_for_output(READY)
    handle = await start_run(client, task_queue, command)
    await wait_pending(handle, timeout=15)

    first.kill()
    second = procs.worker("worker-2", env)
    await second.wait_for_output(READY)
    ready = time.monotonic()
    ack = await handle.execute_update("submit_tool_approval", ToolApprovalResponse.approve("call_1"))
    result = await result_of(handle)
    done = time.monotonic()
    print(
        f"[timing] new worker start -> run finished: {done - second.started_at:.2f}s "
        f"(start -> ready {ready - second.started_at:.2f}s, approval -> finished {done - ready:.2f}s)"
    )

    assert (ack["accepted"], ack["pending"]) == (["call_1"], [])
    assert result.messages == expected_transcript(command, "exit code: 0\ndurable\n")
    assert lines(tmp_path / "ran.log") == ["ran"]
    assert model.requests[-1].last == ChatMessage.tool("exit code: 0\ndurable\n", "call_1")


async def test_command_interrupted_by_worker_sigkill_is_reported_unknown_and_not_rerun(
    client: Client, address: str, task_queue: str, model: ScriptedModelServer, procs: Processes, tmp_path: Path
) -> None:
    env = worker_env(address, task_queue, model, tmp_path)
    marker = tmp_path / "marker"
    # `$$` is the shell's pid, which is also its process group: teardown kills it by that id.
    command = "echo started $$ >> marker; sleep 30; echo finished >> marker"
    first = procs.worker("worker-1", env)
    await first.wait_for_output(READY)
    handle = await start_run(client, task_queue, command)
    await wait_pending(handle, timeout=15)
    await handle.execute_update("submit_tool_approval", ToolApprovalResponse.approve("call_1"))

    def kill_commands() -> None:  # a killed worker's command lives on in its own session
        for line in lines(marker):
            if line.startswith("started"):
                kill_group(int(line.split()[1]))

    procs.cleanups.append(kill_commands)

    async def started() -> None:
        assert [line.split()[0] for line in lines(marker)] == ["started"]

    await assert_eventually(started, timeout=15)
    first.kill()
    killed_at = time.monotonic()
    procs.worker("worker-2", env)

    def ran_again() -> str | None:
        if sum(line.startswith("started") for line in lines(marker)) > 1:
            return f"the command ran again after the crash: {lines(marker)}"
        return None

    result = await asyncio.wait_for(result_unless(handle, ran_again), RESULT_TIMEOUT)
    print(f"[timing] worker SIGKILL -> run finished with outcome unknown: {time.monotonic() - killed_at:.2f}s")

    tool_message = result.messages[2]
    assert (tool_message.role, tool_message.tool_call_id) == ("tool", "call_1")
    assert (tool_message.content or "").startswith("Error: outcome unknown"), tool_message.content
    assert result.text == f"saw: {tool_message.content}"
    assert [line.split()[0] for line in lines(marker)].count("started") == 1  # once, never re-run


# --- a server restart ----------------------------------------------------------------


async def test_run_paused_for_approval_survives_dev_server_restart(
    task_queue: str, model: ScriptedModelServer, procs: Processes, tmp_path: Path
) -> None:
    db, port, ui_port = tmp_path / "t.db", free_port(), free_port()
    address = f"127.0.0.1:{port}"
    env = worker_env(address, task_queue, model, tmp_path)
    command = "echo ran >> ran.log; echo restarted"
    server = await procs.dev_server("server-1", db, port, ui_port)
    first = procs.worker("worker-1", env)
    await first.wait_for_output(READY)
    handle = await start_run(await connect_address(address), task_queue, command)
    (pending,) = await wait_pending(handle, timeout=15)

    await server.terminate()
    await first.terminate()
    await procs.dev_server("server-2", db, port, ui_port)
    procs.worker("worker-2", env)
    handle = (await connect_address(address)).get_workflow_handle(handle.id, result_type=AgentRunResult)
    assert await wait_pending(handle, timeout=15) == [pending]
    await handle.execute_update("submit_tool_approval", ToolApprovalResponse.approve("call_1"))
    result = await result_of(handle)

    assert result.messages == expected_transcript(command, "exit code: 0\nrestarted\n")
    assert lines(tmp_path / "ran.log") == ["ran"]


# --- zero config -----------------------------------------------------------------------


@pytest.fixture
def embedded_server_left(tmp_path: Path) -> Iterator[None]:
    """Kill a dev server the worker started in `tmp_path` and failed to stop."""
    yield
    for pid in pids_with_cwd(tmp_path):
        kill_group(pid)


async def test_worker_without_config_starts_and_stops_embedded_server(
    model: ScriptedModelServer, procs: Processes, tmp_path: Path, embedded_server_left: None
) -> None:
    if is_listening("localhost:7233") or is_listening("localhost:8233"):
        pytest.skip("localhost:7233 or :8233 is in use, so the worker would not start its own server")
    env = clean_env(SIGNOFF_LLM_BASE_URL=model.base_url, SIGNOFF_LLM_MODEL="scripted", PYTHONPATH=REPO)
    worker = procs.worker("worker", env, cwd=tmp_path)
    await worker.wait_for_output(READY, timeout=60)
    out = worker.stdout()
    assert "started the embedded Temporal dev server at localhost:7233" in out
    assert "Web UI http://localhost:8233" in out
    assert (tmp_path / ".signoff" / "temporal.db").is_file()

    handle = await start_run(await connect_address("localhost:7233"), "signoff", "echo zero config")
    await wait_pending(handle, timeout=15)
    await handle.execute_update("submit_tool_approval", ToolApprovalResponse.approve("*"))
    result = await result_of(handle)
    assert result.messages == expected_transcript("echo zero config", "exit code: 0\nzero config\n")

    assert await worker.terminate(timeout=30) == 0
    assert "signoff: shutting down" in worker.stdout()
    assert not is_listening("localhost:7233")
    assert pids_with_cwd(tmp_path) == []  # the embedded server is gone, not orphaned


# --- agents from a user module -----------------------------------------------------------

OPS_MODULE = '''
"""Agents for `worker.py --agents ops_agents`, built with the core API."""
import os
from pathlib import Path

from signoff.agent.builder import AgentBuilder
from signoff.tools import ApprovalRequiredTool, tool


def _log(line: str) -> None:
    with open(Path(os.environ["SIGNOFF_WORKSPACE"]) / "calls.log", "a") as f:
        f.write(line + "\\n")


@tool
def get_status(service: str) -> str:
    """Report a service's health."""
    _log(f"get_status {service}")
    return f"{service} is healthy"


@tool(idempotent=False)
def deploy_service(service: str) -> str:
    """Deploy a service to production."""
    _log(f"deploy_service {service}")
    return f"deployed {service}"


def agents():
    tools = [get_status, ApprovalRequiredTool(deploy_service)]
    return [AgentBuilder("ops").with_instructions("You run services.").with_tools(tools).build()]
'''


OPS_CALLS = [call("get_status", "call_1", service="api"), call("deploy_service", "call_2", service="api")]


def status_and_deploy(request: ScriptedRequest) -> Reply:
    if request.round == 1:
        return Reply.tool_calls(OPS_CALLS)
    return Reply.text(" / ".join(m.content or "" for m in request.messages if m.role == "tool"))


@pytest.fixture
async def ops_worker(
    address: str, task_queue: str, procs: Processes, tmp_path: Path
) -> AsyncIterator[ScriptedModelServer]:
    (tmp_path / "ops_agents.py").write_text(OPS_MODULE)
    with ScriptedModelServer(status_and_deploy) as model:
        env = worker_env(address, task_queue, model, tmp_path, PYTHONPATH=str(tmp_path))
        worker = procs.worker("worker", env, "--agents", "ops_agents")
        await worker.wait_for_output(READY)
        assert "agents: default, ops" in worker.stdout()
        yield model


async def test_agent_from_user_module_gates_only_its_approval_tool(
    client: Client, task_queue: str, ops_worker: ScriptedModelServer, tmp_path: Path
) -> None:
    handle = await start_run(client, task_queue, "deploy api", agent="ops")
    (pending,) = await wait_pending(handle, timeout=15)
    assert (pending["call_id"], pending["name"], pending["arguments"]) == (
        "call_2",
        "deploy_service",
        {"service": "api"},
    )

    async def status_ran() -> None:
        assert lines(tmp_path / "calls.log") == ["get_status api"]

    await assert_eventually(status_ran)
    await handle.execute_update("submit_tool_approval", ToolApprovalResponse.approve("call_2"))
    result = await result_of(handle)

    assert lines(tmp_path / "calls.log") == ["get_status api", "deploy_service api"]
    assert ops_worker.requests[0].tools == ["get_status", "deploy_service"]
    assert result.messages == [
        ChatMessage.user("deploy api"),
        ChatMessage.assistant(None, OPS_CALLS),
        ChatMessage.tool("api is healthy", "call_1"),
        ChatMessage.tool("deployed api", "call_2"),
        ChatMessage.assistant("api is healthy / deployed api"),
    ]


async def test_unknown_agent_fails_the_run_naming_the_module_agents(
    client: Client, task_queue: str, ops_worker: ScriptedModelServer
) -> None:
    handle = await start_run(client, task_queue, "hi", agent="nope")
    with pytest.raises(WorkflowFailureError) as failure:
        await result_of(handle)
    assert "unknown agent 'nope' (known agents: default, ops)" in str(failure.value.cause)
    assert ops_worker.request_count == 0
