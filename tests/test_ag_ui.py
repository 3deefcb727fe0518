"""AG-UI 1.0 on the inbox's server (`POST /ag-ui`), driven by the official TypeScript client.

`@ag-ui/client` (tests/ts/ag_ui.ts, from npm: the test runs `npm ci` in tests/ts when its
packages are not there) talks to a real `signoff inbox` process in front of a real worker and
dev server: the model's text streams in several deltas, a gated call ends the AG-UI run with
an interrupt (id = the call's id), a second client of the thread sees the same interrupt, a
resume approves it for the inbox's user, the tool runs once, and the second client's resume
finds the call settled the same way; an unknown interrupt id is `RUN_ERROR`. Without npm on
the machine the TypeScript part is skipped; the Python checks of bad input run regardless.
"""

from __future__ import annotations

import json
import shutil
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.client import Client

from signoff.contract import AgentRunResult
from signoff.testing import Reply, ScriptedRequest
from tests.cli_harness import cli_env, served
from tests.processes import REPO, Processes, free_port
from tests.test_typescript_client import TS, run


def chat(request: ScriptedRequest) -> Reply:
    """`run: CMD` asks for run_command (gated); after a tool, report it; else a long echo in pieces."""
    last = request.last
    if last.role == "tool":
        return Reply.text(f"ran: {last.content}")
    if (last.content or "").startswith("run: "):
        return Reply.tool_calls([("run_command", {"command": (last.content or "")[5:]})])
    return Reply(content=f"you said {last.content}; " + "and so on " * 10, chunks=12, pause=0.02)


async def start_inbox(procs: Processes, client: Client, queue: str) -> str:
    port = free_port()
    env = cli_env(client.service_client.config.target_host, queue)
    inbox = procs.start(
        "inbox", [sys.executable, str(REPO / "client.py"), "inbox", "--local-user", "alice", "--port", str(port)], env
    )
    await inbox.wait_for_output("signoff: inbox on")
    return f"http://127.0.0.1:{port}"


@pytest.mark.skipif(shutil.which("npm") is None or shutil.which("node") is None, reason="npm is not installed")
async def test_the_ag_ui_client_streams_text_and_approves_a_call_through_an_interrupt(
    client: Client, task_queue: str, tmp_path: Path, procs: Processes
) -> None:
    if not (TS / "node_modules" / "@ag-ui" / "client").is_dir():  # a fresh checkout
        await run("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error", timeout=180)
    await run(str(TS / "node_modules" / ".bin" / "tsc"), "-p", ".")
    thread = f"t-{uuid.uuid4().hex[:8]}"
    async with served(client, task_queue, tmp_path, chat):
        url = await start_inbox(procs, client, task_queue)
        out = await run("node", str(TS / "build" / "ag_ui.js"), f"{url}/ag-ui", thread)
        handle = client.get_workflow_handle(f"ag-ui-{thread}")
        await handle.execute_update("end_session", {})
        result: AgentRunResult = await client.get_workflow_handle(handle.id, result_type=AgentRunResult).result()
    seen = json.loads(out.strip().splitlines()[-1])
    hello, parked, reconnected = seen["hello"], seen["parked"], seen["reconnected"]
    assert hello["outcome"] == "success" and len(hello["deltas"]) > 1, hello
    assert "".join(hello["deltas"]) == result.messages[1].content == hello["text"]
    assert hello["events"][0] == "RUN_STARTED" and hello["events"][-1] == "RUN_FINISHED"
    assert "TEXT_MESSAGE_START" in hello["events"] and "TEXT_MESSAGE_END" in hello["events"]
    (interrupt,) = parked["interrupts"]
    call = (result.messages[3].tool_calls or [])[0]
    assert parked["outcome"] == "interrupt" and interrupt["id"] == interrupt["toolCallId"] == call.id
    assert interrupt["metadata"]["tool"] == "run_command" and len(interrupt["metadata"]["arguments_digest"]) == 64
    assert {"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"} <= set(parked["events"])
    assert reconnected["outcome"] == "interrupt" and [i["id"] for i in reconnected["interrupts"]] == [call.id]
    resumed, second, unknown = seen["resumed"], seen["second"], seen["unknown"]
    assert resumed["outcome"] == "success" and not resumed["errors"], resumed
    assert "TOOL_CALL_RESULT" in resumed["events"] and "".join(resumed["deltas"]).startswith("ran: exit code: 0")
    assert second["outcome"] == "success" and not second["errors"], second
    assert unknown["errors"] and "call_nope" in unknown["errors"][0] and unknown["outcome"] == ""
    tool_messages = [m for m in result.messages if m.role == "tool"]
    assert len(tool_messages) == 1 and "hi" in (tool_messages[0].content or "")
    (approval,) = result.approvals
    assert approval.call_id == call.id and approval.approved and approval.approver == "alice"


