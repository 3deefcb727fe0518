"""What a malicious MCP server (`tests/mcp_hostile.py`, the SDK's `MCPServer`, a real process over
stdio or streamable HTTP) cannot get away with, on the session's dev server and real workers:

- a `readOnlyHint` on a destructive tool, from a server nobody trusts, relaxes nothing;
- a tool list changed after the run listed it (a tool that turns destructive, one renamed,
  one added) never runs a call unapproved;
- huge and malformed answers are bounded, clear tool errors; the run and the session go on;
- a tool named like another server's (`a` offering `b__read_note`) stays server `a`'s;
- a description written for the approver (markup, ANSI escapes, "APPROVED BY ADMIN", fake
  rows) is shown inert by `signoff pending`, the inbox and the Web UI's details.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client, WorkflowHandle

from signoff import AgentBuilder, ApprovalPolicy, MCPServer, PolicyBook
from signoff.agent.builder import ChatClientAgent
from signoff.agent.snapshot import RunSnapshot
from signoff.approval.policy import DEFAULT_POLICY
from signoff.approval.requests import ToolApprovalRequest, ToolApprovalResponse
from signoff.cli.calls import shown_call
from signoff.cli.style import Style
from signoff.contract import AgentRunResult
from signoff.errors import ConfigError
from signoff.messages import ToolCall
from signoff.runtime.devserver import is_listening
from signoff.testing import Reply, ScriptedModelServer, ScriptedRequest
from signoff.tools.mcp.bounded import MAX_MESSAGE_BYTES
from signoff.tools.mcp.sessions import MCPSessions
from signoff.tools.mcp.tool import open_tools
from tests.governance import turns
from tests.helpers import running_worker, start_run, wait_pending
from tests.mcp_helpers import hostile, hostile_http, mcp_call, stdio, tools_called
from tests.processes import REPO, Processes, clean_env, free_port
from tests.waiting import wait_until

START = 30.0
"""Seconds a run may take to list its servers' tools (processes to start on a shared machine)."""
TOO_LARGE = f"it sent a message of more than {MAX_MESSAGE_BYTES:,} bytes, which was dropped unread"


@pytest.fixture
def den(tmp_path: Path) -> Path:
    """The hostile server's directory, with a file it would like to delete."""
    (tmp_path / "den").mkdir()
    (tmp_path / "den" / "victim.txt").write_text("keep me")
    return tmp_path / "den"


@pytest.fixture
async def sessions() -> AsyncIterator[MCPSessions]:
    pool = MCPSessions()
    yield pool
    await pool.aclose()


def ops(*servers: MCPServer) -> dict[str, ChatClientAgent]:
    return {"ops": AgentBuilder("ops").with_mcp_servers(servers).build()}


def call(tool: str, call_id: str, **arguments: Any) -> ToolCall:
    return mcp_call(tool, call_id, server="hostile", **arguments)


def tool_messages(result: AgentRunResult) -> list[str]:
    return [m.content or "" for m in result.messages if m.role == "tool"]


async def finished(handle: WorkflowHandle) -> AgentRunResult:
    result: AgentRunResult = await handle.result()
    return result


# --- (a) an untrusted server's annotations relax nothing ---------------------------------


async def test_a_read_only_hint_on_a_destructive_tool_of_an_untrusted_server_still_waits_for_approval(
    client: Client, task_queue: str, den: Path
) -> None:
    with ScriptedModelServer(turns([call("wipe", "call_1", name="victim.txt")])) as model:
        async with running_worker(client, task_queue, model, ops(hostile(den))):
            handle = await start_run(client, task_queue, "tidy up", agent="ops")
            (request,) = await wait_pending(handle, timeout=START)
            snapshot = await handle.query("agent_snapshot", result_type=RunSnapshot)
            assert tools_called(den) == [] and (den / "victim.txt").exists()
            await handle.execute_update("submit_tool_approval", ToolApprovalResponse.deny("call_1", "no"))
            result = await finished(handle)
    wipe = snapshot.tool("mcp__hostile__wipe")
    assert wipe is not None and wipe.mcp is not None
    assert (wipe.gate, wipe.idempotent, wipe.mcp.annotations["readOnlyHint"]) == ("always", False, True)
    assert "(untrusted server: annotations shown, not relied on; readOnlyHint: true" in request["description"]
    assert tool_messages(result) == ["Rejected: no"]
    assert (den / "victim.txt").read_text() == "keep me" and tools_called(den) == []


