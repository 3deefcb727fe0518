"""A secured cluster for real: `python worker.py` and `python client.py` over TLS and mTLS.

The session's dev server speaks plaintext; `TlsProxy` (tests/tls.py) terminates TLS in
front of it, with certificates made for the test. The worker and the CLI are real
processes configured only by Temporal's standard variables or a `temporal.toml` profile.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from signoff.approval.requests import ToolApprovalResponse
from tests.helpers import (
    Reply,
    ScriptedModelServer,
    ScriptedRequest,
    call,
    start_run,
    wait_pending,
)
from tests.processes import READY, REPO, Processes, clean_env
from tests.tls import SERVER_NAME, Certs, TlsProxy


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return Certs.make(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def upstream(client: Client) -> str:
    return client.service_client.config.target_host


@pytest.fixture
async def tls_proxy(upstream: str, certs: Certs) -> AsyncIterator[TlsProxy]:
    async with TlsProxy(upstream, certs) as proxy:
        yield proxy


@pytest.fixture
async def mtls_proxy(upstream: str, certs: Certs) -> AsyncIterator[TlsProxy]:
    async with TlsProxy(upstream, certs, require_client_cert=True) as proxy:
        yield proxy


@pytest.fixture
def model() -> Iterator[ScriptedModelServer]:
    def run_then_report(request: ScriptedRequest) -> Reply:
        if request.round == 1:
            return Reply.tool_calls([call("run_command", "call_1", command=request.last.content)])
        return Reply.text(f"saw: {request.last.content}")

    with ScriptedModelServer(run_then_report) as server:
        yield server


def tls_env(proxy: TlsProxy, certs: Certs, **extra: str | Path) -> dict[str, str]:
    """Only Temporal's standard variables: the address, the server's CA and its name."""
    return clean_env(
        TEMPORAL_ADDRESS=proxy.address,
        TEMPORAL_TLS_SERVER_CA_CERT_PATH=certs.ca,
        TEMPORAL_TLS_SERVER_NAME=SERVER_NAME,
        **extra,
    )


def client_cert(certs: Certs) -> dict[str, Path]:
    return {"TEMPORAL_TLS_CLIENT_CERT_PATH": certs.client_cert, "TEMPORAL_TLS_CLIENT_KEY_PATH": certs.client_key}


async def cli(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(REPO / "client.py"),
        *args,
        cwd=REPO,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def pending_rows(env: dict[str, str], workflow_id: str, *flags: str) -> list[dict[str, Any]]:
    code, out, err = await cli(env, "pending", "--json", *flags)
    assert code == 0, err
    return [row for row in json.loads(out) if row["workflow_id"] == workflow_id]


async def run_through(
    client: Client, task_queue: str, env: dict[str, str], procs: Processes, model: ScriptedModelServer, workspace: Path
) -> None:
    """A worker on `env` serves a run to the end; the CLI on `env` lists its call and reads its result."""
    worker = procs.worker(
        "worker",
        env
        | {
            "SIGNOFF_TASK_QUEUE": task_queue,
            "SIGNOFF_LLM_BASE_URL": model.base_url,
            "SIGNOFF_LLM_MODEL": "scripted",
            "SIGNOFF_WORKSPACE": str(workspace),
        },
    )
    await worker.wait_for_output(READY)
    handle = await start_run(client, task_queue, "echo over tls")
    await wait_pending(handle, timeout=15)

    (row,) = await pending_rows(env, handle.id)
    assert (row["name"], row["arguments"]) == ("run_command", {"command": "echo over tls"})
    await handle.execute_update("submit_tool_approval", ToolApprovalResponse.approve("call_1"))
    code, out, err = await cli(env, "result", handle.id, "--json")
    assert code == 0, err
    assert json.loads(out)["text"] == "saw: exit code: 0\nover tls\n"


async def test_worker_and_cli_work_through_tls(
    client: Client,
    task_queue: str,
    tls_proxy: TlsProxy,
    certs: Certs,
    procs: Processes,
    model: ScriptedModelServer,
    tmp_path: Path,
) -> None:
    await run_through(client, task_queue, tls_env(tls_proxy, certs), procs, model, tmp_path)
    assert f"at {tls_proxy.address} (namespace default; TLS)" in procs.started[0].stdout()
    assert tls_proxy.connections >= 3  # the worker and both CLI commands came through the proxy


async def test_worker_and_cli_work_through_mtls_with_a_client_certificate(
    client: Client,
    task_queue: str,
    mtls_proxy: TlsProxy,
    certs: Certs,
    procs: Processes,
    model: ScriptedModelServer,
    tmp_path: Path,
) -> None:
    env = tls_env(mtls_proxy, certs, **client_cert(certs))
    await run_through(client, task_queue, env, procs, model, tmp_path)
    assert "(namespace default; TLS, client certificate)" in procs.started[0].stdout()


async def test_mtls_without_a_client_certificate_fails_clearly(
    mtls_proxy: TlsProxy, certs: Certs, procs: Processes
) -> None:
    code, _out, err = await cli(tls_env(mtls_proxy, certs), "pending")
    assert code == 1
    assert f"cannot connect to Temporal at {mtls_proxy.address} (namespace default; TLS)" in err
    assert "set TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH" in err
    stranger = {
        "TEMPORAL_TLS_CLIENT_CERT_PATH": certs.stranger_cert,
        "TEMPORAL_TLS_CLIENT_KEY_PATH": certs.stranger_key,
    }
    worker = procs.worker("worker", tls_env(mtls_proxy, certs, **stranger))
    assert await worker.wait_exit(30) == 1
    assert f"cannot connect to Temporal at {mtls_proxy.address} (namespace default; TLS, client certificate)" in (
        worker.stderr()
    )
    assert mtls_proxy.connections == 0  # no handshake ever completed


async def test_wrong_server_name_is_refused(tls_proxy: TlsProxy, certs: Certs) -> None:
    env = tls_env(tls_proxy, certs) | {"TEMPORAL_TLS_SERVER_NAME": "someone-else.test"}
    code, _, err = await cli(env, "pending")
    assert code == 1 and "NotValidForName" in err, err


async def test_cli_uses_a_profile_from_temporal_toml(
    client: Client, task_queue: str, mtls_proxy: TlsProxy, certs: Certs, tmp_path: Path
) -> None:
    toml = tmp_path / "temporal.toml"
    toml.write_text(f"""
[profile.secure]
address = "{mtls_proxy.address}"

[profile.secure.tls]
server_name = "{SERVER_NAME}"
server_ca_cert_path = "{certs.ca}"
client_cert_path = "{certs.client_cert}"
client_key_path = "{certs.client_key}"
""")
    handle = await start_run(client, task_queue, "nobody serves this")
    await handle.terminate()
    env = clean_env(TEMPORAL_CONFIG_FILE=toml)
    code, _out, err = await cli(env, "result", handle.id, "--profile", "secure")
    assert code == 1 and "the run failed: terminated" in err, err  # it reached the server, read the run
    code, _out, err = await cli(env | {"TEMPORAL_PROFILE": "secure"}, "result", handle.id)
    assert code == 1 and "the run failed: terminated" in err, err
    assert mtls_proxy.connections == 2
