"""Bulk decisions (issue 11): `signoff deny --query ... --tool ...` decides exactly the calls it listed."""

# ruff: noqa: F811 - the harness's fixtures are imported by name and taken as parameters

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from temporalio.client import Client, WorkflowHandle

from signoff.approval.digest import arguments_digest
from signoff.contract import SA_STATUS, STATUS_AWAITING, AgentRunInput
from tests.cli_harness import Cli, cli, cli_environ, served  # noqa: F401
from tests.helpers import Reply, ScriptedRequest, assert_eventually, call, wait_pending

OUTSIDE = "/tmp/signoff-bulk-outside.txt"


def command_and_write(request: ScriptedRequest) -> Reply:
    """Two gated calls: a shell command, and a write outside the workspace."""
    if request.round == 1:
        return Reply.tool_calls(
            [
                call("run_command", "call_cmd", command="echo bulk"),
                call("write_file", "call_write", path=OUTSIDE, content="x"),
            ]
        )
    return Reply.text("done")


async def start(client: Client, task_queue: str, workflow_id: str) -> WorkflowHandle:
    return await client.start_workflow("AgentRun", AgentRunInput(prompt="go"), id=workflow_id, task_queue=task_queue)


async def pending_ids(handle: WorkflowHandle) -> list[str]:
    return [r["call_id"] for r in await handle.query("pending_approvals")]


async def test_bulk_deny_by_query_and_tool_decides_exactly_the_listed_calls(
    client: Client, task_queue: str, tmp_path: Path, cli: Cli
) -> None:
    prefix = f"bulk-{uuid.uuid4().hex[:8]}"
    query = f'WorkflowId STARTS_WITH "{prefix}-"'
    async with served(client, task_queue, tmp_path, command_and_write):
        chosen = [await start(client, task_queue, f"{prefix}-{i}") for i in range(3)]
        other = await start(client, task_queue, f"other-{prefix}")
        for handle in [*chosen, other]:
            await wait_pending(handle, 2)

        async def visible() -> None:
            listed = [e.id async for e in client.list_workflows(f'{query} AND {SA_STATUS}="{STATUS_AWAITING}"')]
            assert len(listed) == 3, listed

        await assert_eventually(visible, timeout=30)
        unconfirmed = await cli("deny", "--query", query, "--tool", "run_command")
        too_young = await cli("deny", "--query", query, "--older-than", "1h", "--yes")
        done = await cli("deny", "--query", query, "--tool", "run_command", "--reason", "bulk cleanup", "--yes")
        left = {h.id: await pending_ids(h) for h in [*chosen, other]}
        for handle in [*chosen, other]:
            await handle.signal("tool_approval", {"call_id": "*", "approved": False})
            await asyncio.wait_for(handle.result(), 60)
    assert unconfirmed.code == 2 and "add --yes" in unconfirmed.err
    assert (too_young.code, too_young.out.strip()) == (0, "No pending call matches.")
    assert done.code == 0, done
    digest = arguments_digest({"command": "echo bulk"})
    assert "Will deny 3 call(s) in 3 run(s):" in done.out
    assert done.out.count(f"    digest     {digest}") == 3 and '"command": "echo bulk"' in done.out
    listing = done.out[: done.out.index(f"{chosen[0].id}:\n")]
    assert "call_write" not in listing and listing.count("call_cmd  run_command  waiting") == 3
    for handle in chosen:
        decided = '  denied call_cmd: run_command {"command": "echo bulk"}\n  still pending: call_write'
        assert f"{handle.id}:\n{decided}" in done.out
    assert left == {**{h.id: ["call_write"] for h in chosen}, other.id: ["call_cmd", "call_write"]}
    assert not Path(OUTSIDE).exists()