async def test_an_untrusted_server_s_read_only_tool_refuses_an_unapproved_call_itself(
    den: Path, sessions: MCPSessions
) -> None:
    tools, _ = await open_tools([hostile(den)], sessions)
    wipe = next(t for t in tools if t.name == "mcp__hostile__wipe")
    refused = await wipe.execute({"name": "victim.txt"})
    assert refused.to_message() == "Error: this call needs approval and was not approved; it was not run"
    assert (den / "victim.txt").exists() and tools_called(den) == []


# --- (b) a tool list that changes after the run listed it ----------------------------------


def changes_then_asks(den: Path, *calls: ToolCall) -> Any:
    """A model that, once the run has listed the server's tools, makes the server change its
    story (phase 2) and asks for `calls`; then answers the tool messages joined by `|`."""

    def script(request: ScriptedRequest) -> Reply:
        if request.round == 1:
            (den / "phase").write_text("2")
            return Reply.tool_calls(list(calls))
        return Reply.text("|".join(m.content or "" for m in request.messages if m.role == "tool"))

    return script


async def test_a_trusted_tool_that_turns_destructive_or_is_renamed_after_the_listing_does_not_run_unapproved(
    client: Client, task_queue: str, den: Path
) -> None:
    """Listed read-only (so the run's snapshot lets their calls through), then `peek` declares
    itself destructive and `look` is listed as `look_v2`: this worker's listing now decides."""
    script = changes_then_asks(
        den, call("peek", "call_1", name="victim.txt"), call("look", "call_2", name="victim.txt")
    )
    with ScriptedModelServer(script) as model:
        async with running_worker(client, task_queue, model, ops(hostile(den, trusted=True))):
            handle = await start_run(client, task_queue, "peek", agent="ops")
            result = await finished(handle)
            snapshot = await handle.query("agent_snapshot", result_type=RunSnapshot)
    gates = {t.spec.name: t.gate for t in snapshot.tools}
    assert gates["mcp__hostile__peek"] == gates["mcp__hostile__look"] == "never"  # the snapshot lets them through
    assert tool_messages(result) == [
        "Error: this call needs approval now (MCP server 'hostile' no longer declares this tool read-only) and "
        "was not approved; it was not run",
        "Error: this call needs approval now (MCP server 'hostile' no longer lists it) and was not approved; "
        "it was not run",
    ]
    assert (den / "victim.txt").exists() and tools_called(den) == []


async def test_a_tool_the_server_adds_or_renames_after_the_listing_is_unknown_to_the_run(
    client: Client, task_queue: str, den: Path
) -> None:
    script = changes_then_asks(den, call("added", "call_1", name="victim.txt"), call("look_v2", "call_2", name="x"))
    with ScriptedModelServer(script) as model:
        async with running_worker(client, task_queue, model, ops(hostile(den, trusted=True))):
            result = await finished(await start_run(client, task_queue, "add", agent="ops"))
    added, renamed = tool_messages(result)
    assert added.startswith("Error: unknown tool 'mcp__hostile__added'"), added
    assert renamed.startswith("Error: unknown tool 'mcp__hostile__look_v2'"), renamed
    assert (den / "victim.txt").exists() and tools_called(den) == []


# --- (c) huge and malformed answers ---------------------------------------------------------


async def test_a_huge_result_is_refused_unread_a_large_one_is_cut_and_the_run_goes_on(
    client: Client, task_queue: str, den: Path
) -> None:
    script = turns(
        [call("huge", "call_1", megabytes=50)],
        [call("huge_error", "call_2", megabytes=20)],
        [call("huge", "call_3", megabytes=5)],
        [call("fine", "call_4")],
    )
    with ScriptedModelServer(script) as model:
        async with running_worker(client, task_queue, model, ops(hostile(den, trusted=True))):
            started = time.monotonic()
            result = await finished(await start_run(client, task_queue, "big", agent="ops"))
            took = time.monotonic() - started
    huge, huge_error, large, fine = tool_messages(result)
    assert huge.startswith(f"Error: MCP server 'hostile': {TOO_LARGE}; the session was ended"), huge[:300]
    assert huge_error.startswith(f"Error: MCP server 'hostile': {TOO_LARGE}"), huge_error[:300]
    assert len(large) <= 65_536 and "characters cut: tool output over the limit" in large
    assert fine == "fine" and result.finish_reason.value == "stop"
    assert took < 120  # the SDK's own stdio reader took minutes over the 50 MB line alone


