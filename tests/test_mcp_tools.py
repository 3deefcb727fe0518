"""MCP tools in process, against real MCP servers (the SDK's `MCPServer`) over stdio and HTTP:
listing, gating by annotations and trust, results, errors, dying servers, the environment."""

from __future__ import annotations

import json
import os
import pwd
import signal
import stat
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from signoff import AgentBuilder, MCPServer, MCPUnavailableEvent
from signoff.agent.session import AgentRunOptions, AgentSession
from signoff.approval.requests import ToolApprovalResponse
from signoff.chat.config import LLMConfig
from signoff.chat.openai import OpenAIChatClient
from signoff.messages import ApprovalRequestEvent, ChatMessage, FinishEvent, FinishReason, ToolSpec
from signoff.testing import Reply, ScriptedModelServer, ScriptedRequest
from signoff.tools.mcp import MCPTool, MCPToolInfo
from signoff.tools.mcp.sessions import MCPSessions
from signoff.tools.mcp.tool import open_tools, rebuilt_tools
from tests.mcp_helpers import calls, http_server, mcp_call, stdio, tools_called
from tests.processes import free_port
from tests.waiting import wait_until


@pytest.fixture
async def sessions() -> AsyncIterator[MCPSessions]:
    pool = MCPSessions()
    yield pool
    await pool.aclose()


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("note a")
    return tmp_path / "notes"


async def listed(server: MCPServer, sessions: MCPSessions) -> dict[str, MCPTool]:
    tools, missing = await open_tools([server], sessions)
    assert missing == []
    return {t.name: t for t in tools}


def whoami(output: str) -> dict[str, object]:
    found: dict[str, object] = json.loads(output)
    return found


# --- listing and gating --------------------------------------------------------------


async def test_tools_are_listed_with_prefixed_names_descriptions_schemas_and_annotations(
    notes: Path, sessions: MCPSessions
) -> None:
    tools = await listed(stdio(notes), sessions)
    assert sorted(tools) == [
        f"mcp__notes__{t}"
        for t in sorted(
            [
                *("read_note", "write_note", "delete_note", "tidy", "whoami", "fail", "crash", "slow", "media"),
                *("stats", "erase_note", "sign_in"),
            ]
        )
    ]
    read = tools["mcp__notes__read_note"]
    assert (read.description, read.parameters["properties"]["name"]["type"], read.parameters["required"]) == (
        "Read a note",
        "string",
        ["name"],
    )
    assert read.mcp == MCPToolInfo(
        server="notes", tool="read_note", trusted=False, annotations={"readOnlyHint": True, "openWorldHint": False}
    )


async def test_a_trusted_server_s_read_only_tools_run_ungated_and_all_others_need_approval(
    notes: Path, sessions: MCPSessions
) -> None:
    tools = await listed(stdio(notes, trusted=True), sessions)
    ungated = sorted(name for name, tool in tools.items() if not tool.requires_approval({}))
    assert ungated == ["mcp__notes__media", "mcp__notes__read_note", "mcp__notes__stats", "mcp__notes__whoami"]
    assert tools["mcp__notes__tidy"].gate == "always"  # read-only and destructive: believed destructive
    retried = sorted(name for name, tool in tools.items() if tool.idempotent)
    assert retried == ["mcp__notes__write_note"]  # the only trusted idempotentHint: true


async def test_an_untrusted_server_s_annotations_never_relax_the_gate(notes: Path, sessions: MCPSessions) -> None:
    tools = await listed(stdio(notes), sessions)
    assert all(tool.requires_approval({}) and not tool.idempotent for tool in tools.values())
    assert "untrusted server: annotations shown, not relied on; readOnlyHint: true" in tools[
        "mcp__notes__read_note"
    ].mcp.describe("")


