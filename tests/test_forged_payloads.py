"""Payloads a stranger forges cannot wedge a run (issue 16, finding 2; signoff/runtime/guard.py).

The SDK resolves every payload of an activation before the workflow sees it, so a
reference it cannot resolve used to fail the workflow task for ever. Here a plain
client (no payload store) sends each kind of such payload, raw, to a real worker with a
file store and to one without any store: the start fails as `InvalidInput`, the signal
is recorded as `decision_ignored` and the run still takes a good decision after it, the
update is rejected without a retry tag or a traceback.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.common import RawValue

from signoff.config.environment import Environment
from signoff.contract import AgentRunResult
from signoff.runtime.connection import ConnectionSettings, connect
from signoff.runtime.filestore import FILE_DRIVER_NAME
from tests.helpers import (
    Reply,
    ScriptedModelServer,
    agents_for,
    call,
    running_worker,
    start_run,
    task_failures,
    wait_pending,
)
from tests.waiting import assert_eventually

REFERENCE = {"encoding": b"json/protobuf", "messageType": b"temporal.api.sdk.v1.ExternalStorageReference"}


def reference(driver: str, **claim: str) -> Payload:
    data = json.dumps({"driverName": driver, "claimData": claim}).encode()
    return Payload(metadata=REFERENCE, data=data)


FORGED = {
    "a digest that is not in the store": reference(FILE_DRIVER_NAME, hash_algorithm="sha256", hash_value="a" * 64),
    "an unknown driver": reference("s3-of-someone-else", bucket="b", key="k"),
    "a reference that is not one": Payload(metadata=REFERENCE, data=b"{not json"),
    "a legacy reference that is not one": Payload(metadata={"encoding": b"json/external-storage-reference"}, data=b"?"),
    "a payload marked as an encoded reference": Payload(
        metadata={"encoding": b"json/plain", "__temporal_external_storage_reference": b"true"}, data=b"{}"
    ),
}


@pytest.fixture(params=["file store", "no store"])
async def worker_client(request: pytest.FixtureRequest, client: Client, tmp_path: Path) -> Client:
    if request.param == "no store":
        return client
    env = {
        "TEMPORAL_ADDRESS": client.service_client.config.target_host,
        "SIGNOFF_PAYLOAD_STORE": (tmp_path / "store").as_uri(),
    }
    return await connect(ConnectionSettings.load(Environment(env)))


def one_command(request: object) -> Reply:
    if getattr(request, "round", 1) == 1:
        return Reply.tool_calls([call("run_command", "call_1", command="echo ok")])
    return Reply.text("done")


@asynccontextmanager
async def waiting_run(
    worker_client: Client, client: Client, task_queue: str, path: Path
) -> AsyncIterator[WorkflowHandle]:
    with ScriptedModelServer(one_command) as model:
        async with running_worker(worker_client, task_queue, model, agents_for(path)):
            handle = await start_run(client, task_queue)
            await wait_pending(handle)
            yield handle


@pytest.mark.parametrize("forged", FORGED, ids=list(FORGED))
async def test_a_forged_signal_payload_is_recorded_as_ignored_and_the_run_goes_on(
    worker_client: Client, client: Client, task_queue: str, tmp_path: Path, forged: str
) -> None:
    async with waiting_run(worker_client, client, task_queue, tmp_path) as handle:
        await handle.signal("tool_approval", RawValue(FORGED[forged]))

        async def ignored() -> str:
            [event] = [e for e in await handle.query("events") if e["type"] == "decision_ignored"]
            return str(event["reason"])

        reason = await assert_eventually(ignored)
        await handle.signal("tool_approval", {"call_id": "call_1", "approved": True})
        result: AgentRunResult = await handle.result()
        assert await task_failures(handle) == []
    assert "cannot be resolved" in reason or "undecodable" in reason
    assert result.text == "done" and result.approvals[0].approved


@pytest.mark.parametrize("forged", FORGED, ids=list(FORGED))
async def test_a_forged_update_payload_is_rejected_without_a_retry_or_a_traceback(
    worker_client: Client, client: Client, task_queue: str, tmp_path: Path, forged: str
) -> None:
    async with waiting_run(worker_client, client, task_queue, tmp_path) as handle:
        with pytest.raises(WorkflowUpdateFailedError) as failure:
            await handle.execute_update("submit_tool_approval", RawValue(FORGED[forged]))
        assert len(await handle.query("pending_approvals")) == 1
        assert await task_failures(handle) == []
        await handle.terminate()
    cause = failure.value.cause
    assert "cannot be resolved" in str(cause) or "undecodable" in str(cause)
    assert "pending call ids: call_1" in str(cause)
    assert cause.non_retryable and cause.type == "DecisionRejected"  # type: ignore[attr-defined]
    assert cause.failure is not None and cause.failure.stack_trace == ""  # type: ignore[attr-defined]


@pytest.mark.parametrize("forged", FORGED, ids=list(FORGED))
async def test_a_forged_start_payload_fails_the_run_as_invalid_input(
    worker_client: Client, client: Client, task_queue: str, tmp_path: Path, forged: str
) -> None:
    with ScriptedModelServer([]) as model:
        async with running_worker(worker_client, task_queue, model, agents_for(tmp_path)):
            handle = await client.start_workflow(
                "AgentRun", RawValue(FORGED[forged]), id=f"forged-{task_queue}", task_queue=task_queue
            )
            with pytest.raises(WorkflowFailureError) as failure:
                await handle.result()
            assert await task_failures(handle) == []
    cause = failure.value.cause
    assert cause.type == "InvalidInput" and cause.non_retryable  # type: ignore[attr-defined]
    assert "cannot be resolved" in str(cause) or "could not be decoded" in str(cause)
    assert model.request_count == 0
