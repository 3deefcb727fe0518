"""Large payloads live in the file store; history keeps a reference (signoff/runtime/storage.py).

Real runs on the session's dev server, with a worker and a client whose data converter
has the store (threshold lowered so a test-sized payload counts as large).
"""

from __future__ import annotations

import asyncio
import base64
import json
import random
import stat
import string
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.history.v1 import History
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle

from signoff.config.environment import Environment
from signoff.errors import ConfigError
from signoff.runtime.connection import ConnectionSettings, connect
from signoff.runtime.filestore import FILE_DRIVER_NAME
from signoff.runtime.storage import PayloadStore, check_store
from tests.helpers import (
    Reply,
    ScriptedModelServer,
    ScriptedRequest,
    agents_for,
    call,
    running_worker,
    start_run,
)
from tests.processes import REPO, clean_env

THRESHOLD = 16 * 1024
REFERENCE_TYPE = b"temporal.api.sdk.v1.ExternalStorageReference"


def text(size: int, seed: int) -> str:
    """`size` characters that do not repeat (so nothing is smaller than it looks)."""
    return "".join(random.Random(seed).choices(string.ascii_letters, k=size))


PROMPT = text(64 * 1024, 1)
FILE_CONTENT = text(40 * 1024, 2)


def read_then_answer(request: ScriptedRequest) -> Reply:
    """Round 1: read big.txt (a large tool output); round 2: answer with its length."""
    if request.round == 1:
        return Reply.tool_calls([call("read_file", "call_1", path="big.txt")])
    return Reply.text(f"read {len(request.last.content or '')} characters")


def settings_for(address: str, store: Path | str | None, threshold: int = THRESHOLD) -> ConnectionSettings:
    env = {"TEMPORAL_ADDRESS": address, "SIGNOFF_PAYLOAD_THRESHOLD": str(threshold)}
    if store is not None:
        env["SIGNOFF_PAYLOAD_STORE"] = store if isinstance(store, str) else store.as_uri()
    return ConnectionSettings.load(Environment(env))


@pytest.fixture
def address(client: Client) -> str:
    return client.service_client.config.target_host


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def model() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(read_then_answer) as server:
        yield server


async def run_to_end(client: Client, task_queue: str, model: ScriptedModelServer, workspace: Path) -> WorkflowHandle:
    (workspace / "big.txt").write_text(FILE_CONTENT)
    async with running_worker(client, task_queue, model, agents_for(workspace)):
        handle = await start_run(client, task_queue, PROMPT)
        await asyncio.wait_for(handle.result(), 30)
    return handle


def payloads_in(node: Any) -> Iterator[dict[str, Any]]:
    """Every payload (a dict with `metadata` and `data`) in a history as JSON."""
    if isinstance(node, dict):
        if "metadata" in node and "data" in node:
            yield node
        for value in node.values():
            yield from payloads_in(value)
    elif isinstance(node, list):
        for value in node:
            yield from payloads_in(value)


def decoded(payload: dict[str, Any]) -> tuple[dict[str, bytes], bytes]:
    return {k: base64.b64decode(v) for k, v in payload["metadata"].items()}, base64.b64decode(payload["data"])


async def history_of(handle: WorkflowHandle) -> tuple[int, list[tuple[dict[str, bytes], bytes]]]:
    history = await handle.fetch_history()
    size = History(events=history.events).ByteSize()
    return size, [decoded(p) for p in payloads_in(history.to_json_dict())]


async def test_large_payloads_go_to_the_store_and_history_keeps_references(
    address: str, task_queue: str, model: ScriptedModelServer, store: Path, tmp_path: Path
) -> None:
    client = await connect(settings_for(address, store))
    handle = await run_to_end(client, task_queue, model, tmp_path)
    result = await handle.result()

    # The client and the worker read back what was stored.
    assert result.messages[0].content == PROMPT
    assert result.text == f"read {len(FILE_CONTENT)} characters"
    assert [m.content for m in model.requests[0].messages if m.role == "user"] == [PROMPT]
    # History holds references, no payload at or over the threshold.
    size, payloads = await history_of(handle)
    references = [(meta, data) for meta, data in payloads if meta.get("messageType") == REFERENCE_TYPE]
    assert max(len(data) for _, data in payloads) < THRESHOLD
    started_meta, started_data = payloads[0]
    assert started_meta == {"encoding": b"json/protobuf", "messageType": REFERENCE_TYPE}
    reference = json.loads(started_data)
    assert reference["driverName"] == FILE_DRIVER_NAME
    digest = reference["claimData"]["hash_value"]
    assert reference["claimData"] == {"hash_algorithm": "sha256", "hash_value": digest}
    assert len(references) >= 3  # the input, the chat activity's transcript, the result
    # The store: one file per distinct payload, owner-only, no temporary files left.
    files = [p for p in store.rglob("*") if p.is_file()]
    assert (store / digest[:2] / digest) in files
    assert len(files) == len({json.loads(data)["claimData"]["hash_value"] for _, data in references})
    assert {stat.S_IMODE(p.stat().st_mode) for p in files} == {0o600}
    assert {stat.S_IMODE(p.stat().st_mode) for p in [store, *store.rglob("*")] if p.is_dir()} == {0o700}
    print(
        f"[measure] history with the store: {size} bytes, {len(references)} references, "
        f"{sum(p.stat().st_size for p in files)} bytes in {len(files)} files"
    )


