"""Record the histories tests/test_replay.py replays: one command, every shape in manifest.json.

    python -m tests.histories.record            # every current shape (~2 min; v1/, v2/ stay as they are)
    python -m tests.histories.record verified   # only these (the others stay as committed)

Each shape is a recorder below (`@shape("name", server=...)`) and an entry of
`manifest.json` (what the run does, which code recorded it, whether it must resume).
Recording writes `<name>.json` and updates the entry. Rerun a shape only after a
deliberate change of the history it produces (docs/deploys.md, "Changing workflow code"): a
history that no longer replays otherwise means the change breaks runs in flight.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from google.protobuf.message import Message
from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.api.failure.v1 import Failure
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle, WorkflowHistory, WorkflowUpdateFailedError
from temporalio.common import RawValue
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

from signoff.activities.notify import NotifyConfig
from signoff.agent.builder import AgentBuilder, ChatClientAgent
from signoff.approval.identity import ApproverKeys, issue_token
from signoff.approval.policy import ApprovalPolicy, AutoMode, CriteriaSet, OnTimeout, PolicyBook
from signoff.approval.signatures import DelegationClaim
from signoff.config.environment import Environment
from signoff.contract import RunOptions
from signoff.loop.limits import Limits
from signoff.messages import ChatMessage, ToolCall
from signoff.operator.stream import follow
from signoff.runtime.connection import ConnectionSettings, connect
from signoff.runtime.deployment import DeploymentSettings
from signoff.runtime.devserver import find_temporal_binary
from signoff.runtime.fingerprint import workflow_code
from signoff.runtime.storage import close_storage, data_converter
from signoff.signing.keys import SigningKey
from signoff.testing import Script
from signoff.tools.mcp import MCPServer
from signoff.workflows.feed import start_attributes
from tests.approver_keys import signed, write_secret
from tests.conftest import start_dev_server
from tests.governance import deploy, ops_agent, restart, turns, wait_event
from tests.helpers import (
    Reply,
    ScriptedModelServer,
    ScriptedRequest,
    agents_for,
    assert_eventually,
    call,
    running_worker,
    start_run,
    wait_pending,
)
from tests.histories.manifest import HERE, Manifest, private_copy
from tests.mcp_helpers import mcp_call, stdio
from tests.processes import free_port
from tests.receiver import Receiver
from tests.versioning import chain, make_current, moved

SERVERS: dict[str, tuple[str, ...]] = {
    "early_can": ("--dynamic-config-value", "limit.historyCount.suggestContinueAsNew=40"),
    "earlier_can": ("--dynamic-config-value", "limit.historyCount.suggestContinueAsNew=20"),  # one round crosses it
    "plain": (),  # no early continue-as-new: these runs are longer
}
BUSY = (EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED)
ENDED = (
    EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
    EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED,
    EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT,
)
STATE_KEY = b"s" * 48
"""The state key of the worker recording the sealed shapes (a test key: it protects nothing)."""
STORED_OUTPUT = "head -c 6000 /dev/zero | tr '\\0' x"
"""Its output is over the stored shape's threshold, so it goes to the payload store."""


@dataclass
class Rig:
    """What a recorder gets: the server's client, a scratch workspace, an approver key."""

    client: Client
    workspace: Path
    key: Path

    @property
    def address(self) -> str:
        return self.client.service_client.config.target_host

    @asynccontextmanager
    async def worker(
        self,
        script: Script,
        agents: dict[str, ChatClientAgent] | None = None,
        client: Client | None = None,
        queue: str | None = None,
        **options: Any,
    ) -> AsyncIterator[str]:
        """A worker on `queue` (default a fresh one; its name is yielded) with the scripted model."""
        queue = queue or f"record-{uuid.uuid4()}"
        with ScriptedModelServer(script) as model:
            async with running_worker(
                client or self.client, queue, model, agents or agents_for(self.workspace), **options
            ):
                yield queue


Recorder = Callable[[Rig], Awaitable[dict[str, WorkflowHistory]]]
RECORDERS: dict[str, tuple[str, Recorder]] = {}


def shape(*names: str, server: str = "plain") -> Callable[[Recorder], Recorder]:
    """Register a recorder of the histories `names` (it returns them by name)."""

    def register(recorder: Recorder) -> Recorder:
        for name in names:
            RECORDERS[name] = (server, recorder)
        return recorder

    return register


def script(request: ScriptedRequest) -> Reply:
    """The default agent's conversation: a gated and an auto call; for `cycle`, auto calls
    for 24 rounds (a history long enough to continue as new between rounds)."""
    prompt = next(m.content or "" for m in request.messages if m.role == "user")
    if prompt == "cycle":
        return (
            Reply.tool_calls([call("list_dir", f"call_r{request.round}")])
            if request.round <= 24
            else Reply.text("done")
        )
    if request.last.role == "user":
        return Reply.tool_calls([call("run_command", "call_1", command="echo hi"), call("list_dir", "call_2")])
    return Reply.text("done")


