"""`signoff audit`: the trail printed, its hash chain recomputed, and held up to the workflow history."""

# ruff: noqa: F811 - the harness's fixtures are imported by name and taken as parameters

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from signoff.activities import AgentActivities
from signoff.activities.models import TOOL_ACTIVITY
from signoff.approval.audit import GENESIS, record_hash
from signoff.approval.requests import ApprovalRecord
from signoff.contract import RunOptions
from tests.cli_harness import Cli, cli, cli_env, cli_environ, finish, served, spawn  # noqa: F401
from tests.conftest import start_dev_server
from tests.helpers import (
    Reply,
    ScriptedRequest,
    assert_eventually,
    call,
    start_run,
    wait_pending,
)


def two_then_one(request: ScriptedRequest) -> Reply:
    if request.round == 1:
        return Reply.tool_calls(
            [call("run_command", "call_a", command="echo a"), call("run_command", "call_b", command="echo b")]
        )
    if request.round == 2:
        return Reply.tool_calls([call("run_command", "call_c", command="echo c")])
    return Reply.text("done")


async def decided_run(client: Client, task_queue: str) -> str:
    """A finished run: call_a approved by alice, call_b denied by bob, call_c approved by carol."""
    handle = await start_run(client, task_queue)
    await wait_pending(handle, 2)
    await handle.execute_update(
        "submit_tool_approval",
        [
            {"call_id": "call_a", "approved": True, "approver": "alice"},
            {"call_id": "call_b", "approved": False, "approver": "bob", "reason": "not b"},
        ],
    )
    await wait_pending(handle)
    await handle.execute_update("submit_tool_approval", {"call_id": "call_c", "approved": True, "approver": "carol"})
    await asyncio.wait_for(handle.result(), 60)
    return handle.id


def test_the_tool_activity_name_is_the_one_the_history_is_read_for() -> None:
    assert AgentActivities.tool.__temporal_activity_definition.name == TOOL_ACTIVITY  # type: ignore[attr-defined]


async def test_audit_prints_each_record_and_verify_says_the_trail_holds(
    client: Client, task_queue: str, tmp_path: Path, cli: Cli
) -> None:
    async with served(client, task_queue, tmp_path, two_then_one):
        run = await decided_run(client, task_queue)
        shown = await cli("audit", run)
        verified = await cli("audit", run, "--verify")
    assert shown.code == 0, shown.err
    assert "record 0  run_command  ✔ call_a approved by alice" in shown.out
    assert "record 1  run_command  ✘ call_b denied by bob: not b" in shown.out
    for text in (
        'arguments  {"command": "echo c"}',
        "approver   carol (not verified)",
        "outcome    denied",
        "digests    arguments ",
        "call      ",
        "policy    ",
        "hash       ",
    ):
        assert text in shown.out, text
    assert verified.code == 0, verified
    assert verified.out.rstrip().endswith(
        "the audit trail holds: 3 record(s); 2 approved tool call(s) checked against the history of 1 run(s); "
        "3 record(s) without a verified approver are attribution only (anyone who could signal the run could "
        "have sent them)"
    )


def reseal(records: list[dict[str, Any]]) -> None:
    """What a careful forger does after editing: recompute every hash, so the chain verifies."""
    prev = GENESIS
    for record in records:
        record["hash"] = record_hash(prev, ApprovalRecord.model_validate(record))
        prev = record["hash"]