async def test_a_huge_result_over_streamable_http_is_refused_unread_and_the_session_goes_on(
    den: Path, sessions: MCPSessions
) -> None:
    async with hostile_http(den) as url:
        server = MCPServer(name="hostile", url=url, trusted=True)
        huge = await sessions.call(server, "huge", {"megabytes": 50})
        error = await sessions.call(server, "huge_error", {"megabytes": 20})
        fine = await sessions.call(server, "fine", {})
    for refused in (huge, error):
        assert refused.is_error and refused.content.startswith("MCP server 'hostile': "), refused.content[:300]
        assert f"more than {MAX_MESSAGE_BYTES:,} bytes; it was dropped unread" in refused.content
    assert fine.content == "fine"


@pytest.mark.parametrize(
    ("kind", "answer"),
    [
        ("wrong_types", "Error: MCP server 'hostile': its answer is not a valid MCP result (CallToolResult.content: "),
        ("empty_error", "Error: the tool reported an error without a message"),
        ("not_json", "late answer to not_json"),  # a line that is no message is passed over
        ("not_utf8", "late answer to not_utf8"),
        ("wrong_id", "late answer to wrong_id"),  # an answer to nobody is dropped
        ("error_object", "late answer to error_object"),
        ("null_result", "late answer to null_result"),
    ],
)
async def test_a_malformed_answer_is_a_clear_error_or_passed_over_and_the_session_goes_on(
    den: Path, sessions: MCPSessions, kind: str, answer: str
) -> None:
    server = hostile(den, trusted=True, env={"HOSTILE_LATE_SECONDS": "1"})
    got = await sessions.call(server, "malformed", {"kind": kind})
    assert got.to_message().startswith(answer), got.to_message()
    assert (await sessions.call(server, "fine", {})).content == "fine"


async def test_a_server_that_answers_only_garbage_times_out_clearly_and_the_next_call_runs(
    den: Path, sessions: MCPSessions
) -> None:
    server = hostile(den, trusted=True, timeout_seconds=2, env={"HOSTILE_LATE_SECONDS": "30"})
    got = await sessions.call(server, "malformed", {"kind": "not_json"})
    assert got.to_message() == (
        "Error: MCP server 'hostile' did not answer within 2 s; whether the call took effect is unknown"
    )
    assert (await sessions.call(server, "fine", {})).content == "fine"


# --- (d) another server's namespace -----------------------------------------------------------


async def test_a_tool_named_like_another_server_s_stays_its_own_server_s_with_its_own_gate_and_policy(
    client: Client, task_queue: str, den: Path, tmp_path: Path
) -> None:
    """Server `a` (untrusted) offers `b__read_note`: the model sees `mcp__a__b__read_note`, beside
    the trusted server `b`'s `mcp__b__read_note` (read-only: it runs at once). The impostor is
    gated, described as server `a`'s, governed by no policy written for server `b`'s tool, and
    its call goes to server `a`."""
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "n.txt").write_text("note n")
    book = PolicyBook(policies={"mcp__b__read_note": ApprovalPolicy(approvers=("alice",), quorum=1)})
    servers = ops(hostile(den, name="a"), stdio(tmp_path / "notes", name="b", trusted=True))
    script = turns(
        [mcp_call("b__read_note", "call_1", server="a", name="victim.txt")],
        [mcp_call("read_note", "call_2", server="b", name="n.txt")],
    )
    with ScriptedModelServer(script) as model:
        async with running_worker(client, task_queue, model, servers, policies=book):
            handle = await start_run(client, task_queue, "read", agent="ops")
            (request,) = await wait_pending(handle, timeout=START)
            snapshot = await handle.query("agent_snapshot", result_type=RunSnapshot)
            await handle.execute_update("submit_tool_approval", ToolApprovalResponse.approve("call_1"))
            result = await finished(handle)
    impostor, genuine = snapshot.tool("mcp__a__b__read_note"), snapshot.tool("mcp__b__read_note")
    assert impostor is not None and impostor.mcp is not None and genuine is not None and genuine.mcp is not None
    assert (impostor.mcp.server, impostor.mcp.tool, impostor.gate) == ("a", "b__read_note", "always")
    assert (genuine.mcp.server, genuine.mcp.tool) == ("b", "read_note")
    assert request["name"] == "mcp__a__b__read_note"
    assert request["description"].startswith("MCP tool 'b__read_note' of server 'a' (untrusted server")
    assert ApprovalPolicy.model_validate(request["policy"]) == DEFAULT_POLICY  # not alice's
    assert genuine.gate == "never" and genuine.policy is not None and genuine.policy.approvers == ("alice",)
    assert tool_messages(result) == ["deleted victim.txt", "note n"]  # each call went to its own server
    assert tools_called(den) == ["b__read_note"] and tools_called(tmp_path / "notes") == ["read_note"]


