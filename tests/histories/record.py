"""Record the histories that tests/test_replay.py replays.

    python -m tests.histories.record

Rerun after a deliberate change of the workflow's history shape; a replay failure
of an old history otherwise means the change breaks runs already in flight.
"""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from pathlib import Path

from temporalio.client import Client, WorkflowHandle

from signoff.contract import RunOptions
from tests.conftest import start_dev_server
from tests.helpers import Reply, ScriptedModelServer, ScriptedRequest, agents_for, assert_eventually, call, running_worker, start_run, wait_pending

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

    cycled = await start_run(client, queue, "cycle", options=RunOptions(max_rounds=8))
    first = client.get_workflow_handle(cycled.id, run_id=cycled.result_run_id)
    latest = client.get_workflow_handle(cycled.id)

    async def paused() -> None:
        assert await latest.query("pending_approvals")

    await assert_eventually(paused, 30)
    await latest.execute_update("submit_tool_approval", {"call_id": "*", "approved": True})
    await cycled.result()
    history = await first.fetch_history()
    (HERE / "continued_as_new.json").write_text(history.to_json())
    print(f"recorded continued_as_new: {len(history.events)} events")


async def main() -> None:
    env = await start_dev_server("--dynamic-config-value", "limit.historyCount.suggestContinueAsNew=40")
    try:
        with ScriptedModelServer(script) as model, tempfile.TemporaryDirectory() as workspace:
            queue = f"record-{uuid.uuid4()}"
            async with running_worker(env.client, queue, model, agents_for(Path(workspace))):
                await record_all(env.client, queue)
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
