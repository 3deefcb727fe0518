"""An MCP server that asks a question in the middle of a call (protocol 2026-07-28 `input_required`):
the run parks with a request of kind `input`, survives its worker, and is answered by a person.

The server is `tests/mcp_server.py` (the `mcp` SDK's `MCPServer`): `erase_note` asks "Really
delete <name>?" with a schema (`confirm`: boolean, required; `why`: string) before it deletes,
and seals its `requestState` with a key every process of it shares.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import httpx
from temporalio.client import Client

from signoff.approval.requests import InputAsked, ToolApprovalResponse
from signoff.contract import SA_STATUS, STATUS_AWAITING_INPUT
from signoff.tools.mcp.sessions import MCPSessions
from tests.cli_harness import cli_env, finish, spawn
from tests.governance import refusal, turns
from tests.helpers import ScriptedModelServer, assert_eventually, start_run, wait_pending
from tests.mcp_helpers import SERVER, calls, mcp_call, stdio, tools_called
from tests.processes import READY, REPO, Processes, clean_env, free_port, kill_group

ERASE = "mcp__notes__erase_note"


def configured(tmp_path: Path, procs: Processes) -> Path:
    """`mcp.json` with the test server as `notes` (one note, `a.txt`); returns its notes directory."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text("old")
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


async def asked(handle: Any) -> dict[str, Any]:
    """The run's one pending request, once it is the server's question (kind `input`)."""

    async def check() -> dict[str, Any]:
        (request,) = await handle.query("pending_approvals")
        assert request.get("kind") == "input", request
        return dict(request)

    return await assert_eventually(check, timeout=30)


async def test_a_question_parks_the_run_survives_its_worker_and_is_answered_once_from_the_cli(
    client: Client, task_queue: str, procs: Processes, tmp_path: Path
) -> None:
    notes = configured(tmp_path, procs)
    with ScriptedModelServer(turns([mcp_call("erase_note", "call_1", name="a.txt")])) as model:
        env = worker_env(client, task_queue, model, tmp_path)
        first = procs.worker("worker-1", env)
        await first.wait_for_output(READY)
        handle = await start_run(client, task_queue, "erase a.txt")
        (approval,) = await wait_pending(handle, timeout=20)
        assert (approval["name"], approval["kind"]) == (ERASE, "approval")
        await handle.execute_update("submit_tool_approval", ToolApprovalResponse.approve("call_1", approver="alice"))

        question = await asked(handle)
        assert question["message"] == "Really delete a.txt?"
        assert question["schema"]["required"] == ["confirm"]
        assert question["binding"] is None or question["binding"]["state_digest"]
        status = await handle.query("status")
        assert status["status"] == STATUS_AWAITING_INPUT
        described = await handle.describe()
        assert described.search_attributes.get(SA_STATUS) == [STATUS_AWAITING_INPUT]
        assert tools_called(notes) == ["erase_note_asked"] and (notes / "a.txt").exists()

        first.kill()  # the question outlives the worker that asked it
        second = procs.worker("worker-2", env)
        await second.wait_for_output(READY)
        environ = cli_env(client.service_client.config.target_host, task_queue, tmp_path / "state")

        shown = await finish(await spawn(environ, "pending", handle.id))
        assert shown.code == 0, shown
        assert "Really delete a.txt?" in shown.out and "signoff answer RUN CALL" in shown.out, shown.out

        wrong = await finish(await spawn(environ, "answer", handle.id, "call_1", "--json", '{"confirm": "yes"}'))
        assert wrong.code == 2, wrong
        assert "confirm: 'yes' is not of type 'boolean'" in wrong.err and "nothing answered" in wrong.err

        done = await finish(
            await spawn(environ, "answer", handle.id, "call_1", "--json", '{"confirm": true, "why": "stale"}')
        )
        assert done.code == 0, done
        result = await handle.result()

    tool_message = result.messages[2]
    assert tool_message.content == (
        "deleted a.txt (stale)\n[signoff: the MCP server asked 'Really delete a.txt?'; tester answered it]"
    )
    assert not (notes / "a.txt").exists()
    assert tools_called(notes) == ["erase_note_asked", "erase_note"]  # asked once, ran once
    trail = await handle.query("audit")
    outcomes = [(r["outcome"], r["approver"]) for r in trail["records"]]
    assert outcomes == [("approved", "alice"), ("answered", "tester")]
    assert trail["records"][1]["answer_digest"] and trail["records"][1]["state_digest"]