async def parked(handle: WorkflowHandle) -> WorkflowHistory:
    """The history once the run waits for a person: every activity done, its last task completed."""

    async def waiting() -> WorkflowHistory:
        history = await handle.fetch_history()
        kinds = [e.event_type for e in history.events]
        tasks = [i for i, k in enumerate(kinds) if k == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED]
        assert tasks and not any(k in BUSY for k in kinds[tasks[-1] :]), "the run is not idle yet"
        assert kinds.count(EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) == sum(k in ENDED for k in kinds)
        return history

    return await assert_eventually(waiting, 30)


async def finished(handle: WorkflowHandle) -> WorkflowHistory:
    with contextlib.suppress(WorkflowFailureError):  # a failed run's history is as good
        await handle.result()
    return await handle.fetch_history()


def approval(call_id: str, token: str | None = None, **fields: Any) -> dict[str, Any]:
    return {"call_id": call_id, "approved": True, **({"token": token} if token else {}), **fields}


# --- the default agent -------------------------------------------------------------------


@shape(
    "approved",
    "denied",
    "timed_out",
    "continued_as_new",
    "continued_as_new_next",
    "continued_between_rounds",
    "parked",
    server="early_can",
)
async def record_original(rig: Rig) -> dict[str, WorkflowHistory]:
    """A gated call approved by update; denied by signal (after a signal that is not a
    decision); timed out; a run that continues as new while it waits (both runs of the
    chain) and one that does between rounds; one still waiting when saved."""
    out = {}
    async with rig.worker(script) as queue:
        run = await start_run(rig.client, queue, "approve")
        await wait_pending(run)
        await run.execute_update("submit_tool_approval", approval("call_1", approver="a"))
        out["approved"] = await finished(run)

        run = await start_run(rig.client, queue, "deny")
        await wait_pending(run)
        await run.signal("tool_approval", {"call_id": "garbage"})
        await run.signal("tool_approval", {"call_id": "*", "approved": False, "reason": "no"})
        out["denied"] = await finished(run)

        run = await start_run(rig.client, queue, "wait", options=RunOptions(approval_timeout_seconds=1))
        out["timed_out"] = await finished(run)

        out |= await continued_while_waiting(rig.client, queue)
        cycled = await start_run(rig.client, queue, "cycle", options=RunOptions(max_rounds=30))
        await finished(rig.client.get_workflow_handle(cycled.id))
        out["continued_between_rounds"] = await rig.client.get_workflow_handle(
            cycled.id, run_id=cycled.result_run_id
        ).fetch_history()

        run = await start_run(rig.client, queue, "park")
        out["parked"] = await parked(run)  # still waiting: what `signoff replay --query` fetches
        await run.terminate("recorded")
    return out


@shape("compact_payloads", "compact_continued", "compact_continued_next", server="early_can")
async def record_compact(rig: Rig) -> dict[str, WorkflowHistory]:
    """Payloads without their defaults (`signoff.text.wire`): an approved run, and a run that
    continues as new while it waits (the state it carries written compact) and is approved."""
    async with rig.worker(script) as queue:
        run = await start_run(rig.client, queue, "approve")
        await wait_pending(run)
        await run.execute_update("submit_tool_approval", approval("call_1", approver="a"))
        out = {"compact_payloads": await finished(run)}
        chain = await continued_while_waiting(rig.client, queue)
    return out | {
        "compact_continued": chain["continued_as_new"],
        "compact_continued_next": chain["continued_as_new_next"],
    }


async def continued_while_waiting(client: Client, queue: str) -> dict[str, WorkflowHistory]:
    """Signals that are no decision grow the history of a waiting run until the server
    suggests continue-as-new; the run continues, carrying its pending call, and is approved."""
    run = await start_run(client, queue, "wait long")
    await wait_pending(run)
    latest = client.get_workflow_handle(run.id)

    async def continued() -> None:
        await latest.signal("tool_approval", {"call_id": "nothing"})
        assert (await latest.describe()).run_id != run.result_run_id

    await assert_eventually(continued, 30)
    await wait_pending(latest)
    await latest.execute_update("submit_tool_approval", approval("call_1"))
    return {
        "continued_as_new_next": await finished(latest),
        "continued_as_new": await client.get_workflow_handle(run.id, run_id=run.result_run_id).fetch_history(),
    }


