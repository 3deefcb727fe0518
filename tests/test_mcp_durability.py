"""An MCP call interrupted by a worker crash (`worker.py` killed) runs at most once.

The worker is configured as an operator would: `SIGNOFF_MCP_CONFIG` names an `mcpServers`
file, whose servers the default agent offers.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from temporalio.client import Client

from signoff.approval.requests import ToolApprovalResponse
from tests.governance import turns
from tests.helpers import ScriptedModelServer, assert_eventually, result_unless, start_run, wait_pending
from tests.mcp_helpers import SERVER, calls, mcp_call, tools_called
from tests.processes import READY, Processes, clean_env, kill_group


def configured(tmp_path: Path, procs: Processes) -> Path:
    """`mcp.json` with the test server as `notes`; returns its notes directory."""
    notes = tmp_path / "notes"
    notes.mkdir()
    config = {
        "mcpServers": {"notes": {"command": sys.executable, "args": [str(SERVER)], "env": {"NOTES_DIR": str(notes)}}}
    }
    (tmp_path / "mcp.json").write_text(json.dumps(config))

    def kill_servers() -> None:  # a killed worker's server lives on
        for pid, _, _ in calls(notes):
            kill_group(pid)

    procs.cleanups.append(kill_servers)
    return notes


def worker_env(client: Client, task_queue: str, model: ScriptedModelServer, tmp_path: Path) -> dict[str, str]:
    return clean_env(
        TEMPORAL_ADDRESS=client.service_client.config.target_host,
        SIGNOFF_TASK_QUEUE=task_queue,
        SIGNOFF_LLM_BASE_URL=model.base_url,
        SIGNOFF_LLM_MODEL="scripted",
        SIGNOFF_WORKSPACE=tmp_path,
        SIGNOFF_MCP_CONFIG=tmp_path / "mcp.json",
    )


async def test_an_mcp_call_interrupted_by_a_worker_crash_is_reported_unknown_and_not_run_again(
    client: Client, task_queue: str, procs: Processes, tmp_path: Path
) -> None:
    notes = configured(tmp_path, procs)
    with ScriptedModelServer(turns([mcp_call("slow", "call_1", seconds=30)])) as model:
        env = worker_env(client, task_queue, model, tmp_path)
        first = procs.worker("worker-1", env)
        await first.wait_for_output(READY)
        assert "MCP servers: notes (stdio: " in first.stdout()
        handle = await start_run(client, task_queue, "take a while")
        (request,) = await wait_pending(handle, timeout=20)
        assert request["name"] == "mcp__notes__slow"
        await handle.execute_update("submit_tool_approval", ToolApprovalResponse.approve("call_1"))

        async def started() -> None:
            assert tools_called(notes) == ["slow"]

        await assert_eventually(started, timeout=15)
        first.kill()
        killed_at = time.monotonic()
        procs.worker("worker-2", env)

        def ran_again() -> str | None:
            if tools_called(notes).count("slow") > 1:
                return f"the MCP call ran again after the crash: {calls(notes)}"
            return None

        result = await result_unless(handle, ran_again)
    print(f"[timing] worker SIGKILL -> run finished with outcome unknown: {time.monotonic() - killed_at:.2f}s")
    tool_message = result.messages[2]
    assert (tool_message.role, tool_message.tool_call_id) == ("tool", "call_1")
    assert (tool_message.content or "").startswith("Error: outcome unknown"), tool_message.content
    assert tools_called(notes).count("slow") == 1
