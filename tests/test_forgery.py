"""A sign-off is a signature: forged workflows run nothing nobody signed (issue 15, findings 1 and 5).

Each test is an attack on the real dev server by someone who can reach the frontend (the
default for the dev server and docker-compose, which have no authorizer): a workflow of
their own continuing *into* `AgentRun` with made-up state; a workflow of their own named
`AgentRun` on the victim's task queue, handing `signoff.tool` a forged approval and
whatever tokens it can find; a signed decision copied from another run's history. The
victim's policy for `run_command`: verified approvers, quorum 2, separate_requester. The
marker file a forged `run_command` would create must never appear.
"""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio import workflow
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ActivityError
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from signoff.activities import AgentActivities
from signoff.activities.agents import ServedAgents
from signoff.activities.models import Requester
from signoff.agent.builder import AgentBuilder
from signoff.approval import audit
from signoff.approval.digest import arguments_digest
from signoff.approval.identity import ApproverKeys, issue_token
from signoff.approval.policy import PolicyBook
from signoff.approval.requests import ApprovalRecord, Binding, ToolApprovalResponse
from signoff.approval.signatures import decision_claim, requester_claim
from signoff.contract import AgentRunInput
from signoff.loop.state import CallStatus, LoopState, PendingCall
from signoff.messages import ChatMessage, ToolCall
from signoff.runtime.settings import WorkerSettings
from signoff.signing.keys import SigningKey
from signoff.tools.base import ToolCapabilities, ToolResult
from signoff.workflows.run_input import ContinuedRun
from tests.approver_keys import signed, write_secret
from tests.governance import activity_types, refusal, wait_event
from tests.helpers import (
    Reply,
    ScriptedModelServer,
    ScriptedRequest,
    agents_for,
    call,
    running_worker,
    start_run,
    wait_pending,
)

STRICT = {
    "run_command": {
        "verified": True,
        "quorum": 2,
        "separate_requester": True,
        "approvers": ["alice", "bob", "carol", "group:sre"],
    }
}
STATE_KEY = b"k" * 48
UNSANDBOXED = UnsandboxedWorkflowRunner()


@pytest.fixture
def keys(tmp_path: Path) -> Path:
    write_secret(tmp_path / "approvers.key")
    return tmp_path / "approvers.key"


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "PWNED.txt"


def victim(keys: Path, **settings: Any) -> dict[str, Any]:
    """The victim worker's options: the strict policy from its policy file, its keys."""
    return {"policies": PolicyBook.parse(STRICT), "verifier": ApproverKeys.load(keys), **settings}


def pwn(marker: Path) -> ToolCall:
    return ToolCall(id="call_x", name="run_command", arguments=json.dumps({"command": f"id > {marker}"}))


async def forged_state(workspace: Path, marker: Path) -> dict[str, Any]:
    """What finding 1 carried: a call marked ready, approved by "alice (verified)", with the
    snapshot the victim itself takes (its digest is in every run's history)."""
    served = ServedAgents(agents_for(workspace), settings=WorkerSettings(policies=PolicyBook.parse(STRICT)))
    taken = await served.take("default", [])
    record = ApprovalRecord(
        call_id="call_x",
        name="run_command",
        arguments=json.loads(pwn(marker).arguments),
        approved=True,
        approver="alice",
        verified=True,
        outcome="approved",
    )
    audit.chain_record(record, audit.GENESIS)  # a careful forger: the hash chain holds
    ready = PendingCall(call=pwn(marker), status=CallStatus.READY, run_arguments=pwn(marker).arguments, approval=record)
    loop = LoopState(
        messages=[ChatMessage.user("hi"), ChatMessage.assistant(None, [pwn(marker)])],
        tools=taken.snapshot.descriptions,
        pending=[ready],
        approvals=[record],
        audit_head=record.hash,
    )
    state = ContinuedRun(
        input=AgentRunInput(prompt="hi"),
        loop=loop,
        snapshot=taken.snapshot,
        snapshot_digest=taken.digest,
        requester=Requester(name="mallory", verified=True, bound=True),
    )
    return state.model_dump(mode="json")


@workflow.defn(name="Attacker")
class Attacker:
    """The attacker's own workflow, on the attacker's own task queue."""

    @workflow.run
    async def run(self, forged: dict[str, Any], victim_queue: str) -> None:
        workflow.continue_as_new(args=[forged], workflow="AgentRun", task_queue=victim_queue)


