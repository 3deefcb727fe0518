"""A signature is spent once (issue 27, finding 4): the tool activity refuses a token it honoured.

Each test is a forged history on the real dev server: the attacker's own code under the
workflow type `AgentRun` on the victim's task queue (where its workflow tasks are the
attacker's to complete), scheduling the real `signoff.tool` activity of a real worker with
tokens that verify, again and again. What a call ran is counted in a file: `echo x >> count`.
The records are the server's (`signoff.activities.spent`); nothing is mocked.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio import activity, workflow
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import DescribeWorkflowExecutionRequest
from temporalio.client import Client, WorkflowFailureError
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from signoff.activities import AgentActivities
from signoff.activities.spent import SpentSignatures
from signoff.approval.digest import arguments_digest
from signoff.approval.evidence import Counted
from signoff.approval.identity import ApproverKeys
from signoff.approval.policy import PolicyBook
from signoff.approval.requests import Binding, GrantSpec, ToolApprovalResponse
from signoff.approval.signatures import decision_claim
from signoff.approval.spent import RECORD_QUEUE, RECORD_TYPE, record_id
from signoff.runtime.settings import WorkerSettings
from signoff.signing.keys import SigningKey
from tests.approver_keys import write_secret
from tests.helpers import agents_for

POLICY = {"run_command": {"verified": True, "approvers": ["alice", "bob"]}}


@workflow.defn(name="AgentRun")
class ForgedRuns:
    """The attacker's code under signoff's type: runs `signoff.tool` with each input it is sent, in turn."""

    def __init__(self) -> None:
        self._inputs: list[dict[str, Any]] | None = None

    @workflow.signal
    def go(self, inputs: list[dict[str, Any]]) -> None:
        self._inputs = inputs

    @workflow.run
    async def run(self) -> list[str]:
        await workflow.wait_condition(lambda: self._inputs is not None)
        assert self._inputs is not None
        contents = []
        for tool_input in self._inputs:
            result = await workflow.execute_activity(
                "signoff.tool", tool_input, start_to_close_timeout=timedelta(seconds=30)
            )
            contents.append(str(result["content"]))
        return contents


@pytest.fixture
def keys(tmp_path: Path) -> Path:
    write_secret(tmp_path / "approvers.key")
    return tmp_path / "approvers.key"


class Forgery:
    """A forged `AgentRun` on the victim's queue, the victim's worker beside it."""

    def __init__(
        self,
        client: Client,
        task_queue: str,
        tmp_path: Path,
        keys: Path,
        quorum: int = 1,
        policy: dict[str, Any] | None = None,
        **settings: Any,
    ) -> None:
        self.client, self.task_queue, self.keys = client, task_queue, keys
        self.count = tmp_path / "count"
        own = {**POLICY["run_command"], "quorum": quorum, **(policy or {})}
        policies = PolicyBook.parse({"run_command": own})
        worker_settings = WorkerSettings(policies=policies, verifier=ApproverKeys.load(keys), **settings)
        self.activities = AgentActivities(agents_for(tmp_path), settings=worker_settings)

    def command(self) -> dict[str, str]:
        return {"command": f"echo x >> {self.count}"}

    def binding(self, handle: Any, call_id: str, request: str | None = "r-1") -> Binding:
        return Binding(
            workflow_id=handle.id,
            chain_id=handle.result_run_id,
            call_id=call_id,
            tool="run_command",
            arguments_digest=arguments_digest(self.command()),
            request=request,
        )

    def token(self, binding: Binding, subject: str = "alice", now: datetime | None = None, **fields: Any) -> str:
        claim = decision_claim(binding, ToolApprovalResponse(call_id=binding.call_id, approved=True, **fields))
        return SigningKey.load(self.keys).sign(claim, subject, now=now)

    async def tool_input(self, binding: Binding, tokens: list[str], call_id: str | None = None) -> dict[str, Any]:
        call_id = call_id or binding.call_id
        digest = (await self.activities.served.take("default", [])).digest
        return {
            "agent": "default",
            "snapshot_digest": digest,
            "call": {"id": call_id, "name": "run_command", "arguments": json.dumps(self.command())},
            "approval": {
                "call_id": call_id,
                "arguments_digest": binding.arguments_digest,
                "record_hash": "0" * 64,
                "request": binding.request if call_id == binding.call_id else f"r-{call_id}",
            },
            "tokens": tokens,
        }

    def ran(self) -> int:
        return len(self.count.read_text().splitlines()) if self.count.exists() else 0


async def forged_run(forgery: Forgery, plan: Any) -> tuple[Any, list[str]]:
    """Start the forged run, hand it the inputs `plan(handle)` makes, and return what each call gave."""
    async with (
        Worker(forgery.client, task_queue=forgery.task_queue, activities=forgery.activities.all),
        Worker(
            forgery.client,
            task_queue=forgery.task_queue,
            workflows=[ForgedRuns],
            workflow_runner=UnsandboxedWorkflowRunner(),
        ),
    ):
        handle = await forgery.client.start_workflow(
            ForgedRuns.run, id=f"forged-{uuid.uuid4()}", task_queue=forgery.task_queue
        )
        await handle.signal(ForgedRuns.go, await plan(handle))
        return handle, await handle.result()


async def test_a_signed_approval_runs_its_call_once_whatever_a_forged_history_schedules(
    client: Client, task_queue: str, tmp_path: Path, keys: Path
) -> None:
    """The same token twice, then another token of alice's for the same decision (a new `jti`,
    as a re-encoded JWS would be): the call runs once; each later try is told who honoured it."""
    forgery = Forgery(client, task_queue, tmp_path, keys)

    async def plan(handle: Any) -> list[dict[str, Any]]:
        bound = forgery.binding(handle, "call_1")
        first, again = forgery.token(bound), forgery.token(bound)
        assert first != again
        return [await forgery.tool_input(bound, tokens) for tokens in ([first], [first], [again])]

    handle, contents = await forged_run(forgery, plan)
    assert contents[0].startswith("exit code: 0"), contents
    for refused in contents[1:]:
        assert "needs signed approvals, and 0 of 1 signed approval(s) unspent" in refused, refused
        assert "alice's signed approval of this call was already honoured (activity 1 of run" in refused
        assert "a signature runs a call once" in refused
    assert forgery.ran() == 1
    record = await describe(client, record_of(handle, forgery, "call_1"))
    assert (record.type.name, record.task_queue) == (RECORD_TYPE, RECORD_QUEUE)
    assert record.execution_duration.ToTimedelta() == timedelta(0)  # a record never ran a task


async def test_a_quorum_needs_each_signature_unspent(
    client: Client, task_queue: str, tmp_path: Path, keys: Path
) -> None:
    """Under a quorum of 2, the second execution with alice's and bob's tokens finds both spent."""
    forgery = Forgery(client, task_queue, tmp_path, keys, quorum=2)

    async def plan(handle: Any) -> list[dict[str, Any]]:
        bound = forgery.binding(handle, "call_1")
        tokens = [forgery.token(bound, "alice"), forgery.token(bound, "bob")]
        return [await forgery.tool_input(bound, tokens), await forgery.tool_input(bound, tokens)]

    _, (first, second) = await forged_run(forgery, plan)
    assert first.startswith("exit code: 0") and "0 of 2 signed approval(s) unspent" in second, second
    assert forgery.ran() == 1


async def test_a_grants_max_uses_holds_at_the_tool_activity(
    client: Client, task_queue: str, tmp_path: Path, keys: Path
) -> None:
    """Finding 4's corollary: a forged run cannot use alice's grant (`max_uses` 2) a third time."""
    forgery = Forgery(client, task_queue, tmp_path, keys)

    async def plan(handle: Any) -> list[dict[str, Any]]:
        granting = forgery.binding(handle, "call_g")
        grant = forgery.token(granting, grant=GrantSpec(match="tool", max_uses=2))
        return [await forgery.tool_input(granting, [grant], call_id=f"call_{n}") for n in range(4)]

    _, contents = await forged_run(forgery, plan)
    assert [c.startswith("exit code: 0") for c in contents] == [True, True, False, False], contents
    assert "alice's grant (max_uses 2) is used up: 2 call(s) already ran under it" in contents[2]
    assert forgery.ran() == 2


@pytest.mark.parametrize("issued", ["long-ago", "never-said"])
async def test_a_signature_older_than_its_honoured_life_is_refused(
    client: Client, task_queue: str, tmp_path: Path, keys: Path, issued: str
) -> None:
    """Its record may be gone: `SIGNOFF_SIGNATURE_MAX_AGE` after its `iat` (or with none) it runs nothing."""
    forgery = Forgery(client, task_queue, tmp_path, keys, signature_max_age=timedelta(minutes=10))

    async def plan(handle: Any) -> list[dict[str, Any]]:
        bound = forgery.binding(handle, "call_1")
        if issued == "long-ago":
            token = forgery.token(bound, now=datetime.now(UTC) - timedelta(minutes=11))
        else:
            claim = decision_claim(bound, ToolApprovalResponse(call_id="call_1", approved=True))
            token = without_iat(forgery.keys, claim.model_dump(mode="json"))
        return [await forgery.tool_input(bound, [token])]

    _, (content,) = await forged_run(forgery, plan)
    wanted = (
        "more than 600 s ago: a signature is honoured only that long after it was signed"
        if issued == "long-ago"
        else "does not say when it was signed (iat), so it cannot be spent once"
    )
    assert wanted in content, content
    assert forgery.ran() == 0


def without_iat(keys: Path, claim: dict[str, Any]) -> str:
    import jwt

    secret = keys.read_text().strip()
    exp = int((datetime.now(UTC) + timedelta(minutes=5)).timestamp())
    return jwt.encode({"sub": "alice", "exp": exp, "signoff": claim}, secret, algorithm="HS256")


def record_of(handle: Any, forgery: Forgery, call_id: str) -> str:
    from signoff.approval.identity import Identity
    from signoff.approval.signatures import DecisionClaim

    bound = forgery.binding(handle, call_id)
    claim = DecisionClaim(**bound.model_dump(), approved=True)
    return record_id(Counted(Identity(subject="alice", claim=claim), claim, grant_use=False))


async def describe(client: Client, workflow_id: str) -> Any:
    request = DescribeWorkflowExecutionRequest(
        namespace=client.namespace, execution=WorkflowExecution(workflow_id=workflow_id)
    )
    return (await client.workflow_service.describe_workflow_execution(request)).workflow_execution_info


# --- a retry of the same execution ----------------------------------------------------------


class Flaky:
    """Spends a signature, then fails its first attempt (as a worker dying after spending would)."""

    def __init__(self, counted: Counted) -> None:
        self.counted = counted
        self.answers: list[str | None] = []
        self.spent = SpentSignatures()

    @activity.defn(name="spend-then-fail")
    async def spend(self) -> str:
        self.answers.append(await self.spent.spend([self.counted], 1))
        if activity.info().attempt == 1:
            raise ApplicationError("the worker died")
        return "ok"


@workflow.defn(name="Twice")
class Twice:
    @workflow.run
    async def run(self) -> str:
        once = await workflow.execute_activity(
            "spend-then-fail",
            start_to_close_timeout=timedelta(seconds=30),
            retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=100), maximum_attempts=2),
        )
        again = await workflow.execute_activity(
            "spend-then-fail",
            start_to_close_timeout=timedelta(seconds=30),
            retry_policy=RetryPolicy(maximum_attempts=1),
        )
        return f"{once} {again}"


async def test_a_retry_of_the_honouring_execution_goes_on_and_nothing_else_does(
    client: Client, task_queue: str
) -> None:
    from signoff.approval.identity import Identity
    from signoff.approval.signatures import DecisionClaim

    claim = DecisionClaim(
        workflow_id="w",
        chain_id=str(uuid.uuid4()),
        call_id="call_1",
        tool="t",
        arguments_digest="0" * 64,
        approved=True,
    )
    counted = Counted(Identity(subject="alice", claim=claim, issued_at=datetime.now(UTC)), claim, grant_use=False)
    flaky = Flaky(counted)
    async with Worker(
        client,
        task_queue=task_queue,
        workflows=[Twice],
        activities=[flaky.spend],
        workflow_runner=UnsandboxedWorkflowRunner(),
    ):
        with pytest.raises(WorkflowFailureError):  # the second activity's one attempt is refused, and fails
            await client.execute_workflow(Twice.run, id=f"twice-{uuid.uuid4()}", task_queue=task_queue)
    first, retried, other = flaky.answers
    assert first is None and retried is None  # the same execution, retried: its own record
    assert other is not None and "already honoured (activity 1 of run" in other
