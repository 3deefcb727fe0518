"""Where a tool runs durably: one call of a durable run (`signoff.tool`).

The activity does not take the workflow's word for anything it can check itself:

- It runs only for an `AgentRun` (the server's word, in the activity's task); an approved
  call under a `verified` policy, and any call of a snapshot this worker cannot reproduce,
  only for an `AgentRun` on this worker's task queue (the server's description of the
  calling run, asked once per run, which also names the run's continue-as-new chain that
  signatures name). That filters strangers, but it is no evidence: a forged continue-as-new
  makes a genuine `AgentRun`. Under an unverified policy the server is not asked: the run's
  word that a call was approved is all such a policy has (anyone who can reach the frontend
  can approve by update), so the answer would decide nothing.
- It prepares the call once (`prepare_call`): the arguments parsed once, the agent's
  snapshot and the tool resolved, and the gate asked once.
- It gates the call again, now, with the run's snapshot *and* the worker's own
  configuration of the tool (its own code and `SIGNOFF_POLICY_FILE`, which can only add
  gates): a call that needs approval at execution runs only if the run approved it.
- Under a `verified` policy of the worker's own (never one the run carries), the run's
  word is not enough: the activity verifies the signed decisions handed with the call
  against the worker's own keys, just before it runs it (`signoff.approval.evidence`), and runs
  nothing without enough of them; an approval that does not verify is not passed on to a
  tool that does more for approved calls (a file tool leaving the workspace, an MCP tool
  the run's snapshot says is read-only). Otherwise the model is told it was not run.
- A grant authorises nothing where the worker's own policy for the tool says `"grants": false`:
  neither a grant the run says it used, nor (verified) a token that approves the call through
  a grant signed on another.
- The signatures that authorise a call are then spent, in records the server keeps
  (`signoff.activities.spent`): a signature already honoured by another execution (a reset
  run's, a forged history's second try) authorises nothing, and a grant's `max_uses` holds.
- Approved file calls may leave the workspace; all others are confined to it at
  execution (`signoff.tools`), whatever happened to the file system meanwhile.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from temporalio import activity
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import WorkflowExecutionStatus
from temporalio.api.workflow.v1 import WorkflowExecutionInfo
from temporalio.api.workflowservice.v1 import DescribeWorkflowExecutionRequest
from temporalio.client import Client
from temporalio.exceptions import ApplicationError

from signoff.activities.agents import ServedAgents
from signoff.activities.heartbeat import heartbeating
from signoff.activities.models import ToolAnswerInput, ToolInput, ToolOutput
from signoff.activities.spent import SpentSignatures
from signoff.agent.gate import needs_approval_now
from signoff.approval import authority
from signoff.approval.claims import LEEWAY
from signoff.approval.digest import arguments_digest
from signoff.approval.evidence import CallToRun, Verdict, requester_of, verdict
from signoff.approval.identity import NO_KEYS, Identity, Verifier
from signoff.approval.names import name_key, same_name
from signoff.approval.policy import ApprovalPolicy
from signoff.approval.requests import ToolApprovalRequest
from signoff.approval.signatures import DecisionClaim, DelegationClaim, answer_digest
from signoff.contract import WORKFLOW_TYPE
from signoff.errors import TokenError
from signoff.loop.limits import cap_text
from signoff.messages import ToolCall
from signoff.tools.base import Tool, ToolCapabilities, ToolResult
from signoff.tools.dispatch import run_tool
from signoff.tools.mcp.tool import MCPTool

NOT_APPROVED = (
    "Error: this call needs approval now and was not approved (what it touches changed since it was "
    "requested, or this worker's configuration gates it); it was not run"
)
MAX_TOKENS = 100
"""Signed decisions looked at per call (a quorum is at most 100)."""


class Callers:
    """The runs this worker has checked are `AgentRun`s on its task queue, with the first
    run of each one's continue-as-new chain as the server names it."""

    def __init__(self, size: int = 1000) -> None:
        self._size = size
        self._known: OrderedDict[str, str] = OrderedDict()
        self._asking: dict[str, asyncio.Task[str]] = {}

    def prefetch(self) -> None:
        """Start asking about the current activity's run in the background, so a later
        `chain` finds the answer (or waits for the same question, never asks twice)."""
        info = activity.info()
        key = f"{info.workflow_id}/{info.workflow_run_id}"
        if key not in self._known and key not in self._asking:
            self._ask(key)

    def check_type(self) -> None:
        """Raise a non-retryable error unless the calling run is an AgentRun (the server's word,
        in the activity's task: nothing is asked)."""
        info = activity.info()
        if info.workflow_type != WORKFLOW_TYPE or not info.workflow_id:
            raise _refusal(f"it was scheduled by {info.workflow_type or 'no workflow'}")

    async def chain(self) -> str:
        """Raise a non-retryable error unless the calling run is an AgentRun on this task queue,
        running, as the server describes it (asked once per run); the first run of its
        continue-as-new chain."""
        self.check_type()
        info = activity.info()
        key = f"{info.workflow_id}/{info.workflow_run_id}"
        if (chain := self._known.get(key)) is not None:
            return chain
        asking = self._asking.get(key) or self._ask(key)
        return await asyncio.shield(asking)

    def _ask(self, key: str) -> asyncio.Task[str]:
        task = asyncio.ensure_future(self._describe(key))
        self._asking[key] = task
        task.add_done_callback(lambda done: self._asked(key, done))
        return task

    def _asked(self, key: str, done: asyncio.Task[str]) -> None:
        self._asking.pop(key, None)
        if not done.cancelled() and done.exception() is None:
            self._known[key] = done.result()
            while len(self._known) > self._size:
                self._known.popitem(last=False)

    async def _describe(self, key: str) -> str:
        info = activity.info()
        run = await raw_description(activity.client(), info.workflow_id or "", info.workflow_run_id or "")
        if run.type.name != WORKFLOW_TYPE or run.task_queue != info.task_queue:
            raise _refusal(f"the run is a {run.type.name} on task queue {run.task_queue!r}")
        if run.status != WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING:
            raise _refusal("the run is not running")
        return run.first_run_id or run.execution.run_id


