"""A TypeScript Temporal client (`@temporalio/client`, tests/ts/happy_path.ts) drives an
AgentRun through the contract's plain JSON: start, `pending_approvals`, the validated update
`submit_tool_approval`, the result. Its packages come from npm: the test runs `npm ci` in
tests/ts itself when they are not there (`bash .ci/run` does it up front), so the README's one
test command passes on a fresh machine; without npm on the machine the test is skipped."""

from __future__ import annotations

import asyncio
import json
import shutil
import uuid
from pathlib import Path

import pytest
from temporalio.client import Client

from tests.cli_harness import served

TS = Path(__file__).parent / "ts"


async def run(*command: str, cwd: Path = TS, timeout: float = 120) -> str:
    process = await asyncio.create_subprocess_exec(
        *command, cwd=cwd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout)
    assert process.returncode == 0, (command, out.decode()[-2000:], err.decode()[-2000:])
    return out.decode()


@pytest.mark.skipif(shutil.which("npm") is None or shutil.which("node") is None, reason="npm is not installed")
async def test_a_typescript_client_approves_a_call_with_plain_json(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    if not (TS / "node_modules" / "@temporalio" / "client").is_dir():  # a fresh checkout
        await run("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error", timeout=180)
    await run(str(TS / "node_modules" / ".bin" / "tsc"), "-p", ".")  # into tests/ts/build (git-ignored)
    workflow_id = f"ts-{uuid.uuid4()}"
    async with served(client, task_queue, tmp_path):
        out = await run(
            "node",
            str(TS / "build" / "happy_path.js"),
            client.service_client.config.target_host,
            task_queue,
            workflow_id,
        )
    seen = json.loads(out.strip().splitlines()[-1])
    (pending,) = seen["pending"]
    assert (pending["call_id"], pending["name"], len(pending["arguments_digest"])) == ("call_1", "run_command", 64)
    assert seen["ack"]["accepted"] == ["call_1"] and seen["ack"]["decided"][0]["outcome"] == "approved"
    result = seen["result"]
    assert result["finish_reason"] == "stop" and result["text"] == "saw: exit code: 0\nhi\n"
    assert result["approvals"][0]["approver"] == "ts-client"