def approved_by_mallory_and_resealed(records: list[dict[str, Any]]) -> None:
    records[0].update(approver="mallory")
    reseal(records)


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            lambda r: r[0].update(approver="mallory"),
            ["record 0 (call_a): hash does not match", "record 0 (call_a) differs from the history in: approver\n"],
        ),
        (
            lambda r: r[1].update(arguments={"command": "echo innocent"}),
            [
                "record 1 (call_b): arguments do not match arguments_digest",
                "record 1 (call_b) differs from the history in: arguments",
            ],
        ),
        (
            approved_by_mallory_and_resealed,
            [
                "call 'call_a' (run_command) ran in run",
                "which the trail does not have",
                "record 0 (call_a) differs from the history in: approver, hash",
            ],
        ),
        (
            lambda r: r.pop(1),
            ["record 1 (call_c) differs from the history in: call_id", "the trail has 2 record(s); the history has 3"],
        ),
    ],
    ids=["approver", "arguments", "approver, re-hashed", "record removed"],
)
async def test_an_edited_export_does_not_verify_against_the_history(
    client: Client, task_queue: str, tmp_path: Path, cli: Cli, edit: Any, expected: list[str]
) -> None:
    async with served(client, task_queue, tmp_path, two_then_one):
        run = await decided_run(client, task_queue)
        exported = await cli("audit", run, "--json")
        trail = tmp_path / "trail.json"
        trail.write_text(exported.out)
        untouched = await cli("audit", run, "--verify", "--file", str(trail))
        data = json.loads(exported.out)
        edit(data["records"])
        trail.write_text(json.dumps(data))
        tampered = await cli("audit", run, "--verify", "--file", str(trail))
    assert (exported.code, untouched.code) == (0, 0), (exported, untouched)
    assert data["workflow_id"] == run and len(json.loads(exported.out)["records"]) == 3
    assert tampered.code == 1, tampered
    assert "the audit trail does not hold" in tampered.err
    for text in expected:
        assert text in tampered.out, (text, tampered.out)


async def test_a_waiting_run_is_audited_through_its_query(
    client: Client, task_queue: str, tmp_path: Path, cli: Cli
) -> None:
    async with served(client, task_queue, tmp_path, two_then_one):
        handle = await start_run(client, task_queue)
        await wait_pending(handle, 2)
        await handle.execute_update(
            "submit_tool_approval",
            [
                {"call_id": "call_a", "approved": True},
                {"call_id": "call_b", "approved": True},
            ],
        )
        await wait_pending(handle)  # call_c waits; call_a and call_b have run
        verified = await cli("audit", handle.id, "--verify")
        await handle.signal("tool_approval", {"call_id": "call_c", "approved": False})
        await asyncio.wait_for(handle.result(), 60)
    assert verified.code == 0, verified
    assert "the audit trail holds: 2 record(s); 2 approved tool call(s)" in verified.out


# --- across continue-as-new --------------------------------------------------------


@pytest.fixture(scope="module")
async def small_history_env() -> AsyncIterator[WorkflowEnvironment]:
    """A dev server that suggests continue-as-new after a few events."""
    env = await start_dev_server("--dynamic-config-value", "limit.historyCount.suggestContinueAsNew=30")
    yield env
    await env.shutdown()


def gate_each_round(request: ScriptedRequest) -> Reply:
    if request.round <= 6:
        return Reply.tool_calls([call("run_command", f"call_{request.round}", command=f"echo {request.round}")])
    return Reply.text("done")


async def test_verify_follows_the_run_across_continue_as_new(
    small_history_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    client, queue = small_history_env.client, f"tq-{uuid.uuid4()}"
    environ = cli_env(client.service_client.config.target_host, queue, tmp_path / "state")
    async with served(client, queue, tmp_path, gate_each_round):
        handle = await start_run(client, queue, options=RunOptions(max_rounds=20))
        latest = client.get_workflow_handle(handle.id)
        for number in range(1, 7):

            async def approve(number: int = number) -> None:
                await latest.execute_update("submit_tool_approval", {"call_id": f"call_{number}", "approved": True})

            await assert_eventually(approve, timeout=30)  # a continue-as-new may be under way
        await asyncio.wait_for(latest.result(), 60)
        done = await finish(await spawn(environ, "audit", handle.id, "--verify"))
    assert done.code == 0, done
    runs = int(done.out.rsplit("history of ", 1)[1].split()[0])
    assert runs >= 2, done.out
    assert "the audit trail holds: 6 record(s); 6 approved tool call(s)" in done.out