async def test_history_without_the_store_holds_the_payloads(
    address: str, task_queue: str, model: ScriptedModelServer, store: Path, tmp_path: Path
) -> None:
    stored = await run_to_end(await connect(settings_for(address, store)), task_queue, model, tmp_path)
    inline = await run_to_end(await connect(settings_for(address, None)), task_queue + "-inline", model, tmp_path)
    (with_store, _), (without_store, payloads) = await history_of(stored), await history_of(inline)
    print(
        f"[measure] history bytes: with the store {with_store}, without {without_store} "
        f"(ratio {without_store / with_store:.1f})"
    )
    assert not [meta for meta, _ in payloads if meta.get("messageType") == REFERENCE_TYPE]
    assert without_store - with_store > 3 * len(PROMPT)  # input, transcript and result each held it


async def cli_result(address: str, workflow_id: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`python client.py result ID --json` with `env` on top of the server's address."""
    return await asyncio.to_thread(
        subprocess.run,
        [sys.executable, str(REPO / "client.py"), "result", workflow_id, "--json"],
        env=clean_env(TEMPORAL_ADDRESS=address, **env),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


async def test_client_with_another_store_says_which_file_is_missing(
    address: str, task_queue: str, model: ScriptedModelServer, store: Path, tmp_path: Path
) -> None:
    handle = await run_to_end(await connect(settings_for(address, store)), task_queue, model, tmp_path)
    other = tmp_path / "other-store"
    for env, expected in [
        ({"SIGNOFF_PAYLOAD_STORE": other.as_uri()}, f"does not exist in the payload store {other.as_uri()}"),
        ({}, "this process has none configured: set SIGNOFF_PAYLOAD_STORE as the workers have it"),
        ({"SIGNOFF_PAYLOAD_STORE": store.as_uri()}, None),
    ]:
        done = await cli_result(address, handle.id, env)
        if expected is None:
            assert done.returncode == 0, done.stderr
            assert json.loads(done.stdout)["messages"][0]["content"] == PROMPT
        else:
            assert done.returncode == 1 and expected in done.stderr, done.stderr
            assert "Traceback" not in done.stderr


async def test_crafted_reference_in_a_start_input_fails_the_run_and_reads_nothing(
    client: Client, address: str, task_queue: str, model: ScriptedModelServer, store: Path, tmp_path: Path
) -> None:
    from temporalio.api.sdk.v1 import ExternalStorageReference

    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    worker_client = await connect(settings_for(address, store))
    async with running_worker(worker_client, task_queue, model, agents_for(tmp_path)):
        for claim in [
            {"hash_algorithm": "sha256", "hash_value": f"../../{secret.name}"},
            {"hash_algorithm": "sha256", "hash_value": str(secret)},
            {"hash_algorithm": "md5", "hash_value": "0" * 64},
        ]:
            # A plain client sends the reference as an ordinary protobuf argument: what a stranger can do.
            crafted = ExternalStorageReference(driver_name=FILE_DRIVER_NAME, claim_data=claim)
            handle = await client.start_workflow(
                "AgentRun", crafted, id=f"crafted-{task_queue}-{claim['hash_value'][-4:]}", task_queue=task_queue
            )
            with pytest.raises(WorkflowFailureError) as failure:
                await asyncio.wait_for(handle.result(), 20)
            assert "payload-store reference that cannot be resolved" in str(failure.value.cause)
    assert model.request_count == 0


def test_store_url_shapes_are_checked() -> None:
    assert PayloadStore("file:///var/lib/signoff/payloads").path == Path("/var/lib/signoff/payloads")
    s3 = PayloadStore("s3://signoff-payloads/prod/runs/")
    assert (s3.kind, s3.bucket, s3.prefix) == ("s3", "signoff-payloads", "prod/runs")
    for bad, message in [
        ("file://relative/dir", "three slashes"),
        ("/var/lib/signoff", "must be file:///absolute/path or s3://bucket/prefix"),
        ("https://example.com/x", "must be file:///absolute/path or s3://bucket/prefix"),
        ("s3://Bad_Bucket/x", "not a valid S3 bucket name"),
        ("s3://key:secret@bucket/x", "no query, fragment or credentials"),
        ("s3://bucket-name/a/../b", "'.' or '..' segment"),
    ]:
        with pytest.raises(ConfigError, match=message):
            PayloadStore(bad)


@pytest.mark.parametrize(
    ("value", "message"),
    [("lots", "a number of bytes"), ("-1", "between 0 and"), (str(3 * 1024 * 1024), "between 0 and")],
)
def test_threshold_is_checked(value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        PayloadStore.from_env(
            Environment({"SIGNOFF_PAYLOAD_STORE": "file:///tmp/x", "SIGNOFF_PAYLOAD_THRESHOLD": value})
        )


async def test_store_directory_is_created_owner_only_or_refused(tmp_path: Path) -> None:
    store = tmp_path / "a" / "b"
    await check_store(PayloadStore(store.as_uri()))
    assert stat.S_IMODE(store.stat().st_mode) == stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o700
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ConfigError, match=f"cannot create the payload store directory {blocker / 'x'}"):
        await check_store(PayloadStore((blocker / "x").as_uri()))


def test_s3_store_without_the_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from signoff.runtime.storage import data_converter

    monkeypatch.setitem(sys.modules, "aioboto3", None)  # `import aioboto3` now fails as if not installed
    monkeypatch.delitem(sys.modules, "signoff.runtime.s3store", raising=False)
    with pytest.raises(ConfigError, match=r"pip install 'signoff\[s3\]'"):
        data_converter(PayloadStore("s3://signoff-payloads/runs"))