def one_command(request: ScriptedRequest) -> Reply:
    if request.round == 1:
        return Reply.tool_calls([call("run_command", "call_1", command="echo hello")])
    return Reply.text("done")


@pytest.mark.parametrize("state_key", [STATE_KEY, None], ids=["sealed", "no-state-key"])
async def test_a_forged_continue_as_new_into_agent_run_fails_at_once_and_runs_nothing(
    client: Client, task_queue: str, tmp_path: Path, keys: Path, marker: Path, state_key: bytes | None
) -> None:
    """Finding 1: with or without a state key, the forged state is refused before it is adopted."""
    attacker_queue = f"attacker-{uuid.uuid4()}"
    with ScriptedModelServer(one_command) as model:
        async with (
            running_worker(client, task_queue, model, agents_for(tmp_path), **victim(keys, state_key=state_key)),
            Worker(client, task_queue=attacker_queue, workflows=[Attacker], workflow_runner=UNSANDBOXED),
        ):
            handle = await client.start_workflow(
                Attacker.run,
                args=[await forged_state(tmp_path, marker), task_queue],
                id=f"forged-{uuid.uuid4()}",
                task_queue=attacker_queue,
            )
            with pytest.raises(WorkflowFailureError) as failure:
                await handle.result()
            continued = client.get_workflow_handle(handle.id)
            described = await continued.describe()
            scheduled = await activity_types(continued)
    cause = failure.value.cause
    assert described.workflow_type == "AgentRun" and described.task_queue == task_queue  # it did become one
    assert cause.type == "InvalidInput" and "nothing of it was adopted" in str(cause)  # type: ignore[attr-defined]
    why = "not sealed" if state_key else "the run it continues is a Attacker"
    assert why in str(cause)
    assert scheduled == [] and model.request_count == 0
    assert not marker.exists()


@workflow.defn(name="AgentRun")
class ForgedAgentRun:
    """The attacker's own code under signoff's workflow type, polling the victim's task queue
    (where its workflow tasks are the attacker's to complete): it hands `signoff.tool` a forged
    approval and the tokens it is sent."""

    def __init__(self) -> None:
        self._tool_input: dict[str, Any] | None = None

    @workflow.signal
    def go(self, tool_input: dict[str, Any]) -> None:
        self._tool_input = tool_input

    @workflow.run
    async def run(self) -> str:
        await workflow.wait_condition(lambda: self._tool_input is not None)
        result = await workflow.execute_activity(
            "signoff.tool", self._tool_input, start_to_close_timeout=timedelta(seconds=30)
        )
        return str(result["content"])


def bound(handle: Any, marker: Path, approved_command: str | None = None) -> Binding:
    """The binding of the forged call in the attacker's own run (its id and chain are public)."""
    command = approved_command or f"id > {marker}"
    return Binding(
        workflow_id=handle.id,
        chain_id=handle.result_run_id,
        call_id="call_x",
        tool="run_command",
        arguments_digest=arguments_digest({"command": command}),
    )


def sign_for(keys: Path, binding: Binding, subject: str) -> str:
    claim = decision_claim(binding, ToolApprovalResponse(call_id=binding.call_id, approved=True))
    return SigningKey.load(keys).sign(claim, subject)


def forged_tokens(case: str, keys: Path, handle: Any, marker: Path) -> tuple[list[str], str | None]:
    """(approval tokens, requester token) the attacker hands over, by case."""
    here = bound(handle, marker)
    elsewhere = here.model_copy(update={"workflow_id": "another-run", "chain_id": "another-chain"})
    bob = issue_token(keys, "bob", signs=requester_claim(handle.id))
    cases: dict[str, tuple[list[str], str | None]] = {
        "no-tokens": ([], bob),
        "plain": ([issue_token(keys, "alice"), issue_token(keys, "carol")], bob),
        "copied-from-another-run": ([sign_for(keys, elsewhere, "alice"), sign_for(keys, elsewhere, "carol")], bob),
        "one-person-twice": ([sign_for(keys, here, "alice"), sign_for(keys, here, "Alice")], bob),
        "requester-votes": ([sign_for(keys, here, "bob"), sign_for(keys, here, "carol")], bob),
        "no-requester": ([sign_for(keys, here, "alice"), sign_for(keys, here, "carol")], None),
        "other-arguments": (
            [sign_for(keys, bound(handle, marker, "echo hi"), name) for name in ("alice", "carol")],
            bob,
        ),
        "genuine": ([sign_for(keys, here, "alice"), sign_for(keys, here, "carol")], bob),
    }
    return cases[case]