async def test_the_tools_list_offers_only_the_named_tools_and_names_those_not_listed(
    notes: Path, sessions: MCPSessions
) -> None:
    tools, missing = await open_tools([stdio(notes, tools=["read_note", "format_disk"])], sessions)
    assert [t.name for t in tools] == ["mcp__notes__read_note"]
    assert missing == [
        MCPUnavailableEvent(server="notes", tool="format_disk", message="in the tools allow-list, but not listed")
    ]


async def test_a_server_that_cannot_start_is_named_with_why_and_the_others_still_list(
    notes: Path, sessions: MCPSessions
) -> None:
    broken = MCPServer(name="broken", command=sys.executable, args=["-c", "import sys; sys.exit(3)"])
    missing_binary = MCPServer(name="gone", command="/no/such/mcp-server")
    tools, missing = await open_tools([broken, stdio(notes), missing_binary], sessions)
    assert len(tools) == 12
    assert [(m.server, m.tool) for m in missing] == [("broken", None), ("gone", None)]
    assert "closed the connection" in missing[0].message
    assert missing[1].message == "cannot start '/no/such/mcp-server': no such file or directory"


async def test_the_same_tools_over_streamable_http_with_headers_from_the_environment(
    notes: Path, sessions: MCPSessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOTES_TOKEN", "t0ken")
    async with http_server(notes) as url:
        server = MCPServer(name="notes", url=url, headers={"Authorization": "Bearer ${NOTES_TOKEN}"}, trusted=True)
        tools = await listed(server, sessions)
        read = await tools["mcp__notes__read_note"].execute({"name": "a.txt"})
        seen = whoami((await tools["mcp__notes__whoami"].execute({})).content)
    assert read.content == "note a" and seen["authorization"] == "Bearer t0ken"
    assert not tools["mcp__notes__read_note"].requires_approval({})


async def test_an_http_server_restarted_between_calls_is_reached_again(notes: Path, sessions: MCPSessions) -> None:
    port = free_port()
    async with http_server(notes, port=port) as url:
        (tool,) = [
            t for t in (await listed(MCPServer(name="notes", url=url), sessions)).values() if t.name.endswith("whoami")
        ]
        before = whoami((await tool.execute({}, approved=True)).content)
    async with http_server(notes, port=port):
        after = await tool.execute({}, approved=True)
    assert not after.is_error, after
    assert whoami(after.content)["pid"] != before["pid"]


async def test_an_unreachable_http_server_is_named_without_its_credentials(sessions: MCPSessions) -> None:
    server = MCPServer(name="docs", url="http://user:pw@127.0.0.1:9/mcp?key=secret")
    _, (missing,) = await open_tools([server], sessions)
    assert missing.server == "docs" and "cannot reach http://127.0.0.1:9/mcp" in missing.message, missing
    assert "pw" not in missing.message and "secret" not in missing.message


# --- results and errors --------------------------------------------------------------


async def test_text_structured_content_and_media_become_the_tool_message(notes: Path, sessions: MCPSessions) -> None:
    tools = await listed(stdio(notes), sessions)
    media = await tools["mcp__notes__media"].execute({}, approved=True)
    stats = await tools["mcp__notes__stats"].execute({}, approved=True)
    assert media.to_message() == (
        "here it is\n[image: image/png, 100 bytes (not shown to the model)]\n"
        "[resource file:///notes/a (text/plain)]\nnote a\n[resource link b: file:///notes/b (text/plain; note b)]"
    )
    assert stats.to_message() == '{"notes": 1}'


async def test_a_tool_error_and_a_protocol_error_are_errors_for_the_model(notes: Path, sessions: MCPSessions) -> None:
    server = stdio(notes)
    tools = await listed(server, sessions)
    failed = await tools["mcp__notes__fail"].execute({"message": "disk full"}, approved=True)
    wrong = await tools["mcp__notes__read_note"].execute({"nom": "a.txt"}, approved=True)
    (unknown,) = rebuilt_tools(
        [(ToolSpec(name="mcp__notes__gone"), MCPToolInfo(server="notes", tool="gone"))], {"notes": server}, sessions
    )
    gone = await unknown.execute({}, approved=True)
    assert failed.to_message() == "Error: Error executing tool fail: disk full"
    assert wrong.is_error and "name" in wrong.content, wrong
    assert gone.to_message() == "Error: Unknown tool: gone"


async def test_a_server_that_dies_mid_call_reports_an_unknown_outcome_and_is_started_again(
    notes: Path, sessions: MCPSessions
) -> None:
    tools = await listed(stdio(notes), sessions)
    crashed = await tools["mcp__notes__crash"].execute({}, approved=True)
    again = await tools["mcp__notes__read_note"].execute({"name": "a.txt"}, approved=True)
    assert crashed.to_message() == (
        "Error: MCP server 'notes' closed the connection before answering (a stdio server's process ended); "
        "whether the call took effect is unknown"
    )
    assert again.content == "note a"
    (first, _, _), (second, _, _) = calls(notes)
    assert first != second and tools_called(notes) == ["crash", "read_note"]


async def test_a_server_that_died_while_idle_is_started_again_before_the_next_call(
    notes: Path, sessions: MCPSessions
) -> None:
    server = stdio(notes, trusted=True)
    tools = await listed(server, sessions)
    first = whoami((await tools["mcp__notes__whoami"].execute({})).content)
    os.kill(int(str(first["pid"])), signal.SIGKILL)
    await wait_until(lambda: not sessions.is_open(server), 10.0, "the dead server's session was not noticed")
    second = await tools["mcp__notes__whoami"].execute({})
    assert not second.is_error, second
    assert whoami(second.content)["pid"] != first["pid"]


# --- what a server process gets --------------------------------------------------------


async def test_a_stdio_server_gets_the_allow_listed_environment_and_its_own_env_only(
    notes: Path, sessions: MCPSessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEMPORAL_API_KEY", "temporal-secret")
    monkeypatch.setenv("SIGNOFF_LLM_API_KEY", "provider-secret")
    monkeypatch.setenv("GOPROXY", "https://proxy.example")
    monkeypatch.setenv("SIGNOFF_TOOL_ENV", "GOPROXY")
    tools = await listed(stdio(notes, trusted=True, env={"NOTES_MODE": "strict"}, cwd=str(notes)), sessions)

    async def seen(variable: str) -> object:
        return whoami((await tools["mcp__notes__whoami"].execute({"variable": variable})).content)["env"]

    assert [await seen(v) for v in ("TEMPORAL_API_KEY", "SIGNOFF_LLM_API_KEY", "GOPROXY", "NOTES_MODE", "PATH")] == [
        None,
        None,
        "https://proxy.example",
        "strict",
        os.environ["PATH"],
    ]
    assert whoami((await tools["mcp__notes__whoami"].execute({})).content)["cwd"] == str(notes)


@pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs root")
async def test_a_stdio_server_runs_as_the_tool_user(sessions: MCPSessions, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server here is a shell that records who it runs as and exits (whether `nobody` can run
    this Python with the SDK depends on the machine): the process is `nobody`'s, in its group."""
    nobody = pwd.getpwnam("nobody")
    out = Path(tempfile.mkdtemp(prefix="signoff-mcp-user-"))
    os.chmod(out, stat.S_IRWXU | stat.S_IRWXG | stat.S_IRWXO)
    monkeypatch.setenv("SIGNOFF_TOOL_USER", "nobody")
    server = MCPServer(
        name="who", command="/bin/sh", args=["-c", f"id -u > {out}/id; id -g >> {out}/id; echo $HOME >> {out}/id"]
    )
    _, (missing,) = await open_tools([server], sessions)
    assert "closed the connection" in missing.message
    assert (out / "id").read_text().split() == [str(nobody.pw_uid), str(nobody.pw_gid), nobody.pw_dir]


# --- this worker's own view decides what runs unapproved ---------------------------------


async def test_a_call_let_through_by_the_snapshot_is_refused_once_the_server_is_not_trusted(
    notes: Path, sessions: MCPSessions
) -> None:
    recorded = (await listed(stdio(notes, trusted=True), sessions))["mcp__notes__read_note"]
    (now,) = rebuilt_tools([(ToolSpec(name=recorded.name), recorded.mcp)], {"notes": stdio(notes)}, sessions)
    refused = await now.execute({"name": "a.txt"})
    approved = await now.execute({"name": "a.txt"}, approved=True)
    assert refused.to_message() == (
        "Error: this call needs approval now (MCP server 'notes' is not trusted on this worker) and was not "
        "approved; it was not run"
    )
    assert approved.content == "note a" and tools_called(notes) == ["read_note"]


async def test_a_snapshot_claiming_a_destructive_tool_is_read_only_does_not_make_it_run_unapproved(
    notes: Path, sessions: MCPSessions
) -> None:
    forged = MCPToolInfo(server="notes", tool="delete_note", trusted=True, annotations={"readOnlyHint": True})
    (tool,) = rebuilt_tools(
        [(ToolSpec(name="mcp__notes__delete_note"), forged)], {"notes": stdio(notes, trusted=True)}, sessions
    )
    assert tool.gate == "never"  # as the snapshot says; the worker checks its own listing before it runs
    refused = await tool.execute({"name": "a.txt"})
    assert "MCP server 'notes' no longer declares this tool read-only" in refused.content
    assert (notes / "a.txt").exists() and tools_called(notes) == []


async def test_a_server_the_worker_does_not_know_is_an_error_not_a_crash(sessions: MCPSessions) -> None:
    (tool,) = rebuilt_tools([(ToolSpec(name="mcp__gone__x"), MCPToolInfo(server="gone", tool="x"))], {}, sessions)
    result = await tool.execute({}, approved=True)
    assert result.to_message() == "Error: MCP server 'gone' is not configured on this worker; the call was not made"


# --- the in-process agent ------------------------------------------------------------------


def write_then_report(request: ScriptedRequest) -> Reply:
    if request.round == 1:
        return Reply.tool_calls(
            [
                mcp_call("read_note", "call_1", name="a.txt"),
                mcp_call("write_note", "call_2", name="b.txt", text="hello"),
            ]
        )
    return Reply.text(" | ".join(m.content or "" for m in request.messages if m.role == "tool"))


async def test_the_in_process_agent_runs_trusted_reads_and_waits_for_approval_of_writes(notes: Path) -> None:
    with ScriptedModelServer(write_then_report) as model:
        client = OpenAIChatClient(LLMConfig(base_url=model.base_url, model="scripted"))
        broken = MCPServer(name="gone", command="/no/such/mcp-server")
        agent = (
            AgentBuilder("ops")
            .with_chat_client(client)
            .with_mcp_server(stdio(notes, trusted=True))
            .with_mcp_server(broken)
            .build()
        )
        session = AgentSession()
        async with agent:
            events = [e async for e in agent.run("copy a to b", session)]
            (request,) = [e.request for e in events if isinstance(e, ApprovalRequestEvent)]
            assert tools_called(notes) == ["read_note"]
            resumed = [
                e async for e in agent.run([], session, AgentRunOptions([ToolApprovalResponse.approve("call_2")]))
            ]
    assert events[0] == MCPUnavailableEvent(
        server="gone", message="cannot start '/no/such/mcp-server': no such file or directory"
    )
    assert (request.name, request.arguments) == ("mcp__notes__write_note", {"name": "b.txt", "text": "hello"})
    assert request.description.startswith(
        "MCP tool 'write_note' of server 'notes' (trusted server; readOnlyHint: "
        "false, destructiveHint: false, idempotentHint: true). Write a note"
    )
    assert isinstance(resumed[-1], FinishEvent) and resumed[-1].reason is FinishReason.STOP
    assert session.messages[-1] == ChatMessage.assistant("note a | wrote 5 characters to b.txt")
    assert (notes / "b.txt").read_text() == "hello"
    assert "mcp__gone" not in str(model.requests[0].tools) and "mcp__notes__read_note" in model.requests[0].tools