@shape("sealed_continued_as_new", "continued_run", server="earlier_can")
async def record_sealed(rig: Rig) -> dict[str, WorkflowHistory]:
    """A worker with a state key: a run whose gated call is approved, then continues as new
    before its next model turn, sealing the state it carries; and the run it starts, which
    has that seal checked before it adopts the state."""
    async with rig.worker(script, state_key=STATE_KEY) as queue:
        run = await start_run(rig.client, queue, "seal")
        await wait_pending(run)
        await run.execute_update("submit_tool_approval", approval("*"))
        continued = await finished(rig.client.get_workflow_handle(run.id))
        first = await rig.client.get_workflow_handle(run.id, run_id=run.result_run_id).fetch_history()
    return {"sealed_continued_as_new": first, "continued_run": continued}


@shape("cancelled", "resumed", "invalid_input", "answered_twice", "parallel_limit")
async def record_lifecycle(rig: Rig) -> dict[str, WorkflowHistory]:
    """Cancelled while waiting; a transcript resumed with the input's decisions (the
    prepare activity); a start that is not valid input; a start transcript answering a call
    twice; more calls than may run at once."""
    out = {}
    async with rig.worker(script) as queue:
        run = await start_run(rig.client, queue, "cancel")
        await wait_pending(run)
        await run.cancel()
        out["cancelled"] = await finished(run)

        transcript = [
            ChatMessage(role="user", content="resume"),
            ChatMessage(role="assistant", tool_calls=[call("run_command", "call_1", command="echo hi")]),
        ]
        options = RunOptions(tool_approval_responses=[{"call_id": "call_1", "approved": True, "approver": "a"}])
        run = await start_run(rig.client, queue, None, messages=transcript, options=options)
        out["resumed"] = await finished(run)

        run = await rig.client.start_workflow(
            "AgentRun", {"prompt": "x", "bogus": 1}, id=f"run-{uuid.uuid4()}", task_queue=queue
        )
        out["invalid_input"] = await finished(run)

        twice = [*transcript, *[ChatMessage(role="tool", content="done", tool_call_id="call_1")] * 2]
        out["answered_twice"] = await finished(await start_run(rig.client, queue, None, messages=twice))

    many = turns([call("list_dir", f"call_{i}") for i in range(1, 4)])
    async with rig.worker(many, limits=Limits(max_parallel_tools=2)) as queue:
        out["parallel_limit"] = await finished(await start_run(rig.client, queue, "three at once"))
    return out


def strangers_script(request: ScriptedRequest) -> Reply:
    """A model whose first answer has ids twice, `*`, NaN arguments and more calls than the per-turn limit."""
    if request.round > 1:
        return Reply.text("done")
    odd = [
        ToolCall(id="dup", name="run_command", arguments='{"command": "echo 1"}'),
        ToolCall(id="dup", name="run_command", arguments='{"command": "echo 2"}'),
        ToolCall(id="*", name="list_dir", arguments="{}"),
        ToolCall(id="nan", name="run_command", arguments='{"command": NaN}'),
    ]
    return Reply.tool_calls(odd + [ToolCall(id=f"c{i}", name="list_dir", arguments="{}") for i in range(70)], chunks=1)


@shape("strangers", "paused_deadline")
async def record_strangers(rig: Rig) -> dict[str, WorkflowHistory]:
    """What strangers send (issue 16): a hostile model answer (ids twice, `*`, NaN, 74 calls)
    and forged decisions (a payload falsely marked as a stored reference, a flood of 101)
    before real ones; and a deadline that passes while the run is paused, a decision sent
    meanwhile (applied first when it is unpaused)."""
    out = {}
    async with rig.worker(strangers_script) as queue:
        run = await start_run(rig.client, queue, "strangers")
        pending = await wait_pending(run, 2)
        marked = Payload(
            metadata={"encoding": b"json/plain", "__temporal_external_storage_reference": b"true"}, data=b"{}"
        )
        await run.signal("tool_approval", RawValue(marked))
        await run.signal("tool_approval", [{"call_id": "x", "approved": True}] * 101)
        await run.signal("tool_approval", {"call_id": pending[0]["call_id"], "approved": True})
        await run.execute_update("submit_tool_approval", {"call_id": "*", "approved": False})
        out["strangers"] = await finished(run)
    async with rig.worker(script) as queue:
        run = await start_run(rig.client, queue, "pause", options=RunOptions(approval_timeout_seconds=2))
        await wait_pending(run)
        await temporal_cli(rig.address, "workflow", "pause", "--workflow-id", run.id)
        await asyncio.sleep(3)
        await run.signal("tool_approval", {"call_id": "call_1", "approved": True})
        await temporal_cli(rig.address, "workflow", "unpause", "--workflow-id", run.id)
        out["paused_deadline"] = await finished(run)
    return out


async def temporal_cli(address: str, *args: str) -> None:
    process = await asyncio.create_subprocess_exec(str(find_temporal_binary()), *args, "--address", address)
    assert await process.wait() == 0


# --- Worker Versioning: runs that move to the deployment's new version ----------------------


