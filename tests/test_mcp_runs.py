"""MCP tools in durable runs, on a real dev server with real MCP servers over stdio and HTTP:
the snapshot, gates, approve/deny, policies, errors, a dying server, parked runs and new workers."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.testing import ActivityEnvironment

from signoff import AgentBuilder, ApprovalPolicy, MCPServer, MCPTool, PolicyBook
from signoff.activities.agents import ServedAgents
from signoff.agent.builder import ChatClientAgent
from signoff.agent.snapshot import RunSnapshot
from signoff.approval.requests import ToolApprovalRequest, ToolApprovalResponse
from signoff.cli.calls import shown_call
from signoff.cli.style import Style
from signoff.contract import AgentRunResult
from signoff.errors import ConfigError
from signoff.messages import ChatMessage
from tests.governance import turns
from tests.helpers import ScriptedModelServer, running_worker, start_run, wait_pending
from tests.mcp_helpers import calls, http_server, mcp_call, stdio, tools_called


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("note a")
    return tmp_path / "notes"


def ops(*servers: MCPServer) -> dict[str, ChatClientAgent]:
    return {"ops": AgentBuilder("ops").with_mcp_servers(servers).build()}


async def events(handle: WorkflowHandle) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = await handle.query("events", 0)
    return found


async def finished(handle: WorkflowHandle) -> AgentRunResult:
    result: AgentRunResult = await handle.result()
    return result


# --- the snapshot and the gate ---------------------------------------------------------


async def test_a_run_snapshots_the_mcp_tools_and_runs_a_trusted_read_without_approval(
    client: Client, task_queue: str, notes: Path
) -> None:
    with ScriptedModelServer(turns([mcp_call("read_note", "call_1", name="a.txt")])) as model:
        async with running_worker(client, task_queue, model, ops(stdio(notes, trusted=True))):
            handle = await start_run(client, task_queue, "read a", agent="ops")
            result = await finished(handle)
            snapshot = await handle.query("agent_snapshot", result_type=RunSnapshot)
    assert result.text == "note a" and tools_called(notes) == ["read_note"]
    read = snapshot.tool("mcp__notes__read_note")
    assert read is not None and read.mcp is not None
    assert (read.gate, read.idempotent, read.spec.description, read.mcp.trusted) == (
        "never",
        False,
        "Read a note",
        True,
    )
    assert [t.spec.name for t in snapshot.tools] == model.requests[0].tools
    assert model.requests[0].raw["tools"][0]["function"]["parameters"]["required"] == ["name"]


async def test_an_untrusted_read_waits_and_the_request_shows_server_tool_annotations_and_arguments(
    client: Client, task_queue: str, notes: Path
) -> None:
    with ScriptedModelServer(turns([mcp_call("read_note", "call_1", name="a.txt")])) as model:
        async with running_worker(client, task_queue, model, ops(stdio(notes))):
            handle = await start_run(client, task_queue, "read a", agent="ops")
            (request,) = await wait_pending(handle)
            metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
            assert tools_called(notes) == []
            await handle.execute_update("submit_tool_approval", ToolApprovalResponse.approve("call_1"))
            result = await finished(handle)
    about = (
        "MCP tool 'read_note' of server 'notes' (untrusted server: annotations shown, not relied on; "
        "readOnlyHint: true, openWorldHint: false). Read a note"
    )
    assert (request["name"], request["arguments"], request["description"]) == (
        "mcp__notes__read_note",
        {"name": "a.txt"},
        about,
    )
    assert f"  `{about}`" in metadata.current_details.splitlines()  # the Web UI's current details
    shown = shown_call(handle.id, ToolApprovalRequest.model_validate(request), Style(), None)
    assert shown[1] == f"    about      {about}"  # `signoff pending`
    assert result.text == "note a"


async def test_a_denied_call_is_rejected_and_never_reaches_the_server(
    client: Client, task_queue: str, notes: Path
) -> None:
    with ScriptedModelServer(turns([mcp_call("delete_note", "call_1", name="a.txt")])) as model:
        async with running_worker(client, task_queue, model, ops(stdio(notes, trusted=True))):
            handle = await start_run(client, task_queue, "delete a", agent="ops")
            await wait_pending(handle)
            await handle.execute_update("submit_tool_approval", ToolApprovalResponse.deny("call_1", "keep it"))
            result = await finished(handle)
    assert result.messages[2] == ChatMessage.tool("Rejected: keep it", "call_1")
    assert (notes / "a.txt").exists() and tools_called(notes) == []


async def test_the_policy_file_says_who_may_approve_an_mcp_tool(client: Client, task_queue: str, notes: Path) -> None:
    book = PolicyBook(policies={"mcp__notes__write_note": ApprovalPolicy(approvers=("alice",))})
    with ScriptedModelServer(turns([mcp_call("write_note", "call_1", name="b.txt", text="hi")])) as model:
        async with running_worker(client, task_queue, model, ops(stdio(notes, trusted=True)), policies=book):
            handle = await start_run(client, task_queue, "write b", agent="ops")
            (request,) = await wait_pending(handle)
            with pytest.raises(WorkflowUpdateFailedError):
                await handle.execute_update(
                    "submit_tool_approval", ToolApprovalResponse.approve("call_1", approver="bob")
                )
            await handle.execute_update(
                "submit_tool_approval", ToolApprovalResponse.approve("call_1", approver="alice")
            )
            result = await finished(handle)
    assert request["policy"]["approvers"] == ["alice"]
    assert result.approvals[0].approver == "alice" and (notes / "b.txt").read_text() == "hi"


def _policy_files_can_gate() -> bool:
    try:
        PolicyBook.parse({"t": {"always": True}})
    except ConfigError:
        return False
    return True


@pytest.mark.skipif(not _policy_files_can_gate(), reason='needs the policy file\'s "always" (issue #15)')
async def test_the_policy_file_gates_a_trusted_read_only_tool(client: Client, task_queue: str, notes: Path) -> None:
    book = PolicyBook.parse({"mcp__notes__read_note": {"always": True}})
    with ScriptedModelServer(turns([mcp_call("read_note", "call_1", name="a.txt")])) as model:
        async with running_worker(client, task_queue, model, ops(stdio(notes, trusted=True)), policies=book):
            handle = await start_run(client, task_queue, "read a", agent="ops")
            await wait_pending(handle)
            assert tools_called(notes) == []
            await handle.execute_update("submit_tool_approval", ToolApprovalResponse.approve("call_1"))
            result = await finished(handle)
    assert result.text == "note a"


# --- errors and failing servers ----------------------------------------------------------


async def test_an_mcp_error_reaches_the_model_and_the_run_goes_on(client: Client, task_queue: str, notes: Path) -> None:
    with ScriptedModelServer(turns([mcp_call("fail", "call_1", message="disk full")])) as model:
        async with running_worker(client, task_queue, model, ops(stdio(notes))):
            handle = await start_run(client, task_queue, "fail", agent="ops")
            await wait_pending(handle)
            await handle.execute_update("submit_tool_approval", ToolApprovalResponse.approve("call_1"))
            result = await finished(handle)
    assert result.messages[2] == ChatMessage.tool("Error: Error executing tool fail: disk full", "call_1")
    assert result.finish_reason.value == "stop"


async def test_an_unreachable_server_is_in_the_runs_events_and_the_run_goes_on_without_it(
    client: Client, task_queue: str, notes: Path
) -> None:
    broken = MCPServer(name="broken", command="/no/such/mcp-server")
    with ScriptedModelServer(turns([mcp_call("read_note", "call_1", name="a.txt")])) as model:
        async with running_worker(client, task_queue, model, ops(broken, stdio(notes, trusted=True))):
            handle = await start_run(client, task_queue, "read a", agent="ops")
            result = await finished(handle)
            feed = await events(handle)
    unavailable = [e for e in feed if e["type"] == "mcp_unavailable"]
    assert unavailable == [
        {
            "seq": 0,
            "type": "mcp_unavailable",
            "server": "broken",
            "tool": None,
            "message": "cannot start '/no/such/mcp-server': no such file or directory",
        }
    ]
    assert result.text == "note a" and not any(t.startswith("mcp__broken") for t in model.requests[0].tools)


async def test_a_server_that_dies_mid_run_is_reported_and_started_again_for_the_next_call(
    client: Client, task_queue: str, notes: Path
) -> None:
    script = turns([mcp_call("crash", "call_1")], [mcp_call("whoami", "call_2")])
    with ScriptedModelServer(script) as model:
        async with running_worker(client, task_queue, model, ops(stdio(notes, trusted=True))):
            handle = await start_run(client, task_queue, "crash, then say who", agent="ops")
            await wait_pending(handle)
            await handle.execute_update("submit_tool_approval", ToolApprovalResponse.approve("call_1"))
            result = await finished(handle)
    crashed, answered = (m.content or "" for m in result.messages if m.role == "tool")
    assert crashed.startswith("Error: MCP server 'notes' closed the connection before answering"), crashed
    (first_pid, _, _), (second_pid, _, _) = calls(notes)
    assert json.loads(answered)["pid"] == second_pid != first_pid


# --- parked runs, changed servers, other workers ------------------------------------------


async def test_a_parked_run_keeps_the_tools_it_was_shown_and_a_new_worker_runs_its_call(
    client: Client, task_queue: str, notes: Path
) -> None:
    """Worker 1 lists version 1 of the server; the run parks. Worker 2 (new sessions, no snapshot of
    its own) serves version 2, which describes and lists other tools: the parked run keeps what it
    was shown, and worker 2 runs its approved call by name; a new run sees version 2."""
    script = turns([mcp_call("delete_note", "call_1", name="a.txt")])
    with ScriptedModelServer(script) as model:
        async with running_worker(client, task_queue, model, ops(stdio(notes, trusted=True))):
            parked = await start_run(client, task_queue, "delete a", agent="ops")
            (request,) = await wait_pending(parked)
        async with running_worker(client, task_queue, model, ops(stdio(notes, trusted=True, variant="2"))):
            await parked.execute_update("submit_tool_approval", ToolApprovalResponse.approve("call_1"))
            result = await finished(parked)
            shown = await parked.query("agent_snapshot", result_type=RunSnapshot)
            fresh = await start_run(client, task_queue, "delete a", agent="ops")
            await wait_pending(fresh)
            now = await fresh.query("agent_snapshot", result_type=RunSnapshot)
            await fresh.terminate()
    assert request["description"].endswith("Delete a note") and result.text == "deleted a.txt"
    assert not (notes / "a.txt").exists()
    assert shown.tool("mcp__notes__tidy") is not None and now.tool("mcp__notes__tidy") is None
    assert (
        shown.descriptions["mcp__notes__read_note"].endswith("Read a note"),
        now.descriptions["mcp__notes__read_note"].endswith("Read a note (v2)"),
    ) == (True, True)


async def test_a_streamable_http_server_s_tools_run_in_a_durable_run(
    client: Client, task_queue: str, notes: Path
) -> None:
    script = turns(
        [
            mcp_call("read_note", "call_1", name="a.txt"),
            mcp_call("write_note", "call_2", name="b.txt", text="from http"),
        ]
    )
    async with http_server(notes) as url:
        with ScriptedModelServer(script) as model:
            async with running_worker(client, task_queue, model, ops(MCPServer(name="notes", url=url, trusted=True))):
                handle = await start_run(client, task_queue, "read a, write b", agent="ops")
                (request,) = await wait_pending(handle)
                await handle.execute_update("submit_tool_approval", ToolApprovalResponse.approve("call_2"))
                result = await finished(handle)
    assert request["call_id"] == "call_2" and result.text == "note a|wrote 9 characters to b.txt"
    assert (notes / "b.txt").read_text() == "from http"


async def test_a_worker_that_did_not_list_the_tools_rebuilds_the_runs_snapshot_as_its_own(
    client: Client, task_queue: str, notes: Path
) -> None:
    with ScriptedModelServer(turns([mcp_call("delete_note", "call_1", name="a.txt")])) as model:
        async with running_worker(client, task_queue, model, ops(stdio(notes, trusted=True))):
            parked = await start_run(client, task_queue, "delete a", agent="ops")
            await wait_pending(parked)
            snapshot = await parked.query("agent_snapshot", result_type=RunSnapshot)
            other = ServedAgents(ops(stdio(notes, trusted=True, variant="2")))
            activities = ActivityEnvironment(client)
            activities.info = dataclasses.replace(
                activities.info, workflow_id=parked.id, workflow_run_id=parked.result_run_id, workflow_type="AgentRun"
            )
            assert other.own("ops", snapshot.digest()) is None  # listings change: nothing to rebuild from alone
            resolved = await activities.run(other.resolve, "ops", snapshot.digest())
            again = other.own("ops", snapshot.digest())
            await parked.terminate()
            await other.aclose()
    assert resolved.own and resolved.snapshot == snapshot and again is not None and again.own
    delete = resolved.registry.get("mcp__notes__delete_note")
    assert isinstance(delete, MCPTool) and delete.mcp == snapshot.tool("mcp__notes__delete_note").mcp


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


async def test_the_worker_stops_its_stdio_servers_when_it_shuts_down(
    client: Client, task_queue: str, notes: Path
) -> None:
    with ScriptedModelServer(turns([mcp_call("whoami", "call_1")])) as model:
        async with running_worker(client, task_queue, model, ops(stdio(notes, trusted=True))):
            await finished(await start_run(client, task_queue, "who runs the server", agent="ops"))
            ((pid, _, _),) = calls(notes)
            assert alive(pid)
    assert not alive(pid)
