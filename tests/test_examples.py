"""The shipped example of your own agents, served by a worker and run end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from temporalio.client import Client

from signoff.messages import ToolCall
from signoff.runtime.worker import load_agents
from tests.helpers import Reply, ScriptedModelServer, ScriptedRequest, running_worker, start_run, wait_pending
from tests.processes import REPO


def ops_script(request: ScriptedRequest) -> Reply:
    if request.round == 1:
        return Reply.tool_calls(
            [
                ToolCall(id="call_s", name="get_status", arguments='{"service": "billing"}'),
                ToolCall(id="call_d", name="deploy_service", arguments='{"service": "billing", "version": "2.0"}'),
            ]
        )
    if request.round == 2:
        return Reply.tool_calls([ToolCall(id="call_s2", name="get_status", arguments='{"service": "billing"}')])
    return Reply.text(request.last.content or "")


async def test_ops_agent_deploys_only_after_approval(
    client: Client, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SIGNOFF_WORKSPACE", str(tmp_path))
    agents = load_agents(["examples.ops_agents"])
    assert sorted(agents) == ["default", "ops"]
    with ScriptedModelServer(ops_script) as model:
        async with running_worker(client, task_queue, model, agents):
            handle = await start_run(client, task_queue, "deploy billing 2.0", agent="ops")
            (pending,) = await wait_pending(handle)
            assert pending["name"] == "deploy_service"
            assert not (tmp_path / "deployments.json").exists()
            await handle.execute_update("submit_tool_approval", {"call_id": "call_d", "approved": True})
            result = await handle.result()
    assert result.messages[2].content == "billing is not deployed"
    assert result.text == "billing is at version 2.0"
    assert json.loads((tmp_path / "deployments.json").read_text()) == {"billing": "2.0"}


AGENTS_MODULE = """
from signoff import AgentBuilder

AGENTS = [AgentBuilder("mine").with_instructions("Be brief.").build()]
"""


def test_agents_modules_are_found_in_the_current_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As docs/getting-started.md's `python worker.py --agents myapp.agents` run from the project directory."""
    (tmp_path / "myproject_agents").mkdir()
    (tmp_path / "myproject_agents" / "agents.py").write_text(AGENTS_MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert sorted(load_agents(["myproject_agents.agents"])) == ["default", "mine"]


def test_a_missing_agents_module_stops_the_worker_with_a_message() -> None:
    done = subprocess.run(
        [sys.executable, "worker.py", "--agents", "nosuchapp.agents"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "cannot import agents module 'nosuchapp.agents': no module named 'nosuchapp'" in done.stderr