@shape("moved_between_rounds", "moved_while_waiting", "moved_into")
async def record_moved(rig: Rig) -> dict[str, WorkflowHistory]:
    """Two versions of one Worker Deployment on one task queue, `a` current, then `b`: a run
    parked on `a` and approved after the switch (its call runs on `a`, then the run continues
    as new with AUTO_UPGRADE before its next model turn, workflows/upgrade.py); a run parked on
    `a` woken undecided by the wake of docs/deploys.md (an empty list of decisions), which moves at once,
    and the run it moved into on `b`, started with the call pending, then approved."""
    deployment, queue = f"record-{uuid.uuid4().hex[:8]}", f"record-{uuid.uuid4()}"

    def version(build: str) -> contextlib.AbstractAsyncContextManager[str]:
        return rig.worker(script, queue=queue, deployment=DeploymentSettings(deployment, build))

    out = {}
    async with version("a"):
        await make_current(rig.client, deployment, "a")
        approved, woken = await start_run(rig.client, queue, "approve"), await start_run(rig.client, queue, "wake")
        for run in (approved, woken):
            await wait_pending(run)
        async with version("b"):
            await make_current(rig.client, deployment, "b")
            await approved.execute_update("submit_tool_approval", approval("call_1", approver="a"))
            await finished(approved)
            out["moved_between_rounds"] = await chain(rig.client, approved).fetch_history()

            await woken.signal("tool_approval", [])
            into = await moved(rig.client, woken)
            await wait_pending(into)
            await into.execute_update("submit_tool_approval", approval("call_1", approver="a"))
            out["moved_into"] = await finished(into)
            out["moved_while_waiting"] = await chain(rig.client, woken).fetch_history()
    return out


# --- governance ----------------------------------------------------------------------------


@shape("signed")
async def record_governance(rig: Rig) -> dict[str, WorkflowHistory]:
    """Signed decisions (bound tokens) under a verified policy: a plain token refused, a
    signed approval whose grant a later call uses, a reminder, a deadline approving, notices
    (one channel failing). The v2 shapes `verified` and `timeout_grant` (plain tokens under a
    verified policy) have no recorder: this code refuses what they did (manifest.json)."""
    verified = ApprovalPolicy(verified=True, approvers=("group:sre",))
    hurried = ApprovalPolicy(timeout_seconds=2, on_timeout=OnTimeout.APPROVE, remind_after_seconds=(1,))
    model = turns([deploy("call_1")], [deploy("call_2", "api"), restart("call_r")])
    with Receiver() as channel, Receiver(status=500) as broken:
        notify = NotifyConfig(urls=(channel.url, broken.url), secret=b"history-secret", retry_seconds=1)
        agents = {"ops": ops_agent(deploy=verified, restart=hurried)}
        async with rig.worker(model, agents, verifier=ApproverKeys.load(rig.key), notify=notify) as queue:
            # Signed decisions name the workflow id; the run is started under the file's name,
            # which replay falls back to when a history's start event does not say it.
            run = await start_run(rig.client, queue, "deploy", agent="ops", id="signed")
            (first,) = await wait_pending(run)
            plain = approval("call_1", issue_token(rig.key, "alice", ["sre"]))
            with contextlib.suppress(WorkflowUpdateFailedError):  # a plain token: refused, recorded
                await run.execute_update("submit_tool_approval", plain)
            grant = {"match": "tool", "ttl_seconds": 3600}
            await run.execute_update("submit_tool_approval", signed(rig.key, first, "alice", "sre", grant=grant))
            return {"signed": await finished(run)}  # call_2 runs on the grant; the restart call's deadline approves it


@shape("reset")
async def record_reset(rig: Rig) -> dict[str, WorkflowHistory]:
    """A verified run reset (the `temporal` CLI) to before its approval, after the call ran: the
    model asks again, the old token is refused (a new request instance), a new one approves it.
    Its requests' `binding.request` comes from the run id, which a reset changes, so the history
    replays only as its own run (`signoff.runtime.replay.as_its_own_run`)."""
    verified = ApprovalPolicy(verified=True, approvers=("group:sre",))
    model = turns([deploy("call_1")])
    async with rig.worker(model, {"ops": ops_agent(deploy=verified)}, verifier=ApproverKeys.load(rig.key)) as queue:
        run = await start_run(rig.client, queue, "deploy", agent="ops", id="reset")
        (first,) = await wait_pending(run)
        old = signed(rig.key, first, "alice", "sre")
        await run.execute_update("submit_tool_approval", old)
        await run.result()
        await temporal_cli(
            rig.address, "workflow", "reset", "-w", run.id, "--type", "FirstWorkflowTask", "--reason", "record"
        )
        reset = rig.client.get_workflow_handle(run.id)
        (again,) = await wait_pending(reset)
        with contextlib.suppress(WorkflowUpdateFailedError):  # the old token: refused, nothing recorded
            await reset.execute_update("submit_tool_approval", old)
        await reset.execute_update("submit_tool_approval", signed(rig.key, again, "alice", "sre"))
        return {"reset": await finished(reset)}


