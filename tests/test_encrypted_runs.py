"""Runs written with `SIGNOFF_CODEC_KEYS`: nothing readable in history or the payload store,
and the worker, the `signoff` CLI and `signoff codec-server` (for `temporal`) all read them.

Real runs on the session's dev server; the raw history is read with the plain gRPC API (no
data converter), as the server and anyone with read access to it see it.
"""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.api.common.v1 import Payload, WorkflowExecution
from temporalio.api.query.v1 import WorkflowQuery
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryRequest, QueryWorkflowRequest
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.common import RawValue

from signoff.config.environment import Environment
from signoff.contract import AgentRunInput, AgentRunResult
from signoff.runtime.codec import ENCODING, KEY_ID
from signoff.runtime.connection import ConnectionSettings, connect
from signoff.runtime.devserver import find_temporal_binary
from signoff.runtime.storage import close_storage
from tests.cli_harness import cli_env, finish, spawn
from tests.helpers import Reply, ScriptedModelServer, ScriptedRequest, agents_for, call, running_worker, wait_pending
from tests.processes import Processes, free_port
from tests.test_codec import key_line, write_keys
from tests.waiting import assert_eventually

MARKER = f"SECRET-{uuid.uuid4().hex}"
COMMAND = f"printf '%s\\n' {MARKER}; head -c 6000 /dev/zero | tr '\\0' x"
"""Its output is over the lowered threshold below, so it goes to the payload store."""
THRESHOLD = 4096


def run_then_report(request: ScriptedRequest) -> Reply:
    if request.round == 1:
        return Reply.tool_calls([call("run_command", "call_1", command=COMMAND)])
    return Reply.text(f"saw {(request.last.content or '')[:60]}")


@pytest.fixture
def address(client: Client) -> str:
    return client.service_client.config.target_host


@pytest.fixture
def keys(tmp_path: Path) -> Path:
    return write_keys(tmp_path / "codec.keys", key_line("k1"), key_line("k2"))


def environ(address: str, keys: Path | None, store: Path) -> dict[str, str]:
    env = {
        "TEMPORAL_ADDRESS": address,
        "SIGNOFF_PAYLOAD_STORE": store.as_uri(),
        "SIGNOFF_PAYLOAD_THRESHOLD": str(THRESHOLD),
    }
    return env | ({"SIGNOFF_CODEC_KEYS": str(keys)} if keys else {})


async def raw_history(client: Client, workflow_id: str) -> bytes:
    """The history as the server holds it, serialized: no codec, no store."""
    response = await client.workflow_service.get_workflow_execution_history(
        GetWorkflowExecutionHistoryRequest(
            namespace=client.namespace, execution=WorkflowExecution(workflow_id=workflow_id)
        )
    )
    return response.history.SerializeToString()


async def encrypted_run(address: str, keys: Path, store: Path, task_queue: str) -> tuple[WorkflowHandle, list[Any]]:
    """A run that asked to run COMMAND, was approved through the codec, and finished."""
    settings = ConnectionSettings.load(Environment(environ(address, keys, store)))
    worker_client, client = await connect(settings, worker=True), await connect(settings)
    with ScriptedModelServer(run_then_report) as model:
        async with running_worker(worker_client, task_queue, model, agents_for(store.parent)):
            handle = await client.start_workflow(
                "AgentRun",
                AgentRunInput(prompt=f"please run {MARKER}"),
                id=f"run-{uuid.uuid4()}",
                task_queue=task_queue,
                result_type=AgentRunResult,
            )
            await wait_pending(handle)
            await handle.execute_update("submit_tool_approval", {"call_id": "call_1", "approved": True})
            result = await handle.result()
            assert result.text and MARKER in result.text  # the worker decrypted the tool's output
            seen = [r.messages for r in model.requests]
    await close_storage(client.data_converter)
    return handle, seen


async def test_history_and_payload_store_hold_no_plaintext_command(
    client: Client, address: str, keys: Path, tmp_path: Path, task_queue: str
) -> None:
    handle, seen = await encrypted_run(address, keys, tmp_path / "store", task_queue)
    assert any(MARKER in (m.content or "") for m in seen[-1])  # the model read it, decrypted
    history = await raw_history(client, handle.id)
    assert MARKER.encode() not in history and b"printf" not in history  # input, arguments, summaries, result
    assert ENCODING in history and b"ExternalStorageReference" in history
    stored = [p for p in (tmp_path / "store").rglob("*") if p.is_file()]
    assert stored and not any(MARKER.encode() in p.read_bytes() for p in stored)
    for path in stored:  # the store keeps what the codec made: one encrypted Payload each
        assert Payload.FromString(path.read_bytes()).metadata["encoding"] == ENCODING