async def test_a_wrong_answer_is_refused_by_the_run_with_the_schemas_message_and_a_decline_reaches_the_model(
    client: Client, task_queue: str, procs: Processes, tmp_path: Path
) -> None:
    notes = configured(tmp_path, procs)
    with ScriptedModelServer(turns([mcp_call("erase_note", "call_1", name="a.txt")])) as model:
        worker = procs.worker("worker", worker_env(client, task_queue, model, tmp_path))
        await worker.wait_for_output(READY)
        handle = await start_run(client, task_queue, "erase a.txt")
        await wait_pending(handle, timeout=20)
        await handle.execute_update("submit_tool_approval", ToolApprovalResponse.approve("call_1"))
        await asked(handle)

        why = await refusal(
            handle.execute_update("submit_tool_approval", ToolApprovalResponse.answering("call_1", {"why": 1}))
        )
        assert "'confirm' is a required property" in why and "call_1" in why
        why = await refusal(handle.execute_update("submit_tool_approval", ToolApprovalResponse.approve("call_1")))
        assert "waits for an answer to its MCP server's question" in why

        declined = ToolApprovalResponse.declining("call_1", approver="bob")
        await handle.execute_update("submit_tool_approval", declined)
        result = await handle.result()

    assert result.messages[2].content == (
        "kept a.txt: the person answered decline\n"
        "[signoff: the MCP server asked 'Really delete a.txt?'; bob declined to answer]"
    )
    assert (notes / "a.txt").exists()
    assert tools_called(notes) == ["erase_note_asked", "erase_note"]


async def test_a_tampered_request_state_is_refused_by_the_server_and_nothing_is_deleted(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text("old")
    server = stdio(notes)
    sessions = MCPSessions()
    try:
        first = await sessions.call(server, "erase_note", {"name": "a.txt"})
        assert first.input is not None and first.input.state, first
        question: InputAsked = first.input
        assert (question.key, question.message) == ("confirm", "Really delete a.txt?")
        tampered = (question.state or "")[:-4] + "AAAA"
        answer = {"confirm": {"action": "accept", "content": {"confirm": True}}}
        result = await sessions.call(server, "erase_note", {"name": "a.txt"}, answers=answer, state=tampered)
        assert result.is_error and "requestState" in result.content, result
        other = await sessions.call(server, "erase_note", {"name": "b.txt"}, answers=answer, state=question.state)
        assert other.is_error, other  # the state is bound to the call it was minted for
    finally:
        await sessions.aclose()
    assert (notes / "a.txt").exists()
    assert "erase_note" not in tools_called(notes)


async def test_the_inbox_shows_the_servers_question_as_a_form_and_posts_the_answer(
    client: Client, task_queue: str, procs: Processes, tmp_path: Path
) -> None:
    notes = configured(tmp_path, procs)
    with ScriptedModelServer(turns([mcp_call("erase_note", "call_1", name="a.txt")])) as model:
        worker = procs.worker("worker", worker_env(client, task_queue, model, tmp_path))
        port = free_port()
        inbox = procs.start(
            "inbox",
            [sys.executable, str(REPO / "client.py"), "inbox", "--port", str(port)],
            clean_env(
                TEMPORAL_ADDRESS=client.service_client.config.target_host,
                SIGNOFF_TASK_QUEUE=task_queue,
                SIGNOFF_INBOX_TRUSTED_PROXIES="127.0.0.1/32",
            ),
        )
        await worker.wait_for_output(READY)
        await inbox.wait_for_output("signoff: inbox on")
        handle = await start_run(client, task_queue, "erase a.txt")
        await wait_pending(handle, timeout=20)
        await handle.execute_update("submit_tool_approval", ToolApprovalResponse.approve("call_1"))
        question = await asked(handle)
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", headers={"X-Forwarded-User": "carol"}, timeout=30
        ) as carol:
            page = await carol.get(f"/call?run={handle.id}&id=call_1")
            assert page.status_code == 200, page.text
            assert "Really delete a.txt?" in page.text
            assert 'name="type.confirm" value="boolean"' in page.text and 'name="field.why"' in page.text
            token = re.search(r'name="csrf" value="([0-9a-f]{64})"', page.text)
            assert token is not None
            form = {
                "csrf": token[1],
                "run": handle.id,
                "id": "call_1",
                "digest": question["arguments_digest"],
                "action": "answer",
                "type.confirm": "boolean",
                "type.why": "string",
                "field.confirm": "true",
                "field.why": "from the inbox",
            }
            answered = await carol.post("/call/decide", data=form)
            assert answered.status_code == 200 and "answered" in answered.text, answered.text
        result = await handle.result()

    assert result.messages[2].content == (
        "deleted a.txt (from the inbox)\n[signoff: the MCP server asked 'Really delete a.txt?'; carol answered it]"
    )
    assert tools_called(notes) == ["erase_note_asked", "erase_note"]
    assert [r.outcome for r in result.approvals] == ["approved", "answered"]
    assert result.approvals[1].approver == "carol"