async def test_the_ag_ui_endpoint_refuses_what_is_not_a_run_agent_input(
    client: Client, task_queue: str, tmp_path: Path, procs: Processes
) -> None:
    async with served(client, task_queue, tmp_path, chat):
        url = await start_inbox(procs, client, task_queue)
        async with httpx.AsyncClient(base_url=url) as http:
            not_json = await http.post("/ag-ui", content=b"threadId=x", headers={"content-type": "text/plain"})
            bad = await http.post("/ag-ui", json={"threadId": "x"})
            other_site = await http.post(
                "/ag-ui",
                json={"threadId": "x", "runId": "r", "messages": []},
                headers={"origin": "https://evil.example"},
            )
            no_session = await http.post(
                "/ag-ui", json={"threadId": f"t-{uuid.uuid4().hex}", "runId": "r", "messages": []}
            )
    assert not_json.status_code == 415
    assert bad.status_code == 422 and "runId" in bad.text
    assert other_site.status_code == 403
    assert no_session.status_code == 200 and '"RUN_ERROR"' in no_session.text and "no session yet" in no_session.text


def events_of(body: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: ")]


async def test_a_resume_that_does_not_fit_the_call_is_a_run_error_and_decides_nothing(
    client: Client, task_queue: str, tmp_path: Path, procs: Processes
) -> None:
    thread = f"t-{uuid.uuid4().hex[:8]}"
    base = {"threadId": thread, "messages": [{"id": "u1", "role": "user", "content": "run: echo hi"}]}
    async with served(client, task_queue, tmp_path, chat):
        url = await start_inbox(procs, client, task_queue)
        async with httpx.AsyncClient(base_url=url, timeout=60) as http:
            parked = events_of((await http.post("/ag-ui", json={**base, "runId": "r1"})).text)
            (interrupt,) = parked[-1]["outcome"]["interrupts"]

            async def resume(payload: Any) -> list[dict[str, Any]]:
                entry = {"interruptId": interrupt["id"], "status": "resolved", "payload": payload}
                return events_of((await http.post("/ag-ui", json={**base, "runId": "r2", "resume": [entry]})).text)

            changed = await resume({"approved": True, "arguments_digest": "0" * 64})
            no_answer = await resume({"reason": "hm"})
            edited_denial = await resume({"approved": False, "arguments": {"command": "ls"}})
            pending = await client.get_workflow_handle(f"ag-ui-{thread}").query("pending_approvals")
            denied = await resume({"approved": False, "reason": "not now"})
            await client.get_workflow_handle(f"ag-ui-{thread}").execute_update("end_session", {})
    assert parked[0]["type"] == "RUN_STARTED" and parked[-1]["outcome"]["type"] == "interrupt"
    assert interrupt["responseSchema"]["required"] == ["approved"]
    for refused, said in (
        (changed, "changed since they were shown"),
        (no_answer, "payload.approved"),
        (edited_denial, "with an approval"),
    ):
        assert [e["type"] for e in refused] == ["RUN_STARTED", "RUN_ERROR"] and said in refused[-1]["message"], refused
    assert [r["call_id"] for r in pending] == [interrupt["id"]]  # nothing was decided
    assert denied[-1]["type"] == "RUN_FINISHED" and denied[-1]["outcome"]["type"] == "success", denied
    assert "TOOL_CALL_RESULT" in [e["type"] for e in denied]
