"""Who decides, and for how long: `--token`, `extend`, `grants`, `revoke`, and the run's Web UI summary."""

# ruff: noqa: F811 - the harness's fixtures are imported by name and taken as parameters

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from pathlib import Path

from temporalio.client import Client, WorkflowHistory

from signoff.agent.builder import AgentBuilder
from signoff.approval.identity import ApproverKeys
from signoff.approval.policy import ApprovalPolicy, PolicyBook
from signoff.contract import AgentRunResult, RunOptions
from signoff.tools import tool
from tests.approver_keys import write_secret
from tests.cli_harness import CLIENT, Cli, cli, cli_environ, served  # noqa: F401
from tests.helpers import Reply, ScriptedRequest, call, start_run, wait_pending


def issue(key: Path, subject: str) -> str:
    done = subprocess.run(
        [sys.executable, str(CLIENT), "token", "issue", "--sub", subject, "--key-file", str(key)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout.strip()


async def test_a_verified_tool_is_decided_by_a_signed_decision_not_a_plain_token(
    client: Client, task_queue: str, tmp_path: Path, cli: Cli
) -> None:
    """With the shared HS256 secret as SIGNOFF_APPROVER_KEY_FILE the CLI signs each decision as
    `--approver` (default $USER); a plain token (v2's way) is refused with how to sign."""
    key = tmp_path / "approver.key"
    write_secret(key)
    policies = PolicyBook(policies={"run_command": ApprovalPolicy(approvers=("alice",), verified=True)})
    alice = issue(key, "alice")
    async with served(client, task_queue, tmp_path, verifier=ApproverKeys.load(key), policies=policies):
        handle = await start_run(client, task_queue)
        await wait_pending(handle)
        unverified = await cli("approve", handle.id, "call_1")  # $USER is tester, unverified
        plain = await cli("approve", handle.id, "call_1", "--token", alice)
        outsider = await cli("approve", handle.id, "call_1", SIGNOFF_APPROVER_KEY_FILE=str(key))  # signs as tester
        still = await handle.query("pending_approvals")
        approved = await cli("approve", handle.id, "call_1", "--approver", "alice", SIGNOFF_APPROVER_KEY_FILE=str(key))
        result: AgentRunResult = await asyncio.wait_for(handle.result(), 60)
    assert unverified.code == 1 and "verified" in unverified.err, unverified
    assert plain.code == 1 and "plain identity token" in plain.err and "SIGNOFF_APPROVER_KEY_FILE" in plain.err, plain
    assert outsider.code == 1 and "'tester' is not among its approvers" in outsider.err, outsider
    assert [r["call_id"] for r in still] == ["call_1"]
    assert approved.code == 0, approved
    (record,) = result.approvals
    assert (record.approver, record.verified, record.approved) == ("alice", True, True)


async def test_extend_moves_a_waiting_calls_deadline(client: Client, task_queue: str, tmp_path: Path, cli: Cli) -> None:
    async with served(client, task_queue, tmp_path):
        handle = await start_run(client, task_queue, options=RunOptions(approval_timeout_seconds=60))
        (before,) = await wait_pending(handle)
        done = await cli("extend", handle.id, "call_1", "--seconds", "3600")
        (after,) = await handle.query("pending_approvals")
        missing = await cli("extend", handle.id, "nope", "--seconds", "60")
        await handle.signal("tool_approval", {"call_id": "call_1", "approved": False})
        await asyncio.wait_for(handle.result(), 60)
    assert done.code == 0, done
    assert done.out.startswith("call_1 now waits until ") and "(in 1h)" in done.out
    assert before["expires_at"] < after["expires_at"]
    assert missing.code == 1 and "nope" in missing.err


def command_and_read(request: ScriptedRequest) -> Reply:
    if request.round == 1:
        return Reply.tool_calls(
            [call("run_command", "call_1", command="echo one"), call("read_file", "call_r", path="/etc/hostname")]
        )
    if request.round == 2:
        return Reply.tool_calls([call("run_command", "call_2", command="echo two")])
    return Reply.text("done")


async def test_a_grant_is_listed_and_revoked_so_later_calls_wait_again(
    client: Client, task_queue: str, tmp_path: Path, cli: Cli
) -> None:
    async with served(client, task_queue, tmp_path, command_and_read):
        handle = await start_run(client, task_queue)
        await wait_pending(handle, 2)
        granted = await cli("approve", handle.id, "call_1", "--grant", "tool", "--grant-uses", "5")
        listed = await cli("grants", handle.id)
        grant_id = listed.out.split()[0]
        revoked = await cli("revoke", handle.id, grant_id)
        ended = await cli("grants", handle.id)
        await handle.execute_update("submit_tool_approval", {"call_id": "call_r", "approved": True})
        (waiting,) = await wait_pending(handle)  # the revoked grant no longer approves run_command
        await handle.signal("tool_approval", {"call_id": "call_2", "approved": False})
        await asyncio.wait_for(handle.result(), 60)
    assert granted.code == 0, granted
    assert listed.code == 0 and f"{grant_id}  live  any call of run_command; granted by tester on call_1" in listed.out
    assert "5 use(s) left" in listed.out
    assert (revoked.code, revoked.out.strip()) == (0, f"revoked {grant_id} (any call of run_command)")
    assert f"{grant_id}  ended" in ended.out
    assert waiting["call_id"] == "call_2"


async def test_run_gives_the_web_ui_a_summary(client: Client, task_queue: str, tmp_path: Path, cli: Cli) -> None:
    workflow_id = f"cli-{uuid.uuid4()}"
    long_id = f"cli-{uuid.uuid4()}"
    async with served(client, task_queue, tmp_path):
        done = await cli("run", "Delete the directory /tmp/logs", "--id", workflow_id)
        await cli("run", "Summarise\n\nthe logs " + "x" * 200, "--id", long_id)
        described = await client.get_workflow_handle(workflow_id).describe()
        long = await client.get_workflow_handle(long_id).describe()
        for run in (workflow_id, long_id):
            handle = client.get_workflow_handle(run)
            await wait_pending(handle)
            await handle.signal("tool_approval", {"call_id": "call_1", "approved": False})
            await asyncio.wait_for(handle.result(), 60)
    assert done.code == 0, done
    assert await described.static_summary() == "default: Delete the directory /tmp/logs"
    summary = await long.static_summary()
    assert summary is not None and summary.startswith("default: Summarise the logs xxx") and len(summary) == 80


def summaries(history: WorkflowHistory) -> list[str]:
    """The Timeline's labels: the summary of each activity and timer started, in order."""
    started = ("activity_task_scheduled_event_attributes", "timer_started_event_attributes")
    return [
        json.loads(event.user_metadata.summary.data)
        for event in history.events
        if event.WhichOneof("attributes") in started
    ]


async def test_activities_and_timers_carry_summaries_for_the_timeline(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with served(client, task_queue, tmp_path):
        handle = await start_run(client, task_queue, options=RunOptions(approval_timeout_seconds=600))
        await wait_pending(handle)
        await handle.signal("tool_approval", {"call_id": "call_1", "approved": True})
        await asyncio.wait_for(handle.result(), 60)
        labels = summaries(await handle.fetch_history())
    assert labels == ["model turn 1", "deadline for call_1", "run_command: echo hi", "model turn 2"], labels


@tool(
    approval=ApprovalPolicy(quorum=2, timeout_seconds=3600),
    preview=lambda path: f"--- {path}\n+++ {path}\n-old line\n+new line\x1b[2J",
)
def rewrite(path: str) -> str:
    """Rewrite a file."""
    return f"rewrote {path}"


def rewrite_once(request: ScriptedRequest) -> Reply:
    if request.round == 1:
        return Reply.tool_calls([call("rewrite", "call_w", path="notes.txt")])
    return Reply.text("done")


async def test_pending_shows_policy_votes_deadline_and_preview(
    client: Client, task_queue: str, tmp_path: Path, cli: Cli
) -> None:
    agent = AgentBuilder("rewriter").with_tool(rewrite).build()
    async with served(client, task_queue, tmp_path, rewrite_once, extra=[agent]):
        handle = await start_run(client, task_queue, agent="rewriter")
        await wait_pending(handle)
        await handle.execute_update("submit_tool_approval", {"call_id": "call_w", "approved": True, "approver": "ann"})
        done = await cli("pending", handle.id)
        await handle.signal("tool_approval", {"call_id": "call_w", "approved": False, "approver": "ann"})
        await asyncio.wait_for(handle.result(), 60)
    assert done.code == 0, done
    rows = done.out.splitlines()
    assert "    policy     approvers: anyone; quorum 2; after 3600s: deny" in rows
    assert "    votes      ann of 2" in rows
    assert any(row.startswith("    deadline   ") and ("(in 59m)" in row or "(in 1h)" in row) for row in rows)
    assert rows[rows.index("    preview    --- notes.txt") :][:4] == [
        "    preview    --- notes.txt",
        "               +++ notes.txt",
        "               -old line",
        "               +new line\\x1b[2J",
    ]