async def test_the_cli_reads_an_encrypted_run_and_says_what_it_lacks_without_keys(
    client: Client, address: str, keys: Path, tmp_path: Path, task_queue: str
) -> None:
    handle, _ = await encrypted_run(address, keys, tmp_path / "store", task_queue)
    base = cli_env(address, task_queue, tmp_path / "state") | environ(address, keys, tmp_path / "store")
    done = await finish(await spawn(base, "result", handle.id, "--json"))
    assert done.code == 0 and MARKER in done.out, done
    without = {k: v for k, v in base.items() if k != "SIGNOFF_CODEC_KEYS"}
    done = await finish(await spawn(without, "result", handle.id))
    assert done.code == 1 and "encrypted" in done.err and "SIGNOFF_CODEC_KEYS" in done.err, done
    assert MARKER not in done.out + done.err


async def test_temporal_cli_decodes_through_the_codec_server(
    client: Client, address: str, keys: Path, tmp_path: Path, task_queue: str, procs: Processes
) -> None:
    handle, _ = await encrypted_run(address, keys, tmp_path / "store", task_queue)
    port = free_port()
    server = procs.start(
        "codec",
        [*signoff_cli(), "codec-server", "--port", str(port)],
        cli_env(address, task_queue) | {"SIGNOFF_CODEC_KEYS": str(keys)},
    )
    await server.wait_for_output("codec server on")
    show = [str(find_temporal_binary()), "workflow", "show", "--address", address, "-w", handle.id, "-o", "json"]
    shown = payload_texts(await run(show))
    plaintext = {text for encoding, text in shown if encoding == "json/plain"}
    patch = {'["signoff-draws-request-instances"]', '{"id":"signoff-draws-request-instances","deprecated":false}'}
    # search attributes only, and the request-instance patch's marker (its id, in the marker and
    # in `TemporalChangeVersion`, as the SDK writes every patch)
    assert plaintext == {'"default"', '["run_command"]', '"AwaitingApproval"', *patch}
    references = [text for encoding, text in shown if encoding == "json/protobuf"]
    assert references and all('"driverName":"signoff.file"' in text for text in references)  # hashes of ciphertext
    decoded = payload_texts(await run([*show, "--codec-endpoint", f"http://127.0.0.1:{port}"]))
    assert all(encoding != "binary/encrypted" for encoding, _ in decoded)
    assert any(MARKER in text for _, text in decoded)


async def test_current_details_are_encrypted_on_the_wire_and_decrypt_with_the_keys(
    client: Client, address: str, keys: Path, tmp_path: Path, task_queue: str
) -> None:
    settings = ConnectionSettings.load(Environment(environ(address, keys, tmp_path / "store")))
    worker_client, codec_client = await connect(settings, worker=True), await connect(settings)
    with ScriptedModelServer(run_then_report) as model:
        async with running_worker(worker_client, task_queue, model, agents_for(tmp_path)):
            handle = await codec_client.start_workflow(
                "AgentRun", AgentRunInput(prompt="go"), id=f"run-{uuid.uuid4()}", task_queue=task_queue
            )
            await wait_pending(handle)
            answer = await client.workflow_service.query_workflow(
                QueryWorkflowRequest(
                    namespace=client.namespace,
                    execution=WorkflowExecution(workflow_id=handle.id),
                    query=WorkflowQuery(query_type="__temporal_workflow_metadata"),
                )
            )
            (payload,) = answer.query_result.payloads
            assert payload.metadata["encoding"] == ENCODING and b"printf" not in payload.SerializeToString()
            metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
            assert "Awaiting approval" in metadata.current_details and "printf" in metadata.current_details
            await handle.terminate()


async def test_rotation_new_payloads_use_the_new_key_and_old_ones_still_decode(
    client: Client, address: str, tmp_path: Path, task_queue: str
) -> None:
    old = write_keys(tmp_path / "old.keys", key_line("k1"))
    rotated = write_keys(tmp_path / "rotated.keys", old.read_text().strip().splitlines()[-1], key_line("k2"))
    store = tmp_path / "store"
    with ScriptedModelServer(run_then_report) as model:
        before = ConnectionSettings.load(Environment(environ(address, old, store)))
        async with running_worker(await connect(before, worker=True), task_queue, model, agents_for(tmp_path)):
            handle = await (await connect(before)).start_workflow(
                "AgentRun",
                AgentRunInput(prompt="go"),
                id=f"run-{uuid.uuid4()}",
                task_queue=task_queue,
                result_type=AgentRunResult,
            )
            await wait_pending(handle)
        after = ConnectionSettings.load(Environment(environ(address, rotated, store)))
        after_client = await connect(after)
        async with running_worker(
            await connect(after, worker=True), task_queue, model, agents_for(tmp_path), max_cached_workflows=0
        ):
            decided = after_client.get_workflow_handle(handle.id, result_type=AgentRunResult)
            await decided.execute_update("submit_tool_approval", {"call_id": "call_1", "approved": True})
            assert (await decided.result()).finish_reason == "stop"
    key_ids = {base64.b64decode(p["metadata"].get(KEY_ID, "")) for p in await history_payloads(client, handle.id)}
    assert {b"k1", b"k2"} <= key_ids


