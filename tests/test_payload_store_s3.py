"""Large payloads in S3 (`s3://bucket/prefix`): the SDK's S3 driver against a real S3 server.

moto's S3 server runs on 127.0.0.1 for the module; the driver finds it through the
standard `AWS_ENDPOINT_URL`, as it would find MinIO.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aioboto3
import pytest
from moto.server import ThreadedMotoServer
from temporalio.api.sdk.v1 import ExternalStorageReference
from temporalio.client import Client, WorkflowFailureError
from temporalio.contrib.pydantic import pydantic_data_converter

from signoff.contract import AgentRunInput
from signoff.errors import ConfigError
from signoff.runtime.connection import connect
from signoff.runtime.storage import PayloadStore, check_store, close_storage
from tests.helpers import ScriptedModelServer, agents_for, running_worker, task_failures
from tests.test_payload_store import (
    PROMPT,
    REFERENCE_TYPE,
    cli_result,
    history_of,
    read_then_answer,
    run_to_end,
    settings_for,
)

BUCKET = "signoff-payloads"
OTHER_BUCKET = "someone-elses-bucket"


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def aws_env(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    variables = {
        "AWS_ENDPOINT_URL": s3_endpoint,
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    return variables


@pytest.fixture
async def buckets(aws_env: dict[str, str]) -> None:
    async with aioboto3.Session().client("s3") as s3:
        for bucket in (BUCKET, OTHER_BUCKET):
            try:
                await s3.create_bucket(Bucket=bucket)
            except s3.exceptions.BucketAlreadyOwnedByYou:
                pass


@pytest.fixture
def model() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(read_then_answer) as server:
        yield server


@pytest.fixture
def address(client: Client) -> str:
    return client.service_client.config.target_host


async def keys(bucket: str) -> list[str]:
    async with aioboto3.Session().client("s3") as s3:
        listed = await s3.list_objects_v2(Bucket=bucket)
        return [item["Key"] for item in listed.get("Contents", [])]


async def test_large_payloads_go_to_s3_under_the_prefix_and_history_keeps_references(
    buckets: None,
    aws_env: dict[str, str],
    address: str,
    task_queue: str,
    model: ScriptedModelServer,
    tmp_path: Path,
) -> None:
    url = f"s3://{BUCKET}/runs/{task_queue}"
    client = await connect(settings_for(address, url))
    try:
        handle = await run_to_end(client, task_queue, model, tmp_path)
        result = await handle.result()
    finally:
        await close_storage(client.data_converter)

    assert result.messages[0].content == PROMPT
    size, payloads = await history_of(handle)
    references = [json.loads(data) for meta, data in payloads if meta.get("messageType") == REFERENCE_TYPE]
    assert len(references) >= 3 and {r["driverName"] for r in references} == {"aws.s3driver"}
    stored = await keys(BUCKET)
    for reference in references:
        claim = reference["claimData"]
        assert claim["bucket"] == BUCKET and claim["key"].startswith("v0/ns/default/")
        assert f"runs/{task_queue}/{claim['key']}" in stored  # the object lives under the prefix
    print(f"[measure] S3: history {size} bytes, {len(references)} references, {len(stored)} objects")

    done = await cli_result(address, handle.id, {"SIGNOFF_PAYLOAD_STORE": url, **aws_env})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["messages"][0]["content"] == PROMPT


async def test_reference_to_another_bucket_is_not_followed(
    buckets: None, client: Client, address: str, task_queue: str, model: ScriptedModelServer, tmp_path: Path
) -> None:
    # An object the worker's credentials can read, holding a valid run input: followed, it would run.
    payload = pydantic_data_converter.payload_converter.to_payload(AgentRunInput(prompt="run someone else's task"))
    data = payload.SerializeToString()
    key = f"v0/d/sha256/{hashlib.sha256(data).hexdigest()}"
    async with aioboto3.Session().client("s3") as s3:
        await s3.put_object(Bucket=OTHER_BUCKET, Key=key, Body=data)
    digest = hashlib.sha256(data).hexdigest()
    claim = {"bucket": OTHER_BUCKET, "key": key, "hash_algorithm": "sha256", "hash_value": digest}
    cause = await crafted_start(client, address, task_queue, model, tmp_path, claim)
    assert "payload-store reference that cannot be resolved" in str(cause)
    assert model.request_count == 0


async def crafted_start(
    client: Client, address: str, task_queue: str, model: ScriptedModelServer, tmp_path: Path, claim: dict[str, str]
) -> BaseException | None:
    """Start a run whose input is an S3 reference with `claim`, to a worker of this store: why it failed.

    Its history must hold no failed workflow task (a reference never wedges a run)."""
    worker_client = await connect(settings_for(address, f"s3://{BUCKET}/runs"))
    try:
        async with running_worker(worker_client, task_queue, model, agents_for(tmp_path)):
            crafted = ExternalStorageReference(driver_name="aws.s3driver", claim_data=claim)
            handle = await client.start_workflow("AgentRun", crafted, id=f"crafted-{task_queue}", task_queue=task_queue)
            with pytest.raises(WorkflowFailureError) as failure:
                await asyncio.wait_for(handle.result(), 20)
            assert await task_failures(handle) == []
    finally:
        await close_storage(worker_client.data_converter)
    return failure.value.cause


async def test_startup_check_names_an_unreachable_bucket(buckets: None, s3_endpoint: str) -> None:
    await check_store(PayloadStore(f"s3://{BUCKET}/runs"))
    with pytest.raises(ConfigError, match=f"s3://no-such-bucket/runs is not reachable \\(endpoint {s3_endpoint}\\)"):
        await check_store(PayloadStore("s3://no-such-bucket/runs"))


async def test_secret_key_is_read_from_the_file_a_compose_secret_mounts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from signoff.runtime.s3store import Aioboto3Client

    secret = tmp_path / "minio_password"
    secret.write_text("from-the-file\n")
    secret.chmod(0o600)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "signoff")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "from-the-environment")
    monkeypatch.setenv("SIGNOFF_S3_SECRET_ACCESS_KEY_FILE", str(secret))
    session: Any = Aioboto3Client()._session  # its stubs say get_credentials() is sync; it returns a coroutine
    credentials = await (await session.get_credentials()).get_frozen_credentials()
    assert (credentials.access_key, credentials.secret_key) == ("signoff", "from-the-file")

    monkeypatch.setenv("SIGNOFF_S3_SECRET_ACCESS_KEY_FILE", str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match=r"SIGNOFF_S3_SECRET_ACCESS_KEY_FILE=.*cannot read it"):
        Aioboto3Client()


async def test_a_reference_to_a_missing_object_of_the_store_fails_the_start_instead_of_wedging_it(
    buckets: None, client: Client, address: str, task_queue: str, model: ScriptedModelServer, tmp_path: Path
) -> None:
    digest = "b" * 64  # well formed, inside the store's bucket and prefix, and nothing there
    claim = {"bucket": BUCKET, "key": f"v0/d/sha256/{digest}", "hash_algorithm": "sha256", "hash_value": digest}
    cause = await crafted_start(client, address, task_queue, model, tmp_path, claim)
    assert "payload-store reference that cannot be resolved" in str(cause)
    assert model.request_count == 0