async def raw_description(client: Client, workflow_id: str, run_id: str) -> WorkflowExecutionInfo:
    """The server's description of a run, as it sent it. Asked raw: the SDK's
    `WorkflowHandle.describe` goes through the client's interceptors and decodes the run's
    search attributes twice (untyped and typed) into a description object, of which the caller
    check reads three fields (`python -m bench.caller_check`)."""
    execution = WorkflowExecution(workflow_id=workflow_id, run_id=run_id)
    request = DescribeWorkflowExecutionRequest(namespace=client.namespace, execution=execution)
    return (await client.workflow_service.describe_workflow_execution(request)).workflow_execution_info


def no_grants(tool: str, grants: list[str]) -> str:
    """The model's answer for a call a grant approved, when this worker's policy for its tool
    takes no grants (`"grants": false`): the run's snapshot may say otherwise (it started before
    the policy file said so), but the worker's own configuration decides at the last gate."""
    return (
        f"Error: this call was not run: this worker's policy for {tool} takes no grants (grants = false), "
        f"and the run approved it with {', '.join(grants)}; each call of {tool} needs a decision of its own"
    )


def _refusal(why: str) -> ApplicationError:
    return ApplicationError(
        f"signoff.tool runs calls only for AgentRun workflows on its own task queue; {why}",
        type="NotAnAgentRun",
        non_retryable=True,
    )