async def test_an_undecryptable_start_fails_the_run_and_an_undecryptable_signal_is_ignored(
    client: Client, address: str, keys: Path, tmp_path: Path, task_queue: str
) -> None:
    settings = ConnectionSettings.load(Environment(environ(address, keys, tmp_path / "store")))
    forged = RawValue(Payload(metadata={"encoding": ENCODING, KEY_ID: b"someone-elses"}, data=b"\x00" * 64))
    with ScriptedModelServer(run_then_report) as model:
        async with running_worker(await connect(settings, worker=True), task_queue, model, agents_for(tmp_path)):
            bad = await client.start_workflow("AgentRun", forged, id=f"run-{uuid.uuid4()}", task_queue=task_queue)
            codec_client = await connect(settings)
            with pytest.raises(WorkflowFailureError) as failed:
                await asyncio.wait_for(codec_client.get_workflow_handle(bad.id).result(), 30)
            cause = str(failed.value.cause)  # the failure's message is encrypted too: read with the keys
            assert "could not be decoded" in cause and "binary/encrypted" in cause, cause
            handle = await codec_client.start_workflow(
                "AgentRun",
                AgentRunInput(prompt="go"),
                id=f"run-{uuid.uuid4()}",
                task_queue=task_queue,
                result_type=AgentRunResult,
            )
            await wait_pending(handle)
            await client.get_workflow_handle(handle.id).signal("tool_approval", forged)

            async def ignored() -> None:
                events = await handle.query("events", 0)
                assert any(e["type"] == "decision_ignored" and "binary/encrypted" in e["reason"] for e in events)

            await assert_eventually(ignored)
            await handle.execute_update("submit_tool_approval", {"call_id": "call_1", "approved": True})
            assert (await handle.result()).finish_reason == "stop"


async def test_the_codec_server_speaks_the_protocol_with_cors_and_bearer_auth(keys: Path, tmp_path: Path) -> None:
    from signoff.runtime.codec import CodecKeys
    from signoff.runtime.codec_server import codec_app
    from signoff.runtime.hosts import AllowedHosts

    token = "t" * 32
    hosts = AllowedHosts.of(("127.0.0.1", 8081), extra=["codec"])  # the name httpx sends below
    app = codec_app(
        CodecKeys.read(keys), hosts=hosts, origins=["http://localhost:8233"], token=token, namespaces=["default"]
    )
    transport = httpx.ASGITransport(app=app)
    auth = {"Authorization": f"Bearer {token}", "X-Namespace": "default"}
    body = {"payloads": [{"metadata": {"encoding": "anNvbi9wbGFpbg=="}, "data": "eyJhIjogMX0="}]}
    async with httpx.AsyncClient(transport=transport, base_url="http://codec") as http:
        preflight = await http.options(
            "/decode",
            headers={
                "Origin": "http://localhost:8233",
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "content-type,x-namespace,authorization",
            },
        )
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-origin"] == "http://localhost:8233"
        assert preflight.headers["access-control-allow-credentials"] == "true"
        assert (await http.post("/encode", json=body, headers={"X-Namespace": "default"})).status_code == 401
        assert (await http.post("/encode", json=body, headers={**auth, "X-Namespace": "other"})).status_code == 403
        assert (await http.post("/decode", content=b"{not json", headers=auth)).status_code == 400
        encoded = (await http.post("/encode", json=body, headers=auth)).json()
        (sealed,) = encoded["payloads"]
        assert sealed["metadata"]["encoding"] == "YmluYXJ5L2VuY3J5cHRlZA=="  # binary/encrypted
        decoded = (await http.post("/decode", json=encoded, headers=auth)).json()
        assert decoded == body
        foreign = {
            "payloads": [
                {"metadata": {"encoding": "YmluYXJ5L2VuY3J5cHRlZA==", "encryption-key-id": "eA=="}, "data": "AAAA"}
            ]
        }
        assert (await http.post("/decode", json=foreign, headers=auth)).json() == foreign  # left as it was


async def history_payloads(client: Client, workflow_id: str) -> list[dict[str, Any]]:
    """Every payload of the run's raw history (inputs, results, summaries), as protobuf JSON."""
    from google.protobuf import json_format
    from temporalio.api.history.v1 import History

    return payload_dicts(json_format.MessageToDict(History.FromString(await raw_history(client, workflow_id))))


def payload_dicts(node: Any) -> list[dict[str, Any]]:
    """The `{"metadata": {...}, "data": ...}` objects anywhere in protobuf JSON."""
    if isinstance(node, list):
        return [found for item in node for found in payload_dicts(item)]
    if not isinstance(node, dict):
        return []
    own = [node] if "data" in node and "encoding" in node.get("metadata", {}) else []
    return own + [found for value in node.values() for found in payload_dicts(value)]


def signoff_cli() -> list[str]:
    import sys

    from tests.cli_harness import CLIENT

    return [sys.executable, str(CLIENT)]


async def run(args: list[str]) -> str:
    proc = await asyncio.create_subprocess_exec(*args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    return out.decode()


def payload_texts(history_json: str) -> list[tuple[str, str]]:
    """(encoding, data) of every payload in `temporal workflow show -o json`."""
    return [
        (base64.b64decode(p["metadata"]["encoding"]).decode(), base64.b64decode(p["data"]).decode("utf-8", "replace"))
        for p in payload_dicts(json.loads(history_json))
    ]