@shape("responded")
async def record_answers(rig: Rig) -> dict[str, WorkflowHistory]:
    """People answer, not only approve (issue 32): a call answered with its result (`respond`),
    never run, beside a call approved with edited arguments (its tool message says so)."""
    model = turns([deploy("call_1"), restart("call_2")])
    respond = ApprovalPolicy(respond=True)
    async with rig.worker(model, {"ops": ops_agent(deploy=respond)}) as queue:
        run = await start_run(rig.client, queue, "deploy", agent="ops")
        await wait_pending(run, 2)
        answer = {"call_id": "call_1", "respond": "deployed by hand", "approver": "alice"}
        await run.execute_update("submit_tool_approval", answer)
        edit = approval("call_2", arguments={"service": "cache"}, approver="bob")
        await run.execute_update("submit_tool_approval", edit)
        return {"responded": await finished(run)}


@shape("rearmed")
async def record_rearmed(rig: Rig) -> dict[str, WorkflowHistory]:
    """A held call (`on_timeout = "hold"`) expires, the run stays parked; it is re-armed with a
    new deadline and binding (`rearm_tool_call`), approved, and runs once."""
    hold = ApprovalPolicy(timeout_seconds=1, on_timeout=OnTimeout.HOLD)
    async with rig.worker(turns([deploy("call_1")]), {"ops": ops_agent(deploy=hold)}) as queue:
        run = await start_run(rig.client, queue, "deploy", agent="ops")
        await wait_event(run, "approval_decision")  # the expiry
        await run.execute_update("rearm_tool_call", {"call_id": "call_1", "deadline_seconds": 3600})
        await run.execute_update("submit_tool_approval", approval("call_1", approver="alice"))
        return {"rearmed": await finished(run)}


@shape("delegated")
async def record_delegated(rig: Rig) -> dict[str, WorkflowHistory]:
    """A verified deploy approved by bob for alice, under alice's signed delegation (the
    delegation verified by `signoff.identify`, recorded; the audit names both), sent by signal."""
    verified = ApprovalPolicy(verified=True, approvers=("alice",))
    agents = {"ops": ops_agent(deploy=verified)}
    async with rig.worker(turns([deploy("call_1")]), agents, verifier=ApproverKeys.load(rig.key)) as queue:
        run = await start_run(rig.client, queue, "deploy", agent="ops", id="delegated")
        (first,) = await wait_pending(run)
        now = datetime.now(UTC)
        claim = DelegationClaim(delegate="bob", tools=("deploy",))
        given = SigningKey.load(rig.key).sign(claim, "alice", ttl=timedelta(hours=8), now=now, not_before=now)
        await run.signal("tool_approval", {**signed(rig.key, first, "bob"), "delegation": given})  # the patch's marker
        return {"delegated": await finished(run)}


@shape("quorum", "requester", "fail_run")
async def record_policies(rig: Rig) -> dict[str, WorkflowHistory]:
    """`quorum`: two votes, a deadline moved, an escalation. `requester`: a verified
    requester token (checked at start) under separate_requester. `fail_run`: a deadline
    that fails the run."""
    out = {}
    quorum = ApprovalPolicy(
        approvers=("alice", "bob"), quorum=2, timeout_seconds=60, escalate_after_seconds=1, escalate_to=("carol",)
    )
    agents = {"ops": ops_agent(deploy=quorum, restart=ApprovalPolicy(timeout_seconds=1, on_timeout=OnTimeout.FAIL_RUN))}
    async with rig.worker(turns([deploy("call_1")]), agents, verifier=ApproverKeys.load(rig.key)) as queue:
        run = await start_run(rig.client, queue, "two of them", agent="ops")
        await wait_pending(run)
        await run.execute_update("extend_deadline", {"call_id": "call_1", "seconds": 600, "approver": "alice"})
        await run.execute_update("submit_tool_approval", approval("call_1", approver="alice"))
        await wait_event(run, "approval_escalated")
        await run.execute_update("submit_tool_approval", approval("call_1", approver="carol"))
        out["quorum"] = await finished(run)

    apart = {"ops": ops_agent(deploy=ApprovalPolicy(separate_requester=True))}
    async with rig.worker(turns([deploy("call_1")]), apart, verifier=ApproverKeys.load(rig.key)) as queue:
        token = issue_token(rig.key, "rita")
        run = await start_run(rig.client, queue, "mine", agent="ops", options=RunOptions(requester_token=token))
        await wait_pending(run)
        await run.execute_update("submit_tool_approval", approval("call_1", approver="alice"))
        out["requester"] = await finished(run)

    async with rig.worker(turns([restart("call_1")]), agents, verifier=ApproverKeys.load(rig.key)) as queue:
        out["fail_run"] = await finished(await start_run(rig.client, queue, "too late", agent="ops"))
    return out


