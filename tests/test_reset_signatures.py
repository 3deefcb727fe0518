"""`temporal workflow reset` and a signed approval (issue 27, finding 4): one signature, one run.

The attack, with stock tooling and genuine workers: a verified run is approved by alice and its
command runs; it is reset (the real `temporal` CLI) to before the approval; the same token is
sent again. Before, the command ran a second time. Now the reset run's request is another
request instance (`binding.request` is derived from the run id, which a reset changes, also for
the events it replays), so the token is refused when it arrives, by update and by signal; and
were it let through, the tool activity would find it spent. The command ran once.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle

from signoff.approval.identity import ApproverKeys
from signoff.approval.policy import PolicyBook
from signoff.runtime.devserver import find_temporal_binary
from signoff.runtime.replay import as_its_own_run
from signoff.testing import replay_histories
from tests.approver_keys import signed, write_secret
from tests.governance import refusal, wait_event
from tests.helpers import (
    Reply,
    ScriptedModelServer,
    ScriptedRequest,
    agents_for,
    call,
    running_worker,
    start_run,
    wait_pending,
)

POLICY = PolicyBook.parse({"run_command": {"verified": True, "approvers": ["alice"]}})


async def temporal(client: Client, *args: str) -> str:
    """The real `temporal` CLI against the test's server."""
    address = client.service_client.config.target_host
    process = await asyncio.create_subprocess_exec(
        str(find_temporal_binary()),
        *args,
        "--address",
        address,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, (args, out.decode(), err.decode())
    return out.decode()


def counting(count: Path) -> Any:
    def script(request: ScriptedRequest) -> Reply:
        if request.round == 1:
            return Reply.tool_calls([call("run_command", "call_1", command=f"echo x >> {count}")])
        return Reply.text("done")

    return script


def ran(count: Path) -> int:
    return len(count.read_text().splitlines()) if count.exists() else 0


async def reset_point(handle: WorkflowHandle[Any, Any], where: str) -> list[str]:
    """The reset's flags: to the run's first workflow task (the model asked again), or to the
    task after an ignored signal (the request, asked before it, replayed)."""
    if where == "first-task":
        return ["--type", "FirstWorkflowTask"]
    events = (await handle.fetch_history()).events
    signalled = next(e.event_id for e in events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED)
    completed = next(
        e.event_id
        for e in events
        if e.event_id > signalled and e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
    )
    return ["--event-id", str(completed)]


@pytest.mark.parametrize("where", ["first-task", "after-the-request"])
async def test_a_reset_run_is_not_approved_again_by_the_token_that_approved_it(
    client: Client, task_queue: str, tmp_path: Path, where: str
) -> None:
    keys, count = tmp_path / "approvers.key", tmp_path / "count"
    write_secret(keys)
    with ScriptedModelServer(counting(count)) as model:
        async with running_worker(
            client, task_queue, model, agents_for(tmp_path), policies=POLICY, verifier=ApproverKeys.load(keys)
        ):
            handle = await start_run(client, task_queue)
            (first,) = await wait_pending(handle)
            await handle.signal("tool_approval", {"call_id": "no-such-call", "approved": True})  # a task between
            await wait_event(handle, "decision_ignored")
            decision = signed(keys, first, "alice")
            await handle.execute_update("submit_tool_approval", decision)
            assert (await handle.result()).text == "done" and ran(count) == 1
            await temporal(
                client, "workflow", "reset", "-w", handle.id, *await reset_point(handle, where), "--reason", "again"
            )
            reset = client.get_workflow_handle(handle.id)
            (again,) = await wait_pending(reset)
            refused = await refusal(reset.execute_update("submit_tool_approval", decision))
            await reset.signal("tool_approval", decision)
            ignored = await wait_event(
                reset, "decision_ignored", count=2
            )  # the first signal (reapplied or replayed), ours
            (still,) = await reset.query("pending_approvals")
            history = await reset.fetch_history()
            await reset.terminate()
    assert ran(count) == 1  # the command ran once
    assert again["binding"]["request"] != first["binding"]["request"]  # another request instance
    same = ("workflow_id", "chain_id", "call_id", "tool", "arguments_digest")
    assert {k: again["binding"][k] for k in same} == {k: first["binding"][k] for k in same}
    assert f"its request is {first['binding']['request']!r}, not {again['binding']['request']!r}" in refused
    assert "its request is" in ignored[-1]["reason"] and still["call_id"] == "call_1"
    assert as_its_own_run(history).run_id != history.run_id  # a reset run: it replays with its own run id
    replay_histories(history)