@pytest.mark.parametrize(
    "case",
    [
        "no-tokens",
        "plain",
        "copied-from-another-run",
        "one-person-twice",
        "requester-votes",
        "no-requester",
        "other-arguments",
        "genuine",
    ],
)
async def test_the_tool_activity_runs_a_gated_call_only_with_enough_signatures_of_its_own_checking(
    client: Client, task_queue: str, tmp_path: Path, keys: Path, marker: Path, case: str
) -> None:
    """The real gate: whatever the workflow says (here it is the attacker's own code, on the
    victim's queue, so a genuine `AgentRun` to the server), the tool activity counts distinct
    verified subjects of tokens signed for exactly this call, never the requester's."""
    settings = WorkerSettings(policies=PolicyBook.parse(STRICT), verifier=ApproverKeys.load(keys))
    activities = AgentActivities(agents_for(tmp_path), settings=settings)
    async with (
        Worker(client, task_queue=task_queue, activities=activities.all),
        Worker(client, task_queue=task_queue, workflows=[ForgedAgentRun], workflow_runner=UNSANDBOXED),
    ):
        handle = await client.start_workflow(ForgedAgentRun.run, id=f"forged-{uuid.uuid4()}", task_queue=task_queue)
        tokens, requester = forged_tokens(case, keys, handle, marker)
        proof = {
            "call_id": "call_x",
            "arguments_digest": arguments_digest({"command": f"id > {marker}"}),
            "record_hash": "0" * 64,
        }
        digest = (await activities.served.take("default", [])).digest
        tool_input = {
            "agent": "default",
            "snapshot_digest": digest,
            "call": pwn(marker).model_dump(),
            "approval": proof,
            "tokens": tokens,
            "requester_token": requester,
        }
        await handle.signal(ForgedAgentRun.go, tool_input)
        answer = await handle.result()
    if case == "genuine":  # the control: two people other than the requester signed this very call
        assert answer.startswith("exit code: 0") and marker.exists(), answer
        return
    assert answer.startswith(
        "Error: this call was not run: this worker's policy for run_command needs signed approvals"
    ), answer
    wanted = {
        "no-tokens": "0 of 2 signed approval(s); no signed decision was handed with it",
        "plain": "token signs no decision",
        "copied-from-another-run": "token is signed for another run (another-run, chain another-chain)",
        "one-person-twice": "1 of 2 signed approval(s) (alice)",
        "requester-votes": "'bob' requested this run and may not decide its calls",
        "no-requester": "separate_requester needs the run's requester token",
        "other-arguments": "is signed for call 'call_x' with other arguments",
    }
    assert wanted[case] in answer, answer
    assert not marker.exists()


async def test_a_signed_decision_copied_from_another_runs_history_decides_nothing_there(
    client: Client, task_queue: str, tmp_path: Path, keys: Path
) -> None:
    """Finding 5: a token in history is in plain sight; bound to its own run, it is worthless
    in another, even for the same call id, tool and arguments."""
    policy = {"run_command": {"verified": True, "approvers": ["alice"]}}
    with ScriptedModelServer(one_command) as model:
        async with running_worker(
            client,
            task_queue,
            model,
            agents_for(tmp_path),
            policies=PolicyBook.parse(policy),
            verifier=ApproverKeys.load(keys),
        ):
            first, second = await start_run(client, task_queue), await start_run(client, task_queue)
            (pending,), (other,) = await wait_pending(first), await wait_pending(second)
            assert pending["arguments_digest"] == other["arguments_digest"]
            await first.execute_update("submit_tool_approval", signed(keys, pending, "alice"))
            await first.result()
            copied = _decision_in_history(await first.fetch_history())
            refused = await refusal(second.execute_update("submit_tool_approval", copied))
            await second.signal("tool_approval", copied)
            (ignored,) = await wait_event(second, "decision_ignored")
            (still,) = await second.query("pending_approvals")
            await second.terminate()
    assert "signed for another decision" in refused and f"its workflow_id is {first.id!r}" in refused
    assert "signed for another decision" in ignored["reason"] and still["call_id"] == "call_1"