async def test_under_a_verified_policy_the_answer_is_signed_and_the_worker_sends_only_a_signed_one(
    client: Client, task_queue: str, procs: Processes, tmp_path: Path
) -> None:
    notes = configured(tmp_path, procs)
    environ = cli_env(client.service_client.config.target_host, task_queue, tmp_path / "state")
    made = await finish(
        await spawn(
            environ,
            "keys",
            "new",
            "--sub",
            "alice",
            "--out",
            str(tmp_path / "alice.pem"),
            "--add-to",
            str(tmp_path / "jwks.json"),
        )
    )
    assert made.code == 0, made
    alice = {
        **environ,
        "SIGNOFF_APPROVER_KEY_FILE": str(tmp_path / "alice.pem"),
        "SIGNOFF_APPROVER_KID": json.loads(made.out)["kid"],
    }
    (tmp_path / "policies.json").write_text(json.dumps({ERASE: {"verified": True, "approvers": ["alice"]}}))
    with ScriptedModelServer(turns([mcp_call("erase_note", "call_1", name="a.txt")])) as model:
        env = {
            **worker_env(client, task_queue, model, tmp_path),
            "SIGNOFF_POLICY_FILE": str(tmp_path / "policies.json"),
            "SIGNOFF_APPROVER_KEYS": str(tmp_path / "jwks.json"),
        }
        worker = procs.worker("worker", env)
        await worker.wait_for_output(READY)
        handle = await start_run(client, task_queue, "erase a.txt")
        await wait_pending(handle, timeout=20)
        approved = await finish(await spawn(alice, "approve", handle.id, "call_1"))
        assert approved.code == 0, approved
        question = await asked(handle)
        assert question["binding"]["state_digest"]

        unsigned = ToolApprovalResponse.answering("call_1", {"confirm": True}, approver="alice")
        why = await refusal(handle.execute_update("submit_tool_approval", unsigned))
        assert "needs a verified approver" in why, why

        answered = await finish(await spawn(alice, "answer", handle.id, "call_1", "--json", '{"confirm": true}'))
        assert answered.code == 0, answered
        result = await handle.result()

    assert result.messages[2].content.startswith("deleted a.txt"), result.messages[2].content
    assert [(r.outcome, r.approver, r.verified) for r in result.approvals] == [
        ("approved", "alice", True),
        ("answered", "alice", True),
    ]
    assert tools_called(notes) == ["erase_note_asked", "erase_note"]