class SignOffs:
    """Verifies the signed decisions handed with a call, with the worker's own keys, and spends
    the ones that authorise it (`signoff.activities.spent`), so each runs one execution."""

    def __init__(self, verifier: Verifier | None, spent: SpentSignatures | None = None) -> None:
        self._verifier = verifier
        self._spent = spent or SpentSignatures()

    async def problem(self, input: ToolInput, policy: ApprovalPolicy, chain_id: str) -> str | None:
        """Why the call may not run under the worker's verified `policy` (None: it may, and the
        signatures that authorise it are now spent by this execution)."""
        found = self.verdict(input, policy, chain_id)
        if found.problem is not None:
            return found.problem
        return await self._spent.spend(found.counted, policy.quorum)

    def verdict(self, input: ToolInput, policy: ApprovalPolicy, chain_id: str) -> Verdict:
        """Which of the tokens handed with the call authorise it, and why not enough do."""
        if self._verifier is None:
            return Verdict((), NO_KEYS)
        info = activity.info()
        call = input.call
        approved = input.approval.arguments_digest if input.approval else ""
        to_run = CallToRun(
            workflow_id=info.workflow_id or "",
            chain_id=chain_id,
            call_id=call.id,
            tool=call.name,
            arguments_digest=approved,
            run_digest=arguments_digest(call.parsed_arguments),
            at=info.scheduled_time,
            arguments=call.parsed_arguments,
            request=input.approval.request if input.approval else None,
        )
        approvals: list[Identity] = []
        refused: list[str] = []
        people: set[str] = set()  # a quorum counts people: one who votes for themselves and for another counts once
        requester = self._requester(input.requester_token, info.scheduled_time) if policy.separate_requester else None
        asker = requester_of(requester, to_run) if requester else None
        for position, token in enumerate(input.tokens[:MAX_TOKENS]):
            delegation = input.delegations[position] if position < len(input.delegations) else None
            try:
                identity = self._verifier.verify(token, info.scheduled_time, expired_ok=True)
                signer = name_key(identity.subject)
                if delegation is not None:
                    identity = self._delegated(identity, delegation, call.name, info.scheduled_time)
            except TokenError as exc:
                refused.append(f"a token was refused ({exc.reason}: {exc})")
                continue
            if asker is not None and delegation is not None and same_name(signer, asker):
                refused.append(
                    f"{asker} requested this run and may not decide its calls for anyone (separate_requester)"
                )
                continue
            if signer in people or name_key(identity.subject) in people:
                refused.append(f"{identity.subject}'s vote was cast by someone who already voted")
                continue
            people |= {signer, name_key(identity.subject)}
            approvals.append(identity)
        return verdict(policy, to_run, approvals, requester, refused)

    def answer_problem(self, input: ToolAnswerInput, policy: ApprovalPolicy, chain_id: str) -> str | None:
        """Why no token handed with an answer signs it for this worker (None: one does)."""
        if self._verifier is None:
            return NO_KEYS
        info = activity.info()
        content = input.answer.get("content")
        wanted = {
            "workflow_id": info.workflow_id or "",
            "chain_id": chain_id,
            "call_id": input.call.id,
            "tool": input.call.name,
            "state_digest": input.asked.state_digest(),
            "answer_action": input.answer.get("action"),
            "answer_digest": answer_digest(content) if content is not None else None,
        }
        refused: list[str] = []
        for token in input.tokens[:MAX_TOKENS]:
            try:
                identity = self._verifier.verify(token, info.scheduled_time, expired_ok=True)
            except TokenError as exc:
                refused.append(f"a token was refused ({exc.reason}: {exc})")
                continue
            claim = identity.claim
            if not isinstance(claim, DecisionClaim) or any(getattr(claim, k) != v for k, v in wanted.items()):
                refused.append(f"{identity.subject}'s token does not sign this answer to this question")
                continue
            asked = ToolApprovalRequest(call_id=input.call.id, name=input.call.name, policy=policy)
            if (refusal := authority.refusal(asked, identity.person(), None)) is not None:
                refused.append(refusal)
                continue
            return None
        return "; ".join(refused) or "no signed answer was handed with it"

    def _delegated(self, sender: Identity, delegation: str, tool: str, at: datetime) -> Identity:
        """The delegator's vote, cast by `sender`: their signed delegation to `sender`, on `tool`,
        whose window held `sender`'s decision (signed at its `iat`). TokenError otherwise."""
        assert self._verifier is not None
        grantor = self._verifier.verify(delegation, at, expired_ok=True)
        scope = grantor.claim
        if not isinstance(scope, DelegationClaim) or not same_name(scope.delegate, sender.subject):
            raise TokenError("bad_claim", f"{sender.subject}'s delegation is no delegation to them")
        if not scope.covers(tool) or same_name(grantor.subject, sender.subject):
            raise TokenError("bad_claim", f"{grantor.subject}'s delegation to {sender.subject} does not cover {tool}")
        signed = sender.issued_at
        opens = grantor.not_before or grantor.issued_at
        closes = grantor.expires_at
        if signed is None or (opens and signed + LEEWAY < opens) or (closes and signed > closes + LEEWAY):
            raise TokenError("expired", f"{sender.subject} decided outside {grantor.subject}'s delegation window")
        return sender.model_copy(update={"subject": grantor.subject, "groups": grantor.groups})

    def _requester(self, token: str | None, at: datetime) -> Identity | None:
        assert self._verifier is not None
        try:
            return self._verifier.verify(token, at, expired_ok=True) if token else None
        except TokenError:
            return None


@dataclass(frozen=True)
class PreparedCall:
    """One call, prepared once to run: its tool, its arguments (`ToolCall.parsed_arguments`),
    what the tool declares, the worker's own policy for it, and whether it needs approval now
    (the run's snapshot and the worker's own gate, asked once)."""

    call: ToolCall
    tool: Tool
    arguments: Any
    capabilities: ToolCapabilities
    policy: ApprovalPolicy
    needed: bool
    max_output: int | None

    async def execute(self, approved: bool) -> ToolResult:
        """Run it (told `approved` if the tool looks at it); the tool message text, and what a
        server asked if it did."""
        if not isinstance(self.arguments, dict):
            return ToolResult(content=f"Error: arguments for {self.call.name} are not a JSON object")
        async with heartbeating():
            return await run_tool(
                self.tool, self.arguments, self.capabilities, approved=approved, max_output=self.max_output
            )