def _decision_in_history(history: Any) -> dict[str, Any]:
    """The decision (token and all) as the run's history holds it: the accepted update's input."""
    (event,) = [e for e in history.events if e.HasField("workflow_execution_update_accepted_event_attributes")]
    payload = event.workflow_execution_update_accepted_event_attributes.accepted_request.input.args.payloads[0]
    decision: dict[str, Any] = json.loads(payload.data)
    assert decision["token"]
    return decision


@workflow.defn(name="SealThief")
class SealThief:
    """Asks the victim's worker to seal a state of its choosing, as an ordinary activity."""

    @workflow.run
    async def run(self, victim_queue: str) -> str:
        sealed = await workflow.execute_activity(
            "signoff.seal",
            {"chain_id": "mine", "digest": "0" * 64},
            task_queue=victim_queue,
            start_to_close_timeout=timedelta(seconds=30),
        )
        return str(sealed)


async def test_the_seal_is_never_given_to_a_workflow_that_asks_for_it_as_an_activity(
    client: Client, task_queue: str, tmp_path: Path, keys: Path
) -> None:
    attacker_queue = f"attacker-{uuid.uuid4()}"
    with ScriptedModelServer(one_command) as model:
        async with (
            running_worker(client, task_queue, model, agents_for(tmp_path), **victim(keys, state_key=STATE_KEY)),
            Worker(client, task_queue=attacker_queue, workflows=[SealThief], workflow_runner=UNSANDBOXED),
        ):
            handle = await client.start_workflow(
                SealThief.run, task_queue, id=f"thief-{uuid.uuid4()}", task_queue=attacker_queue
            )
            with pytest.raises(WorkflowFailureError) as failure:
                await handle.result()
    assert isinstance(failure.value.cause, ActivityError)
    assert "signoff.seal runs only as a local activity of an AgentRun" in str(failure.value.cause.cause)


class Unlocks:
    """A tool no call of which waits, that does more for a call a person approved (as a file
    tool leaving its workspace, or an MCP tool, does): the forged `approved` must not reach it."""

    name, description, idempotent, kind = "unlocks", "Unlock.", False, "custom"
    parameters: dict[str, Any] = {"type": "object", "properties": {}}  # noqa: RUF012

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    @property
    def capabilities(self) -> ToolCapabilities:
        return ToolCapabilities(gate="never", approval_aware=self.execute)

    async def execute(self, arguments: dict[str, Any], approved: bool = False) -> ToolResult:
        if approved:
            self.marker.write_text("unlocked")
        return ToolResult(content=f"approved={approved}")

    def requires_approval(self, arguments: dict[str, Any]) -> bool:
        return False


@pytest.mark.parametrize("signed_by", [[], ["alice"]], ids=["unsigned", "signed"])
async def test_an_unsigned_approval_unlocks_nothing_under_a_verified_policy(
    client: Client, task_queue: str, tmp_path: Path, keys: Path, marker: Path, signed_by: list[str]
) -> None:
    agent = AgentBuilder("custom").with_tool(Unlocks(marker)).build()
    policies = PolicyBook.parse({"unlocks": {"verified": True}})
    settings = WorkerSettings(policies=policies, verifier=ApproverKeys.load(keys))
    activities = AgentActivities({"custom": agent}, settings=settings)
    async with (
        Worker(client, task_queue=task_queue, activities=activities.all),
        Worker(client, task_queue=task_queue, workflows=[ForgedAgentRun], workflow_runner=UNSANDBOXED),
    ):
        handle = await client.start_workflow(ForgedAgentRun.run, id=f"forged-{uuid.uuid4()}", task_queue=task_queue)
        here = Binding(
            workflow_id=handle.id,
            chain_id=handle.result_run_id or "",
            call_id="call_u",
            tool="unlocks",
            arguments_digest=arguments_digest({}),
        )
        proof = {"call_id": "call_u", "arguments_digest": arguments_digest({}), "record_hash": "0" * 64}
        call_u = {"id": "call_u", "name": "unlocks", "arguments": "{}"}
        digest = (await activities.served.take("custom", [])).digest
        tool_input = {
            "agent": "custom",
            "snapshot_digest": digest,
            "call": call_u,
            "approval": proof,
            "tokens": [sign_for(keys, here, name) for name in signed_by],
        }
        await handle.signal(ForgedAgentRun.go, tool_input)
        answer = await handle.result()
    assert answer == f"approved={bool(signed_by)}" and marker.exists() == bool(signed_by)