@shape("auto_mode", "similar_grant")
async def record_auto(rig: Rig) -> dict[str, WorkflowHistory]:
    """`auto_mode`: auto mode's evaluator (the scripted model) approves a deploy without a person
    and escalates a restart, which a person then approves. `similar_grant`: a run_command
    approved with a similar grant, which approves the next call its pattern covers."""
    out = {}
    policy = ApprovalPolicy(auto=AutoMode(criteria="ops"))
    agents = {"ops": ops_agent(deploy=policy, restart=policy)}
    book = PolicyBook(criteria={"ops": CriteriaSet(effect="deploys", approve_when=("a deploy",))})
    plan = turns([deploy("call_1"), restart("call_2")])

    def model(request: ScriptedRequest) -> Reply:
        if "response_format" not in request.raw:
            return plan(request)
        sure = "Tool: deploy" in (request.last.content or "")
        answer = {"verdict": "approve" if sure else "escalate", "confidence": 0.95, "reasoning": "by the criteria"}
        return Reply.text(json.dumps(answer))

    async with rig.worker(model, agents, policies=book) as queue:
        run = await start_run(rig.client, queue, "auto", agent="ops")
        await wait_event(run, "auto_evaluation", 2)
        await wait_pending(run)
        await run.execute_update("submit_tool_approval", approval("call_2", approver="alice"))
        out["auto_mode"] = await finished(run)

    def commands(request: ScriptedRequest) -> Reply:
        if request.round <= 2:
            return Reply.tool_calls([call("run_command", f"call_{request.round}", command=f"echo {request.round}")])
        return Reply.text("done")

    async with rig.worker(commands) as queue:
        run = await start_run(rig.client, queue, "similar")
        await wait_pending(run)
        similar = approval("call_1", approver="alice", grant={"match": "similar"})
        await run.execute_update("submit_tool_approval", similar)
        out["similar_grant"] = await finished(run)
    return out


# --- tools from MCP servers ----------------------------------------------------------------


@shape("mcp")
async def record_mcp(rig: Rig) -> dict[str, WorkflowHistory]:
    """A server that cannot start (an event), a trusted read run at once, a write approved."""
    notes = rig.workspace / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text("note a")
    broken = MCPServer(name="broken", command="/no/such/mcp-server")
    agent = AgentBuilder("notes").with_mcp_servers([broken, stdio(notes, trusted=True)]).build()
    rounds = turns(
        [mcp_call("read_note", "call_1", name="a.txt"), mcp_call("write_note", "call_2", name="b.txt", text="hi")]
    )
    async with rig.worker(rounds, {"notes": agent}) as queue:
        run = await start_run(rig.client, queue, "copy", agent="notes")
        await wait_pending(run)
        await run.execute_update("submit_tool_approval", approval("call_2"))
        return {"mcp": await finished(run)}


@shape("mcp_input")
async def record_mcp_input(rig: Rig) -> dict[str, WorkflowHistory]:
    """A server asks a question in the middle of an approved call (input_required): the run
    parks with a request of kind input, a person answers, the answer goes back (signoff.tool_answer)."""
    notes = rig.workspace / "notes"
    notes.mkdir(exist_ok=True)
    (notes / "a.txt").write_text("note a")
    agent = AgentBuilder("notes").with_mcp_servers([stdio(notes)]).build()
    async with rig.worker(turns([mcp_call("erase_note", "call_1", name="a.txt")]), {"notes": agent}) as queue:
        run = await start_run(rig.client, queue, "erase", agent="notes")
        await wait_pending(run)
        await run.execute_update("submit_tool_approval", approval("call_1"))

        async def asked() -> None:
            (request,) = await run.query("pending_approvals")
            assert request.get("kind") == "input", request

        await assert_eventually(asked, timeout=30)
        answer = {"call_id": "call_1", "answer": {"confirm": True, "why": "recorded"}, "approver": "alice"}
        await run.execute_update("submit_tool_approval", answer)
        return {"mcp_input": await finished(run)}


# --- how the worker runs: metrics, encryption, the payload store ---------------------------


@shape("agent_at_start")
async def record_agent_at_start(rig: Rig) -> dict[str, WorkflowHistory]:
    """An approved run started as signoff's clients start one, `SignoffAgent` given at the start
    (`feed.start_attributes`): the run writes no upsert of its own for it."""
    async with rig.worker(script) as queue:
        run = await start_run(rig.client, queue, "approve", search_attributes=start_attributes("default"))
        await wait_pending(run)
        await run.execute_update("submit_tool_approval", approval("call_1", approver="a"))
        return {"agent_at_start": await finished(run)}


