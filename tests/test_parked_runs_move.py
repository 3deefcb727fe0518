"""A parked run moves to its deployment's new version (workflows/upgrade.py): version `a` current,
runs parked on it, `b` made current; at a safe point (between rounds, or waiting with no call
ready to run) the run continues as new with AUTO_UPGRADE, carrying what it holds, and `b` does
the rest. A call approved on `a` runs on `a`, once; never on the other side of the move.

In-process workers of one package for the rules; at the end the issue's test with real worker
processes, `b` a copy of the package with its workflow code changed.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import VersioningBehavior
from temporalio.client import Client, WorkflowHandle

from signoff.agent.builder import AgentBuilder, ChatClientAgent
from signoff.approval.audit import verify_chain
from signoff.approval.policy import ApprovalPolicy
from signoff.contract import AgentRunResult, RunOptions
from signoff.loop.state import CallStatus, LoopState, PendingCall
from signoff.messages import ChatMessage, ToolCall
from signoff.runtime.deployment import DeploymentSettings
from signoff.testing import replay_histories
from signoff.tools.function import tool
from signoff.workflows import upgrade
from tests.conftest import start_dev_server
from tests.governance import deploy, turns
from tests.helpers import ScriptedModelServer, running_worker, start_run, wait_pending
from tests.processes import READY, Processes, clean_env, package_copy
from tests.versioning import (
    FAST_DRAINAGE,
    chain,
    drainage,
    make_current,
    make_ramping,
    moved,
    pinned_to,
    started_by_a_move,
    temporal_ok,
)
from tests.waiting import assert_eventually, wait_until

PINNED = VersioningBehavior.VERSIONING_BEHAVIOR_PINNED


# --- the rule ----------------------------------------------------------------------------------


def pending(*statuses: CallStatus) -> LoopState:
    return LoopState(
        messages=[], pending=[PendingCall(call=deploy(f"call_{i}"), status=status) for i, status in enumerate(statuses)]
    )


@pytest.mark.parametrize(
    ("statuses", "safe"),
    [
        ((), True),  # between rounds
        ((CallStatus.AWAITING,), True),  # waiting for a person
        ((CallStatus.DONE, CallStatus.AWAITING), True),  # what ran has its result
        ((CallStatus.READY, CallStatus.AWAITING), False),  # approved, not yet run
        ((CallStatus.READY,), False),
    ],
)
def test_a_run_moves_only_when_no_call_is_ready_to_run(statuses: tuple[CallStatus, ...], safe: bool) -> None:
    assert upgrade.at_safe_point(pending(*statuses)) is safe
    assert upgrade.should_move(True, pending(*statuses)) is safe
    assert upgrade.should_move(False, pending(*statuses)) is False  # the target did not change: never


# --- in-process versions a and b -------------------------------------------------------------


def ops(build: str, ran: list[str], policy: ApprovalPolicy) -> ChatClientAgent:
    """Agent `ops` as version `build` has it: `deploy(target)` says (and notes in `ran`) where it ran."""

    @tool(name="deploy", approval=policy, idempotent=False)
    def deploy_tool(target: str) -> str:
        """Deploy a target."""
        ran.append(f"{target} on {build}")
        return f"deployed {target} on {build}"

    return AgentBuilder("ops").with_tools([deploy_tool]).build()


@dataclass
class Deployment:
    """Versions of one Worker Deployment on one task queue, with one scripted model."""

    client: Client
    model: ScriptedModelServer
    policy: ApprovalPolicy = field(default_factory=ApprovalPolicy)
    name: str = field(default_factory=lambda: f"d{uuid.uuid4().hex[:12]}")
    queue: str = field(default_factory=lambda: f"tq-{uuid.uuid4()}")
    ran: list[str] = field(default_factory=list)

    def version(self, build: str) -> AbstractAsyncContextManager[None]:
        agents = {"ops": ops(build, self.ran, self.policy)}
        return running_worker(
            self.client, self.queue, self.model, agents, deployment=DeploymentSettings(self.name, build)
        )

    async def start(self, prompt: str, **options: Any) -> WorkflowHandle[Any, AgentRunResult]:
        return await start_run(self.client, self.queue, prompt, agent="ops", options=RunOptions(**options))


@asynccontextmanager
async def parked_on_a(client: Client, *rounds: list[ToolCall], **policy: Any) -> AsyncIterator[Deployment]:
    """Version `a` current and running; `b` is started by the test."""
    with ScriptedModelServer(turns(*rounds)) as model:
        versions = Deployment(client, model, ApprovalPolicy(**policy))
        async with versions.version("a"):
            await make_current(client, versions.name, "a")
            yield versions


async def test_a_parked_run_approved_after_the_switch_runs_its_call_on_a_then_moves_to_b(client: Client) -> None:
    async with parked_on_a(client, [deploy("call_1")]) as versions:
        run = await versions.start("deploy web")
        await wait_pending(run)
        async with versions.version("b"):
            await make_current(client, versions.name, "b")
            await run.execute_update("submit_tool_approval", {"call_id": "call_1", "approved": True, "approver": "a"})
            result = await run.result()
            assert await pinned_to(chain(client, run)) == (PINNED, "a")
            assert await pinned_to(run) == (PINNED, "b") and await started_by_a_move(run)
    assert versions.ran == ["web on a"]
    assert result.messages == [
        ChatMessage.user("deploy web"),
        ChatMessage.assistant(None, [deploy("call_1")]),
        ChatMessage.tool("deployed web on a", "call_1"),
        ChatMessage.assistant("deployed web on a"),
    ]
    assert [r.outcome for r in result.approvals] == ["approved"] and verify_chain(result.approvals) == []


async def test_a_run_the_ramp_selects_moves_to_the_ramping_version(client: Client) -> None:
    async with parked_on_a(client, [deploy("call_1")]) as versions:
        run = await versions.start("deploy web")
        await wait_pending(run)
        async with versions.version("b"):
            await make_ramping(client, versions.name, "b", 100)
            await run.execute_update("submit_tool_approval", {"call_id": "call_1", "approved": True})
            assert (await run.result()).text == "deployed web on a"
            assert await pinned_to(run) == (PINNED, "b") and await started_by_a_move(run)


async def test_a_partly_decided_round_stays_until_its_approved_call_has_run(client: Client) -> None:
    """Approved but not run is no safe point: the run waits on `a` for the round's other decision,
    runs both calls there, and moves only before its next model turn."""
    async with parked_on_a(client, [deploy("call_1", "web"), deploy("call_2", "api")]) as versions:
        run = await versions.start("deploy both")
        await wait_pending(run, 2)
        async with versions.version("b"):
            await make_current(client, versions.name, "b")
            ack = await run.execute_update("submit_tool_approval", {"call_id": "call_1", "approved": True})
            assert ack["pending"] == ["call_2"]
            await wait_pending(run, 1)  # still waiting, on a: the approved call is held with the round
            assert (await client.get_workflow_handle(run.id).describe()).run_id == run.result_run_id
            assert versions.ran == []
            await run.execute_update("submit_tool_approval", {"call_id": "call_2", "approved": True})
            result = await run.result()
            assert await pinned_to(run) == (PINNED, "b") and await started_by_a_move(run)
    assert sorted(versions.ran) == ["api on a", "web on a"]
    assert result.text == "deployed web on a|deployed api on a"


async def test_a_vote_after_the_switch_moves_the_run_with_its_vote_and_b_counts_it(client: Client) -> None:
    async with parked_on_a(client, [deploy("call_1")], approvers=("alice", "bob"), quorum=2) as versions:
        run = await versions.start("deploy web")
        await wait_pending(run)
        async with versions.version("b"):
            await make_current(client, versions.name, "b")
            vote = {"call_id": "call_1", "approved": True, "approver": "alice"}
            await run.execute_update("submit_tool_approval", vote)
            into = await moved(client, run)
            (request,) = await wait_pending(into)
            assert [v["approver"] for v in request["votes"]] == ["alice"]
            await into.execute_update("submit_tool_approval", vote | {"approver": "bob"})
            result = await into.result()
    assert versions.ran == ["web on b"] and result.text == "deployed web on b"
    (record,) = result.approvals
    assert record.outcome == "approved" and verify_chain(result.approvals) == []


async def test_a_grant_made_on_a_covers_the_next_rounds_call_on_b(client: Client) -> None:
    async with parked_on_a(client, [deploy("call_1", "web")], [deploy("call_2", "api")]) as versions:
        run = await versions.start("deploy twice")
        await wait_pending(run)
        async with versions.version("b"):
            await make_current(client, versions.name, "b")
            grant = {"match": "tool", "ttl_seconds": 3600}
            await run.execute_update("submit_tool_approval", {"call_id": "call_1", "approved": True, "grant": grant})
            result = await run.result()  # call_2 waited for nobody: the carried grant approved it
            assert await pinned_to(run) == (PINNED, "b")
    assert versions.ran == ["web on a", "api on b"]
    assert [r.outcome for r in result.approvals] == ["approved", "approved"]
    assert verify_chain(result.approvals) == []


async def test_a_run_woken_by_a_signal_that_is_no_decision_moves_with_its_pending_call_and_deadline(
    client: Client,
) -> None:
    """Whatever gives the run a task after the switch moves it, even a signal nothing of which is
    applied; the new run waits for the same request, deadline included. Its history replays."""
    async with parked_on_a(client, [deploy("call_1")]) as versions:
        run = await versions.start("deploy web", approval_timeout_seconds=3600)
        (before,) = await wait_pending(run)
        async with versions.version("b"):
            await make_current(client, versions.name, "b")
            await run.signal("tool_approval", {"not": "a decision"})
            into = await moved(client, run)
            (after,) = await wait_pending(into)
            assert versions.ran == []
            await into.execute_update("submit_tool_approval", {"call_id": "call_1", "approved": True})
            assert (await into.result()).text == "deployed web on b"
            history = await chain(client, run).fetch_history()
    assert after == before and after["expires_at"] is not None
    assert versions.ran == ["web on b"]
    assert [o.verdict.value for o in replay_histories(history)] == ["resumes"]


async def test_a_run_whose_target_did_not_change_never_moves(client: Client) -> None:
    async with parked_on_a(client, [deploy("call_1")]) as versions:
        run = await versions.start("deploy web")
        await wait_pending(run)
        await run.signal("tool_approval", [])
        await run.execute_update("submit_tool_approval", {"call_id": "call_1", "approved": True})
        assert (await run.result()).text == "deployed web on a"
        assert (await client.get_workflow_handle(run.id).describe()).run_id == run.result_run_id


# --- the test: worker processes, b with other workflow code ----------------------------

ROLLOUT_AGENTS = '''
"""Agent `ops` for both versions: `deploy(target)` notes where it ran; `slow...` waits for its gate file."""
import os
import time
from pathlib import Path

from signoff.agent.builder import AgentBuilder
from signoff.approval.policy import ApprovalPolicy
from signoff.tools.function import tool

HERE = Path(os.environ["SIGNOFF_WORKSPACE"])
BUILD = os.environ["SIGNOFF_BUILD_ID"]


@tool(name="deploy", approval=ApprovalPolicy(), idempotent=False)
def deploy(target: str) -> str:
    """Deploy a target."""
    with open(HERE / "calls.log", "a") as log:
        log.write(f"{target} on {BUILD}\\n")
    deadline = time.monotonic() + 120
    while target.startswith("slow") and not (HERE / f"gate-{target}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return f"deployed {target} on {BUILD}"


def agents():
    return [AgentBuilder("ops").with_tools([deploy]).build()]
'''
MODEL_TURN = 'summary=f"model turn {loop.state.round + 1}"'
B_MODEL_TURN = 'summary=f"model turn {loop.state.round + 1} (code b)"'
"""b's workflow-code change: its model turns are named otherwise in history (and the fingerprint differs)."""


