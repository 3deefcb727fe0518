# ruff: noqa: F811 - the harness's fixtures are imported by name and taken as parameters
"""Decisions reach a run that is paused or flooded with updates (issue 16, finding 7).

Temporal's Workflow Pause (`temporal workflow pause`, Server 1.30+; the session's dev
server enables it as the embedded one does) refuses queries and updates while signals
are accepted and timers keep running; a run with 10 updates in flight refuses an 11th.
`signoff pending` still lists such a run from its search attributes, `signoff approve`
sends its decision by signal, and the rule docs/fleets.md states decides a deadline that
passed during the pause: decisions that reached the run while it was paused are applied
first when it goes on; calls nobody decided then time out.
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import timedelta
from pathlib import Path

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import UpdateWorkflowExecutionLifecycleStage
from temporalio.api.update.v1 import Input, Meta, Request, WaitPolicy
from temporalio.api.workflowservice.v1 import UpdateWorkflowExecutionRequest
from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError, RPCStatusCode

from signoff.contract import AgentRunResult, RunOptions
from signoff.runtime.devserver import find_temporal_binary
from tests.cli_harness import Cli, cli, cli_environ, served  # noqa: F401
from tests.helpers import start_run, task_failures, wait_pending

PROBE_WAIT = timedelta(seconds=0.5)
"""How long a probe update waits for an answer before it counts as admitted and in flight."""

DEADLINE = 3.0


async def temporal(client: Client, *args: str) -> str:
    """Run the `temporal` CLI against the session's server (without blocking the worker)."""
    process = await asyncio.create_subprocess_exec(
        str(find_temporal_binary()),
        *args,
        "--address",
        client.service_client.config.target_host,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await process.communicate()
    assert process.returncode == 0, out.decode()
    return out.decode()


async def pause(client: Client, handle: WorkflowHandle) -> None:
    await temporal(client, "workflow", "pause", "--workflow-id", handle.id, "--reason", "incident")


async def unpause(client: Client, handle: WorkflowHandle) -> None:
    await temporal(client, "workflow", "unpause", "--workflow-id", handle.id)


async def test_a_paused_run_is_listed_and_decided_by_signal_and_the_decision_beats_the_deadline_it_outlived(
    client: Client, task_queue: str, tmp_path: Path, cli: Cli
) -> None:
    deadline = 3 * DEADLINE  # the CLI's three commands before the pause must not outlast it on a loaded machine
    async with served(client, task_queue, tmp_path):
        handle = await start_run(client, task_queue, options=RunOptions(approval_timeout_seconds=deadline))
        await wait_pending(handle)
        passes = time.monotonic() + deadline + 1
        assert (await cli("pending", handle.id)).code == 0  # the operator is shown call_1
        await pause(client, handle)
        listed = await cli("pending")
        one = await cli("pending", handle.id, "--json")
        approved = await cli("approve", handle.id, "call_1")
        await asyncio.sleep(passes - time.monotonic())  # the deadline passes while the run is paused
        await unpause(client, handle)
        result: AgentRunResult = await handle.result()
        assert await task_failures(handle) == []
    assert listed.code == 0 and handle.id in listed.out and "run_command" in listed.out and "paused" in listed.out
    [row] = json.loads(one.out)
    assert row["workflow_id"] == handle.id and row["name"] == "run_command" and row["paused"] is True
    assert approved.code == 0, approved.err
    assert "paused" in approved.out and "Sent by signal instead: approve call_1" in approved.out
    [record] = result.approvals
    assert record.approved and not record.timed_out and record.approver == "tester"
    assert result.text == "saw: exit code: 0\nhi\n"


async def test_a_call_nobody_decided_during_a_pause_times_out_when_the_run_goes_on(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with served(client, task_queue, tmp_path):
        handle = await start_run(client, task_queue, options=RunOptions(approval_timeout_seconds=DEADLINE))
        await wait_pending(handle)
        await pause(client, handle)
        await asyncio.sleep(DEADLINE + 1)
        await unpause(client, handle)
        result: AgentRunResult = await handle.result()
    [record] = result.approvals
    assert record.timed_out and not record.approved and record.reason == "No decision within 3s"


async def test_a_paused_run_refuses_a_decision_for_a_call_the_operator_never_saw(
    client: Client, task_queue: str, tmp_path: Path, cli: Cli
) -> None:
    async with served(client, task_queue, tmp_path):
        handle = await start_run(client, task_queue)
        await wait_pending(handle)
        await pause(client, handle)
        refused = await cli("approve", handle.id, "call_1")
        await unpause(client, handle)
        assert len(await handle.query("pending_approvals")) == 1
        await handle.terminate()
    assert refused.code == 2 and "paused" in refused.err and "so it cannot show its pending calls" in refused.err
    assert "Traceback" not in refused.err


async def refused_update(client: Client, handle: WorkflowHandle, timeout: float = 30.0) -> RPCError:
    """What the server answers an update past its in-flight limit: updates are sent once each
    (without the SDK's retries) until one is refused. One sent before the limit is reached
    is admitted and waits for a worker; its answer times out and it counts as one in flight
    (a decision on no call, ignored once a worker is back), so the next one is sent."""
    args = await client.data_converter.encode_wrapper([{"call_id": "nope", "approved": True}])
    deadline = time.monotonic() + timeout
    n = 0
    while True:
        request = UpdateWorkflowExecutionRequest(
            namespace=client.namespace,
            workflow_execution=WorkflowExecution(workflow_id=handle.id),
            request=Request(
                meta=Meta(update_id=f"probe-{n}", identity="test"), input=Input(name="submit_tool_approval", args=args)
            ),
            wait_policy=WaitPolicy(
                lifecycle_stage=UpdateWorkflowExecutionLifecycleStage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ACCEPTED
            ),
        )
        try:
            await client.workflow_service.update_workflow_execution(request, retry=False, timeout=PROBE_WAIT)
        except RPCError as exc:
            if exc.status == RPCStatusCode.RESOURCE_EXHAUSTED:
                return exc
            if exc.status not in (RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.CANCELLED):
                raise
        if time.monotonic() > deadline:
            raise AssertionError(f"the server took {n + 1} more updates in flight and refused none")
        n += 1


async def test_with_ten_updates_in_flight_a_decision_still_lands_by_signal(
    client: Client, task_queue: str, tmp_path: Path, cli: Cli
) -> None:
    async with served(client, task_queue, tmp_path):
        handle = await start_run(client, task_queue)
        await wait_pending(handle)
        assert (await cli("pending", handle.id)).code == 0
    # No worker now: ten updates wait in flight, and the server refuses more.
    flood = [
        asyncio.ensure_future(
            handle.execute_update("submit_tool_approval", {"call_id": "nope", "approved": True}, id=f"flood-{n}")
        )
        for n in range(10)
    ]
    refusal = await refused_update(client, handle)
    approved = await cli("approve", handle.id, "call_1", "--json")
    assert approved.code == 0, approved.err
    async with served(client, task_queue, tmp_path):
        result: AgentRunResult = await handle.result()
        await asyncio.gather(*flood, return_exceptions=True)
    assert refusal.status == RPCStatusCode.RESOURCE_EXHAUSTED and "in-flight updates" in refusal.message
    assert approved.code == 0, approved.err
    assert json.loads(approved.out)["sent_by_signal"] is True
    assert result.approvals[0].approved and result.approvals[0].approver == "tester"