@shape("metrics")
async def record_metrics(rig: Rig) -> dict[str, WorkflowHistory]:
    """An approved run on a worker serving Prometheus metrics (the workflow records them)."""
    runtime = Runtime(telemetry=TelemetryConfig(metrics=PrometheusConfig(bind_address=f"127.0.0.1:{free_port()}")))
    client = await Client.connect(rig.address, data_converter=data_converter(None), runtime=runtime)
    async with rig.worker(script, client=client) as queue:
        run = await start_run(rig.client, queue, "measured")
        await wait_pending(run)
        await run.execute_update("submit_tool_approval", approval("call_1"))
        return {"metrics": await finished(run)}


@shape("encrypted", "stored")
async def record_encrypted(rig: Rig) -> dict[str, WorkflowHistory]:
    """Runs under SIGNOFF_CODEC_KEYS (the test key `codec.keys`); `stored` also keeps its
    large tool output in the payload store `payloads/` (ciphertext, committed with it)."""
    out = {}
    env = {"TEMPORAL_ADDRESS": rig.address, "SIGNOFF_CODEC_KEYS": str(private_copy(HERE / "codec.keys"))}
    settings = ConnectionSettings.load(Environment(env))
    async with rig.worker(script, client=await connect(settings, worker=True)) as queue:
        client = await connect(settings)
        run = await start_run(client, queue, "secret")
        await wait_pending(run)
        await run.execute_update("submit_tool_approval", approval("call_1"))
        out["encrypted"] = await finished(run)

    store = HERE / "payloads"
    shutil.rmtree(store, ignore_errors=True)  # content-addressed: only this run's payloads stay
    env |= {"SIGNOFF_PAYLOAD_STORE": store.absolute().as_uri(), "SIGNOFF_PAYLOAD_THRESHOLD": "4096"}
    settings = ConnectionSettings.load(Environment(env))
    large = turns([call("run_command", "call_1", command=STORED_OUTPUT)])
    worker_client, client = await connect(settings, worker=True), await connect(settings)
    async with rig.worker(large, client=worker_client) as queue:
        run = await start_run(client, queue, "large")
        await wait_pending(run)
        await run.execute_update("submit_tool_approval", approval("call_1"))
        out["stored"] = await finished(run)
    await close_storage(client.data_converter)
    return out


# --- sub-agents ----------------------------------------------------------------------------


@shape("sub_agent_parent", "sub_agent_child")
async def record_sub_agents(rig: Rig) -> dict[str, WorkflowHistory]:
    """A parent delegating to a sub-agent whose run_command (gated by the parent's policy) waits:
    listed at the top, approved by an update to the top run routed to the child, run once there."""
    from tests.test_sub_agents import agents, command
    from tests.test_sub_agents import script as delegating

    async with rig.worker(delegating([command("call_c1")]), agents([])) as queue:
        run = await start_run(rig.client, queue, "delegate", agent="lead")
        child = f"{run.id}--call_p1"
        await wait_pending(run)
        await run.execute_update("submit_tool_approval", approval("call_c1", workflow_id=child))
        parent_history = await finished(run)
        return {
            "sub_agent_parent": parent_history,
            "sub_agent_child": await finished(rig.client.get_workflow_handle(child)),
        }


# --- recording ---------------------------------------------------------------------------


# --- sessions ------------------------------------------------------------------------------


def session_script(request: ScriptedRequest) -> Reply:
    """A turn `run: CMD` asks for run_command (gated); after a tool, report; else echo."""
    last = request.last
    if last.role == "tool":
        return Reply.text(f"ran: {last.content}")
    if (last.content or "").startswith("run: "):
        return Reply(
            content="on it", calls=(call("run_command", f"call_r{request.round}", command=(last.content or "")[5:]),)
        )
    return Reply.text(f"heard: {last.content}")


async def session_turn_settled(handle: WorkflowHandle, turn: int) -> None:
    async def completed() -> None:
        view = await handle.query("session")
        assert (view["turn"], view["status"]) == (turn, "Completed"), view

    await assert_eventually(completed, 30)


@shape("session", server="plain")
async def record_session(rig: Rig) -> dict[str, WorkflowHistory]:
    """A session (options.session) started with a prompt: a message answered; a turn that parks
    (send_message answers AwaitingApproval), approved, which then answers; a refused message
    (validator: nothing recorded); end_session."""
    async with rig.worker(session_script) as queue:
        run = await start_run(rig.client, queue, "hello", options=RunOptions(session=True))
        await session_turn_settled(run, 1)
        await run.execute_update("send_message", {"text": "how are you"})
        parked = await run.execute_update("send_message", {"text": "run: echo hi"})
        with contextlib.suppress(WorkflowUpdateFailedError):
            await run.execute_update("send_message", {"text": ""})
        await run.execute_update("submit_tool_approval", approval(parked["pending"][0]["call_id"]))
        await session_turn_settled(run, 3)
        await run.execute_update("end_session", {})
        return {"session": await finished(run)}