def calls(workspace: Path) -> Counter[str]:
    log = workspace / "calls.log"
    return Counter(log.read_text().splitlines() if log.exists() else [])


async def model_turn_summaries(handle: WorkflowHandle[Any, Any]) -> list[str]:
    """The Web UI summaries of the run's model turns, as its workflow code named them."""
    return [
        json.loads(event.user_metadata.summary.data)
        async for event in handle.fetch_history_events()
        if event.HasField("activity_task_scheduled_event_attributes")
        and event.activity_task_scheduled_event_attributes.activity_type.name == "signoff.chat"
    ]


async def test_parked_runs_move_from_a_to_b_with_other_workflow_code_and_nothing_is_lost(
    procs: Processes, tmp_path: Path
) -> None:
    env = await start_dev_server(*FAST_DRAINAGE)
    try:
        await rollout(env.client, procs, tmp_path)
    finally:
        await env.shutdown()


async def rollout(client: Client, procs: Processes, tmp_path: Path) -> None:
    address, queue, name = client.service_client.config.target_host, f"tq-{uuid.uuid4()}", "ops-agents"
    workspace, agents_dir = tmp_path / "ws", tmp_path / "agents"
    workspace.mkdir()
    agents_dir.mkdir()
    (agents_dir / "rollout_agents.py").write_text(ROLLOUT_AGENTS)
    site = package_copy(tmp_path / "site", MODEL_TURN, B_MODEL_TURN)

    def first_deploy(request: Any) -> Any:
        target = next(m.content or "" for m in request.messages if m.role == "user")
        return turns([deploy("call_1", target)])(request)

    with ScriptedModelServer(first_deploy) as model:
        env = clean_env(
            TEMPORAL_ADDRESS=address,
            SIGNOFF_TASK_QUEUE=queue,
            SIGNOFF_LLM_BASE_URL=model.base_url,
            SIGNOFF_LLM_MODEL="scripted",
            SIGNOFF_WORKSPACE=workspace,
            SIGNOFF_DEPLOYMENT_NAME=name,
        )
        a = procs.worker(
            "worker-a", env | {"SIGNOFF_BUILD_ID": "a", "PYTHONPATH": str(agents_dir)}, "--agents", "rollout_agents"
        )
        await a.wait_for_output(READY, 60)
        await make_current(client, name, "a")

        async def parked(target: str) -> WorkflowHandle[Any, AgentRunResult]:
            run = await start_run(client, queue, target, agent="ops", options=RunOptions(approval_timeout_seconds=3600))
            await wait_pending(run, timeout=30)
            return run

        web, api, slow, racy, idle = [await parked(t) for t in ("web", "api", "slow", "racy", "idle")]
        (idle_request,) = await wait_pending(idle)
        approve = {"call_id": "call_1", "approved": True, "approver": "ops-lead"}
        await slow.execute_update("submit_tool_approval", approve)  # approved on a; its tool waits at the gate
        await wait_until(lambda: calls(workspace)["slow on a"] == 1, 30, "the slow call did not start on a")

        b_env = env | {"SIGNOFF_BUILD_ID": "b", "PYTHONPATH": f"{site}:{agents_dir}"}
        serve = "from signoff.runtime.worker import main; main()"  # from `site`: b's copy of the package
        b = procs.start("worker-b", [sys.executable, "-c", serve, "--agents", "rollout_agents"], b_env, cwd=site)
        await b.wait_for_output(READY, 60)
        await asyncio.gather(  # an approval arriving while the switch happens
            make_current(client, name, "b"), racy.execute_update("submit_tool_approval", approve)
        )
        (workspace / "gate-slow").touch()
        for run in (web, api):
            await run.execute_update("submit_tool_approval", approve)

        results = {run.id: await run.result() for run in (web, api, slow, racy)}
        for run, target in ((web, "web"), (api, "api"), (slow, "slow")):
            assert results[run.id].text == f"deployed {target} on a"
            first = chain(client, run)
            assert await pinned_to(first) == (PINNED, "a") and await model_turn_summaries(first) == ["model turn 1"]
            assert await pinned_to(run) == (PINNED, "b") and await started_by_a_move(run)
            assert await model_turn_summaries(run) == ["model turn 2 (code b)"]
        assert results[racy.id].text == "deployed racy on a"  # b's or a's model turn: either way once, on a

        # The wake for idle parked runs of docs/deploys.md: every run still pinned to a gets an empty decision list.
        wake = f'TemporalWorkerDeploymentVersion="{name}:a" AND ExecutionStatus="Running"'
        await temporal_ok(
            address, "workflow", "signal", "--query", wake, "--name", "tool_approval", "--input", "[]", "--yes"
        )
        into = await moved(client, idle, 60)
        assert await wait_pending(into) == [idle_request]  # the same call, deadline and binding
        assert calls(workspace)["idle on a"] == 0
        await into.execute_update("submit_tool_approval", approve)
        assert (await into.result()).text == "deployed idle on b"
        assert await model_turn_summaries(into) == ["model turn 2 (code b)"]

        assert calls(workspace) == Counter(["slow on a", "racy on a", "web on a", "api on a", "idle on b"])
        for result in (*results.values(), await into.result()):
            assert [r.outcome for r in result.approvals] == ["approved"] and verify_chain(result.approvals) == []

        async def drained() -> None:
            assert await drainage(address, name, "a") == "drained"

        await assert_eventually(drained, 90)
        assert await a.terminate() == 0 and b.popen.poll() is None