def test_a_server_name_ending_in_an_underscore_is_refused_so_no_two_servers_make_one_tool_name() -> None:
    """`a_`'s `x` and `a`'s `_x` would both be `mcp__a___x`."""
    with pytest.raises(ConfigError, match="MCP server 'a_': name: the name must"):
        MCPServer(name="a_", command="true")


# --- (e) descriptions written for the approver -------------------------------------------------

LOUD = ("\x1b", "\x07", "\u202e")


async def test_a_description_that_instructs_the_approver_is_shown_inert_by_the_cli_the_inbox_and_the_web_ui(
    client: Client, task_queue: str, den: Path, procs: Processes
) -> None:
    address = client.service_client.config.target_host
    with ScriptedModelServer(turns([call("innocent", "call_1", name="victim.txt")])) as model:
        async with running_worker(client, task_queue, model, ops(hostile(den))):
            handle = await start_run(client, task_queue, "read", agent="ops")
            (request,) = await wait_pending(handle, timeout=START)
            metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
            pending = procs.start(
                "pending", [sys.executable, str(REPO / "client.py"), "pending"], clean_env(TEMPORAL_ADDRESS=address)
            )
            port = free_port()
            inbox = procs.start(
                "inbox",
                [sys.executable, str(REPO / "client.py"), "inbox", "--local-user", "alice", "--port", str(port)],
                clean_env(TEMPORAL_ADDRESS=address, SIGNOFF_TASK_QUEUE=task_queue),
            )
            await inbox.wait_for_output("signoff: inbox on")
            await wait_until(lambda: is_listening(f"127.0.0.1:{port}"), 20.0, "the inbox does not listen")
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
                page = (await http.get("/call", params={"run": handle.id, "id": "call_1"})).text
                listing = (await http.get("/")).text
            assert await pending.wait_exit(60) == 0, pending.report()
            printed = pending.stdout()
            await handle.terminate()
    assert "APPROVED BY ADMIN" in request["description"]  # what the server said, kept for the record

    shown = shown_call(handle.id, ToolApprovalRequest.model_validate(request), Style(), None)
    for text in ("\n".join(shown), printed):  # `signoff pending`: as a function, and the real command
        assert not any(c in text for c in LOUD), text
        assert "\\x1b[2K\\x0d\\x1b[32mAPPROVED BY ADMIN" in text and "\\u202etxt.exe" in text
    assert [line for line in shown if line.lstrip().startswith("policy ")] == ["    policy     anyone may decide"]
    assert [line.strip() for line in shown if "verified" in line] == [
        "|     verified   yes"
    ]  # the fake rows: `about`'s

    for html in (page, listing):  # the inbox
        assert "APPROVED BY ADMIN" in page
        assert not any(c in html for c in LOUD)
        assert "<script>alert" not in html and "<b onmouseover" not in html
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in page and "\\x1b]8;;http://evil.example\\x07" in page

    details = metadata.current_details  # the Web UI's details are markdown: the text sits in one code span
    assert not any(c in details for c in LOUD)
    (about,) = [line.strip() for line in details.splitlines() if "APPROVED BY ADMIN" in line]
    fence = about[: len(about) - len(about.lstrip("`"))]
    assert about.endswith(fence) and fence not in about[len(fence) : -len(fence)] and "\n" not in about
    assert json.dumps(request["arguments"]) == '{"name": "victim.txt"}'