async def send_until_continued(latest: WorkflowHandle, first_run_id: str | None) -> None:
    """Send a session message a turn at a time until the session continues as new. The
    continue-as-new comes once the turn's task completes and records no event of its own to wait
    on in this run, so each turn is followed by a short pause before asking again."""
    turn = 0
    while (await latest.describe()).run_id == first_run_id:
        turn += 1
        await latest.execute_update("send_message", {"text": f"message {turn}"})
        await asyncio.sleep(0.2)


@shape("session_continued", "session_continued_next", server="early_can")
async def record_session_continued(rig: Rig) -> dict[str, WorkflowHistory]:
    """A session whose history grows past the server's suggestion between turns: it continues as
    new while it waits for a message, carrying its transcript and turns; the next run takes the
    next message and is ended."""
    async with rig.worker(session_script) as queue:
        run = await start_run(rig.client, queue, None, options=RunOptions(session=True))
        latest = rig.client.get_workflow_handle(run.id)
        await send_until_continued(latest, run.result_run_id)
        await latest.execute_update("send_message", {"text": "after"})
        await latest.execute_update("end_session", {})
        return {
            "session_continued": await rig.client.get_workflow_handle(run.id, run_id=run.result_run_id).fetch_history(),
            "session_continued_next": await finished(latest),
        }


# --- Workflow Streams ------------------------------------------------------------------------


@shape("streamed", "streamed_next", server="early_can")
async def record_streamed(rig: Rig) -> dict[str, WorkflowHistory]:
    """A session followed by a reader of its Workflow Stream (tokens from the chat activity's
    signals, events from the workflow, the reader's polls as updates) that continues as new
    between turns, carrying the stream's state; the next run takes a message and is ended."""

    def slow_script(request: ScriptedRequest) -> Reply:
        return Reply(content=f"heard: {request.last.content} " + "and more " * 8, chunks=12, pause=0.01)

    async with rig.worker(slow_script) as queue:
        run = await start_run(rig.client, queue, None, options=RunOptions(session=True))
        latest = rig.client.get_workflow_handle(run.id)

        async def read() -> int:
            return len([item async for item in follow(rig.client, run.id)])

        reader = asyncio.ensure_future(read())
        await send_until_continued(latest, run.result_run_id)
        await latest.execute_update("send_message", {"text": "after"})
        await latest.execute_update("end_session", {})
        await asyncio.wait_for(reader, 30)
        return {
            "streamed": await rig.client.get_workflow_handle(run.id, run_id=run.result_run_id).fetch_history(),
            "streamed_next": await finished(latest),
        }


def without_stack_traces(history: WorkflowHistory) -> WorkflowHistory:
    """The history with every failure's stack trace emptied: they name this machine's paths, and
    replay never reads them (a failure's type, message and cause are kept)."""
    for event in history.events:
        _clear_traces(event)
    return history


def _clear_traces(message: Message) -> None:
    if isinstance(message, Failure):
        message.stack_trace = ""
    for descriptor, value in message.ListFields():
        if descriptor.message_type is None or descriptor.message_type.GetOptions().map_entry:
            continue
        for item in [value] if isinstance(value, Message) else value:
            _clear_traces(item)


def commit() -> str:
    done = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=HERE, capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


async def main(names: Collection[str]) -> None:
    manifest = Manifest.load()
    unknown = set(names) - set(RECORDERS)
    if unknown:
        sys.exit(f"no recorder for {', '.join(sorted(unknown))}; shapes: {', '.join(sorted(RECORDERS))}")
    wanted = set(names) or set(RECORDERS)
    recorders = {recorder: server for name, (server, recorder) in RECORDERS.items() if name in wanted}
    code, made_by = workflow_code().fingerprint, commit()
    with tempfile.TemporaryDirectory() as scratch:
        for server in SERVERS:
            mine = [r for r, s in recorders.items() if s == server]
            if not mine:
                continue
            env = await start_dev_server(*SERVERS[server])
            try:
                for recorder in mine:
                    workspace = Path(tempfile.mkdtemp(dir=scratch))
                    write_secret(workspace / "approvers.key")
                    recorded = await recorder(Rig(env.client, workspace, workspace / "approvers.key"))
                    for name, history in recorded.items():
                        if name in wanted:
                            (HERE / f"{name}.json").write_text(without_stack_traces(history).to_json())
                            manifest.recorded(name, len(history.events), code, made_by)
                            print(f"recorded {name}: {len(history.events)} events")
            finally:
                await env.shutdown()
    manifest.save()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