async def prepare_call(served: ServedAgents, callers: Callers, input: ToolInput) -> PreparedCall | str:
    """The call of `input` prepared to run with the run's snapshot, or the model's answer when
    its tool is unknown. A snapshot this worker cannot reproduce is asked of the run, once the
    server says it is a genuine AgentRun of this task queue."""
    call = input.call
    if not input.snapshot_digest:
        raise _refusal("it names no snapshot of the run's agent")
    run = served.own(input.agent, input.snapshot_digest)
    if run is None:
        await callers.chain()
        run = await served.from_run(input.agent, input.snapshot_digest)
    entry = run.snapshot.tool(call.name)
    tool = run.registry.get(call.name)
    if entry is None or tool is None:
        return f"Error: unknown tool {call.name!r}"
    own = served.configured(input.agent, tool)
    arguments = call.parsed_arguments
    needed = needs_approval_now(entry, own.gate, tool, arguments, reproduced=run.own)
    return PreparedCall(
        call, tool, arguments, own.capabilities, own.policy, needed, run.snapshot.limits.max_tool_output
    )


async def run_call(served: ServedAgents, callers: Callers, signoffs: SignOffs, input: ToolInput) -> ToolOutput:
    """Run one call; its own failure is the message `Error: ...`."""
    callers.check_type()
    prepared = await prepare_call(served, callers, input)
    if isinstance(prepared, str):
        return ToolOutput(content=prepared)
    approved = await _approved(prepared, callers, signoffs, input)
    if isinstance(approved, str):
        return ToolOutput(content=approved)
    output = await prepared.execute(approved)
    return ToolOutput(content=output.content, input=output.input)


async def _approved(prepared: PreparedCall, callers: Callers, signoffs: SignOffs, input: ToolInput) -> bool | str:
    """Whether the prepared call runs as approved, by the worker's own policy for its tool; the
    model's answer (`Error: ...`) when it may not run at all."""
    call, policy, needed = prepared.call, prepared.policy, prepared.needed
    approved = input.approval is not None and input.approval.call_id == call.id
    if needed and not approved:
        return NOT_APPROVED
    if approved and not policy.grants and input.approval and input.approval.grants:
        if needed:
            return no_grants(call.name, input.approval.grants)
        approved = False  # a grant unlocks nothing a tool keeps for approved calls
    edited = input.approval is not None and input.approval.arguments_digest != arguments_digest(prepared.arguments)
    if approved and edited and not policy.allows("edit"):  # the worker's own policy, never the run's
        return f"Error: this call was not run: this worker's policy for {call.name} takes no edited arguments"
    if approved and policy.verified:
        chain_id = await callers.chain()  # asked only here: signatures name the chain
        if (problem := await signoffs.problem(input, policy, chain_id)) is not None:
            if needed:
                return (
                    f"Error: this call was not run: this worker's policy for {call.name} "
                    f"needs signed approvals, and {problem}"
                )
            approved = False  # an unsigned "approved" unlocks nothing a tool keeps for approved calls
    return approved


async def answer_call(served: ServedAgents, callers: Callers, signoffs: SignOffs, input: ToolAnswerInput) -> ToolOutput:
    """Send a person's answer to the question an MCP server asked in the middle of a call, with
    the server's state (`tools/call` again); the server's result, or its next question.

    Only for a genuine AgentRun of this queue (an answer is a person's word). The server checks
    its own state (sealed: a forged or altered one is refused there); under a `verified` policy of
    this worker's own, the answer goes only with a token that signs it: this call, this answer,
    this state of the server's."""
    call = input.call
    callers.check_type()
    chain_id = await callers.chain()  # an answer is a person's word: only for a genuine AgentRun of this queue
    if not input.snapshot_digest:
        raise _refusal("it names no snapshot of the run's agent")
    run = served.own(input.agent, input.snapshot_digest) or await served.from_run(input.agent, input.snapshot_digest)
    tool = run.registry.get(call.name)
    if not isinstance(tool, MCPTool):
        return ToolOutput(content=f"Error: {call.name!r} is no MCP tool of this run; no answer was sent")
    own_policy = served.configured(input.agent, tool).policy
    if own_policy.verified and (problem := signoffs.answer_problem(input, own_policy, chain_id)) is not None:
        return ToolOutput(
            content=f"Error: the answer was not sent: this worker's policy for {call.name} needs a signed answer, "
            f"and {problem}"
        )
    arguments = call.parsed_arguments
    async with heartbeating():
        try:
            result = await tool.answer(arguments if isinstance(arguments, dict) else {}, input.asked, input.answer)
        except Exception as exc:  # a tool's bug is the model's information, not a failed run
            result = ToolResult.error(f"{type(exc).__name__}: {exc}")
    text = cap_text(result.to_message(), run.snapshot.limits.max_tool_output)
    return ToolOutput(content=text, input=result.input)
