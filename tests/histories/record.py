"""Record the histories that tests/test_replay.py replays.

    python -m tests.histories.record            # all of them
    python -m tests.histories.record verified   # only these (the others stay as committed)

The v2 shapes (`approved` ... `timeout_grant`) were recorded before signed decisions and
sealed continue-as-new, and are kept: they are what runs in flight at an upgrade replay.

Rerun after a deliberate change of the workflow's history shape; a replay failure
of an old history otherwise means the change breaks runs already in flight.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
import uuid
from collections.abc import Collection
from pathlib import Path

from temporalio.api.common.v1 import Payload
from temporalio.client import Client, WorkflowHandle, WorkflowHistory, WorkflowUpdateFailedError
from temporalio.common import RawValue

from signoff.activities.notify import NotifyConfig
from signoff.agent import AgentBuilder
from signoff.contract import RunOptions
from signoff.identity import ApproverKeys, issue_token
from signoff.messages import ToolCall
from signoff.policy import ApprovalPolicy, OnTimeout
from signoff.runtime.devserver import find_temporal_binary
from signoff.tools.mcp import MCPServer
from tests.approver_keys import signed, write_secret
from tests.conftest import start_dev_server
from tests.governance import deploy, ops_agent, restart, turns, wait_event
from tests.helpers import (
    Reply,
    ScriptedModelServer,
    ScriptedRequest,
    agents_for,
    assert_eventually,
    call,
    running_worker,
    start_run,
    wait_pending,
)
from tests.mcp_helpers import mcp_call, stdio
from tests.receiver import Receiver

HERE = Path(__file__).parent


def script(request: ScriptedRequest) -> Reply:
    if request.last.role == "user":
        return Reply.tool_calls([call("run_command", "call_1", command="echo hi"), call("list_dir", "call_2")])
    if request.round <= 4 and "cycle" in (request.messages[0].content or ""):
        return Reply.tool_calls([call("list_dir", f"call_r{request.round}")])
    return Reply.text("done")


async def save(handle: WorkflowHandle, name: str) -> None:
    await handle.result()
    history = await handle.fetch_history()
    (HERE / f"{name}.json").write_text(history.to_json())
    print(f"recorded {name}: {len(history.events)} events")


async def record_governance(client: Client, names: Collection[str], workspace: Path) -> None:
    """`verified`: approvals with tokens (the identify local activity), one refused.
    `timeout_grant`: a grant used, a reminder, a deadline approving, notices (one channel failing).
    `signed`: v3's signed decisions (bound tokens; the marker of the patch that needs them),
    one plain token refused, a grant signed and used."""
    key = workspace / "approvers.key"
    write_secret(key)
    verified = ApprovalPolicy(verified=True, approvers=("group:sre",))
    hurried = ApprovalPolicy(timeout_seconds=2, on_timeout=OnTimeout.APPROVE, remind_after_seconds=(1,))
    script = turns([deploy("call_1")], [deploy("call_2", "api"), restart("call_r")])
    with ScriptedModelServer(script) as model, Receiver() as channel, Receiver(status=500) as broken:
        notify = NotifyConfig(urls=(channel.url, broken.url), secret=b"history-secret", retry_seconds=1)
        queue = f"record-{uuid.uuid4()}"
        agents = {"ops": ops_agent(deploy=verified, restart=hurried)}
        async with running_worker(client, queue, model, agents, verifier=ApproverKeys.load(key), notify=notify):
            if "verified" in names:
                run = await start_run(client, queue, "deploy", agent="ops")
                await wait_pending(run)
                with contextlib.suppress(WorkflowUpdateFailedError):  # refused after verification: recorded
                    await run.execute_update("submit_tool_approval", approval("call_1", "not.a.token"))
                await run.execute_update("submit_tool_approval", approval("call_1", issue_token(key, "alice", ["sre"])))
                await wait_pending(run, 2)
                await run.execute_update("submit_tool_approval", approval("*", issue_token(key, "bob", ["sre"])))
                await save(run, "verified")
            if "signed" in names:
                await record_signed(client, queue, key)
            if "timeout_grant" in names:
                run = await start_run(client, queue, "grant", agent="ops")
                await wait_pending(run)
                grant = approval("call_1", issue_token(key, "alice", ["sre"])) | {"grant": {"match": "tool"}}
                await run.execute_update("submit_tool_approval", grant)
                await wait_event(run, "notification_failed", 1)
                await save(run, "timeout_grant")


async def record_signed(client: Client, queue: str, key: Path) -> None:
    # Signed decisions name the workflow id, and tests/test_replay.py replays each history
    # under its file's name: so the run is started under that name.
    run = await start_run(client, queue, "deploy", agent="ops", id="signed")
    (first,) = await wait_pending(run)
    with contextlib.suppress(WorkflowUpdateFailedError):  # a plain token: refused, recorded
        await run.execute_update("submit_tool_approval", approval("call_1", issue_token(key, "alice", ["sre"])))
    grant = {"match": "tool", "ttl_seconds": 3600}
    await run.execute_update("submit_tool_approval", signed(key, first, "alice", "sre", grant=grant))
    await save(run, "signed")  # call_2 runs on the grant; the restart call's deadline approves it


async def record_mcp(client: Client, workspace: Path) -> None:
    """`mcp`: a server that cannot start (an event), a trusted read run at once, a write approved."""
    notes = workspace / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text("note a")
    broken = MCPServer(name="broken", command="/no/such/mcp-server")
    agent = AgentBuilder("notes").with_mcp_servers([broken, stdio(notes, trusted=True)]).build()
    rounds = turns([mcp_call("read_note", "call_1", name="a.txt"), mcp_call("write_note", "call_2", name="b.txt",
                                                                            text="hi")])  # fmt: skip
    with ScriptedModelServer(rounds) as model:
        queue = f"record-{uuid.uuid4()}"
        async with running_worker(client, queue, model, {"notes": agent}):
            run = await start_run(client, queue, "copy", agent="notes")
            await wait_pending(run)
            await run.execute_update("submit_tool_approval", {"call_id": "call_2", "approved": True})
            await save(run, "mcp")


def approval(call_id: str, token: str) -> dict[str, object]:
    return {"call_id": call_id, "approved": True, "token": token}


async def cycle(client: Client, queue: str) -> WorkflowHistory:
    """A run of list_dir rounds, approved once it waits; the history of its first run."""
    cycled = await start_run(client, queue, "cycle", options=RunOptions(max_rounds=8))
    first = client.get_workflow_handle(cycled.id, run_id=cycled.result_run_id)
    latest = client.get_workflow_handle(cycled.id)

    async def paused() -> None:
        assert await latest.query("pending_approvals")

    await assert_eventually(paused, 30)
    await latest.execute_update("submit_tool_approval", {"call_id": "*", "approved": True})
    await cycled.result()
    return await first.fetch_history()


async def record_sealed(client: Client, queue: str) -> None:
    """`sealed_continued_as_new`: a run sealing the state it continues as new with;
    `continued_run`: the run it starts, checking that seal before it adopts the state."""
    history = await cycle(client, queue)
    (HERE / "sealed_continued_as_new.json").write_text(history.to_json())
    (ended,) = [e for e in history.events if e.HasField("workflow_execution_continued_as_new_event_attributes")]
    second = ended.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
    continued = await client.get_workflow_handle(history.workflow_id, run_id=second).fetch_history()
    (HERE / "continued_run.json").write_text(continued.to_json())
    print(f"recorded sealed_continued_as_new ({len(history.events)} events), continued_run "
          f"({len(continued.events)} events)")


async def record_all(client: Client, queue: str) -> None:
    approved = await start_run(client, queue, "approve")
    await wait_pending(approved)
    await approved.execute_update("submit_tool_approval", {"call_id": "call_1", "approved": True, "approver": "a"})
    await save(approved, "approved")

    denied = await start_run(client, queue, "deny")
    await wait_pending(denied)
    await denied.signal("tool_approval", {"call_id": "garbage"})
    await denied.signal("tool_approval", {"call_id": "*", "approved": False, "reason": "no"})
    await save(denied, "denied")

    timed_out = await start_run(client, queue, "wait", options=RunOptions(approval_timeout_seconds=1))
    await save(timed_out, "timed_out")

    history = await cycle(client, queue)
    (HERE / "continued_as_new.json").write_text(history.to_json())
    print(f"recorded continued_as_new: {len(history.events)} events")


def strangers(request: ScriptedRequest) -> Reply:
    """A model whose first answer has ids twice, `*`, NaN arguments and more calls than the per-turn limit."""
    if request.round > 1:
        return Reply.text("done")
    odd = [ToolCall(id="dup", name="run_command", arguments='{"command": "echo 1"}'),
           ToolCall(id="dup", name="run_command", arguments='{"command": "echo 2"}'),
           ToolCall(id="*", name="list_dir", arguments="{}"),
           ToolCall(id="nan", name="run_command", arguments='{"command": NaN}')]  # fmt: skip
    return Reply.tool_calls(odd + [ToolCall(id=f"c{i}", name="list_dir", arguments="{}") for i in range(70)], chunks=1)


async def record_adversarial(client: Client, names: Collection[str], workspace: Path) -> None:
    """`strangers`: a hostile model answer and forged decisions (an unresolvable reference, a flood).
    `paused_deadline`: a deadline that passes while the run is paused, and a decision sent meanwhile."""
    queue = f"record-{uuid.uuid4()}"
    with ScriptedModelServer(strangers) as model:
        async with running_worker(client, queue, model, agents_for(workspace)):
            if "strangers" in names:
                run = await start_run(client, queue, "strangers")
                pending = await wait_pending(run, 2)
                forged = Payload(metadata={"encoding": b"json/protobuf",
                                           "messageType": b"temporal.api.sdk.v1.ExternalStorageReference"},
                                 data=b'{"driverName": "nobody", "claimData": {}}')  # fmt: skip
                await run.signal("tool_approval", RawValue(forged))
                await run.signal("tool_approval", [{"call_id": "x", "approved": True}] * 101)
                await run.signal("tool_approval", {"call_id": pending[0]["call_id"], "approved": True})
                await run.execute_update("submit_tool_approval", {"call_id": "*", "approved": False})
                await save(run, "strangers")
    with ScriptedModelServer(script) as model:
        async with running_worker(client, queue, model, agents_for(workspace)):
            if "paused_deadline" in names:
                run = await start_run(client, queue, "pause", options=RunOptions(approval_timeout_seconds=2))
                await wait_pending(run)
                await temporal_cli(client, "workflow", "pause", "--workflow-id", run.id)
                await asyncio.sleep(3)
                await run.signal("tool_approval", {"call_id": "call_1", "approved": True})
                await temporal_cli(client, "workflow", "unpause", "--workflow-id", run.id)
                await save(run, "paused_deadline")


async def temporal_cli(client: Client, *args: str) -> None:
    process = await asyncio.create_subprocess_exec(
        str(find_temporal_binary()), *args, "--address", client.service_client.config.target_host
    )
    assert await process.wait() == 0


ORIGINAL = ("approved", "denied", "timed_out", "continued_as_new")
SEALED = ("sealed_continued_as_new", "continued_run")
GOVERNANCE = ("verified", "timeout_grant", "signed")
MCP = ("mcp",)
ADVERSARIAL = ("strangers", "paused_deadline")


async def main(names: Collection[str]) -> None:
    with tempfile.TemporaryDirectory() as workspace:
        if set(names) & set(ORIGINAL):
            env = await start_dev_server("--dynamic-config-value", "limit.historyCount.suggestContinueAsNew=40")
            try:
                with ScriptedModelServer(script) as model:
                    queue = f"record-{uuid.uuid4()}"
                    async with running_worker(env.client, queue, model, agents_for(Path(workspace))):
                        await record_all(env.client, queue)
            finally:
                await env.shutdown()
        if set(names) & set(SEALED):  # a threshold the first run crosses (at 40, `continued_as_new` did not)
            env = await start_dev_server("--dynamic-config-value", "limit.historyCount.suggestContinueAsNew=20")
            try:
                with ScriptedModelServer(script) as model:
                    queue = f"record-{uuid.uuid4()}"
                    agents = agents_for(Path(workspace))
                    async with running_worker(env.client, queue, model, agents, state_key=b"s" * 48):
                        await record_sealed(env.client, queue)
            finally:
                await env.shutdown()
        if set(names) & set(GOVERNANCE + ADVERSARIAL):
            env = await start_dev_server()  # no early continue-as-new: these runs are longer
            try:
                await record_governance(env.client, names, Path(workspace))
                await record_adversarial(env.client, names, Path(workspace))
            finally:
                await env.shutdown()
        if "mcp" in names:
            env = await start_dev_server()
            try:
                await record_mcp(env.client, Path(workspace))
            finally:
                await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:] or ORIGINAL + SEALED + GOVERNANCE + MCP + ADVERSARIAL))
