"""Deciding from the inbox: who may, what is sent, and what came of it, call by call.

Every decision names one call by its id *and* the digest of the arguments the person was
shown, so a call that changed since (timed out and asked again, say) is refused by the run,
never decided blind. A selection is decided call by call, each bound to its own digest
(and, with a signing key, its own token), so each call gets its own result.

What the page hides is what the run would refuse: the rules are the run's own
(`signoff.approval.authority`) applied to the call's policy as the run holds it.

With a signing key, the inbox signs what it shows, never what the run says it asks: the
claim is derived from the call on the page and the server's description of the run
(`signoff.signing.derived`), and a run whose request does not match, or that is not an
`AgentRun` on a task queue your workers serve (`SIGNOFF_SERVED_TASK_QUEUES`), is refused
(`conflict`: HTTP 409) with nothing signed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from temporalio.client import Client

from signoff.approval.answers import answer_problem
from signoff.approval.authority import grant_problem, refusal, vote_problem
from signoff.approval.people import Person
from signoff.approval.requests import GrantSpec, ToolApprovalRequest, ToolApprovalResponse, shown_grant
from signoff.errors import CommandError, SigningRefused
from signoff.inbox.calls import WaitingCall, how_decided, run_calls
from signoff.inbox.signer import InboxSigner
from signoff.inbox.who import Viewer
from signoff.operator import run_client
from signoff.operator.edits import schema_problem, tool_schema
from signoff.operator.waiting import bounded
from signoff.signing.derived import ServedRuns, decision_claim_for

Outcome = Literal["approved", "denied", "vote", "refused"]
Screen = Callable[[WaitingCall], "str | None"]
"""The inbox's own reason not to decide a call as it waits now (None: decide it)."""


@dataclass(frozen=True)
class SeenCall:
    """A call as the person saw it: run, call id, arguments digest."""

    workflow_id: str
    call_id: str
    digest: str


@dataclass(frozen=True)
class Choice:
    """What the person chose: approve (maybe with edited arguments, maybe granting) or deny."""

    approved: bool
    reason: str | None = None
    arguments: dict[str, Any] | None = None
    grant: GrantSpec | None = None
    answer: Any = None
    """An answer to an MCP server's question (kind `input`); `decline`/`cancel` instead of one."""
    decline: bool = False
    cancel: bool = False

    @property
    def answers_input(self) -> bool:
        return self.answer is not None or self.decline or self.cancel


@dataclass(frozen=True)
class Result:
    """What came of one call: `approved`, `denied`, `vote` (towards a quorum) or `refused`
    (`conflict`: refused because the run's request does not match what it shows, or the run
    is not one the inbox signs for)."""

    target: SeenCall
    outcome: Outcome
    message: str
    tool: str = ""
    conflict: bool = False


def viewer_as_person(viewer: Viewer, signing: bool) -> Person:
    """The viewer as the run will see them: verified (with groups) when the inbox signs."""
    if signing:
        return Person(name=viewer.name, groups=viewer.groups, verified=True)
    return Person.claimed(viewer.name)  # a claimed name: the run trusts no claimed groups


class InboxDecisions:
    """Decides calls for the inbox's viewers, signing each decision when it has a key."""

    def __init__(self, client: Client, signer: InboxSigner | None = None, served: ServedRuns | None = None) -> None:
        self.client, self.signer = client, signer
        self.served = served or ServedRuns()

    def refusal(self, call: WaitingCall, viewer: Viewer, approving: bool = True) -> str | None:
        """Why the run would refuse this viewer's decision on `call`, or the inbox would not
        sign it (None: neither)."""
        request = call.request
        if request.policy.verified and self.signer is None:
            return (
                f"call {request.call_id!r} ({request.name}) needs a verified approver, and this inbox has no "
                "signing key (SIGNOFF_INBOX_SIGNING_KEY_FILE)"
            )
        if self._signs(request) and call.run is not None and (problem := self.served.problem(call.run)):
            return problem
        who = viewer_as_person(viewer, self.signer is not None)
        return refusal(request, who, call.requested_by) or (vote_problem(request, who) if approving else None)

    def may_edit(self, request: ToolApprovalRequest) -> bool:
        return request.policy.quorum <= 1 and isinstance(request.arguments, dict)

    async def decide(self, viewer: Viewer, target: SeenCall, action: Choice, screen: Screen | None = None) -> Result:
        """Decide one call as `viewer` saw it; a refusal is a result, never an exception.

        Args:
            screen: refuses the call as it waits now for a reason of the inbox's (what the
                viewer may see, what they opened), before anything is sent.
        """
        try:
            call = await self._current(target)
        except CommandError as exc:
            return Result(target, "refused", str(exc))
        if isinstance(call, str):
            return Result(target, "refused", call)
        if screen is not None and (problem := screen(call)) is not None:
            return Result(target, "refused", problem)
        try:
            response = await self._response(viewer, call, action)
        except SigningRefused as exc:
            return Result(target, "refused", str(exc), call.request.name, conflict=True)
        except ValueError as exc:
            return Result(target, "refused", str(exc), call.request.name)
        try:
            ack = await run_client.submit(self.client.get_workflow_handle(target.workflow_id), [response])
        except CommandError as exc:
            return Result(target, "refused", str(exc), call.request.name)
        outcome = next((d.outcome for d in ack.decided if d.call_id == target.call_id), "approved")
        return Result(target, _outcome(outcome), _said(outcome, response), call.request.name)

    async def decide_all(
        self, viewer: Viewer, targets: Sequence[SeenCall], action: Choice, screen: Screen | None = None
    ) -> list[Result]:
        """Decide exactly `targets`, each bound to its digest; one result each, in order.

        The calls of one run are decided one after the other (a run takes a few updates at
        once); runs are decided side by side.
        """
        runs: dict[str, list[SeenCall]] = {}
        for target in dict.fromkeys(targets):
            runs.setdefault(target.workflow_id, []).append(target)

        async def one_run(calls: list[SeenCall]) -> list[Result]:
            return [await self.decide(viewer, t, action, screen) for t in calls]

        answers = await bounded([lambda c=c: one_run(c) for c in runs.values()])  # type: ignore[misc]
        results: dict[SeenCall, Result] = {}
        for calls, answer in zip(runs.values(), answers, strict=True):
            if isinstance(answer, BaseException):
                results.update({t: Result(t, "refused", f"not decided: {answer}") for t in calls})
            else:
                results.update({r.target: r for r in answer})
        return [results[t] for t in dict.fromkeys(targets)]

    async def _current(self, target: SeenCall) -> WaitingCall | str:
        """The call as it waits now, or why it cannot be decided as seen."""
        calls = await run_calls(self.client, target.workflow_id)
        call = next((c for c in calls if c.request.call_id == target.call_id), None)
        if call is None:
            decided = await how_decided(self.client, target.workflow_id, target.call_id, target.digest)
            return f"call {target.call_id!r} no longer waits: {decided.text}"
        if call.request.arguments_digest != target.digest:
            return (
                f"call {target.call_id!r} changed since you saw it (its arguments are not the ones shown): "
                "nothing was decided; open it again to see it as it is now"
            )
        return call

    async def _response(self, viewer: Viewer, call: WaitingCall, action: Choice) -> ToolApprovalResponse:
        """The decision to send; ValueError says why it cannot be sent (SigningRefused: why the
        inbox does not sign it)."""
        request = call.request
        if self._signs(request) and call.run is not None and (problem := self.served.problem(call.run)):
            raise SigningRefused(problem)
        arguments = action.arguments if action.approved and action.arguments != request.arguments else None
        if (problem := self.refusal(call, viewer, action.approved)) is not None:
            raise ValueError(problem)
        if action.answers_input or request.asks_input:
            return await self._signed(viewer, call, self._answer(viewer, request, action))
        if arguments is not None:
            if not self.may_edit(request):
                raise ValueError(
                    f"call {request.call_id!r}: its arguments cannot be edited (a quorum decides "
                    "it, or the model's arguments are not a JSON object)"
                )
            schema = await tool_schema(self.client, call.workflow_id, request.name)
            if (problem := schema_problem(schema, arguments)) is not None:
                raise ValueError(problem)
        response = ToolApprovalResponse(
            call_id=request.call_id,
            approved=action.approved,
            reason=action.reason or None,
            arguments_digest=request.arguments_digest,
            arguments=arguments,
            grant=shown_grant(action.grant, request) if action.approved else None,
            approver=None if self.signer else viewer.name,
        )
        if (problem := grant_problem(request, response)) is not None:
            raise ValueError(problem)
        return await self._signed(viewer, call, response)

    def _answer(self, viewer: Viewer, request: ToolApprovalRequest, action: Choice) -> ToolApprovalResponse:
        """The answer to an MCP server's question the form gives; ValueError: why it cannot be sent."""
        response = ToolApprovalResponse(
            call_id=request.call_id,
            approved=False,
            answer=action.answer,
            decline=action.decline,
            cancel=action.cancel,
            reason=action.reason or None,
            arguments_digest=request.arguments_digest,
            approver=None if self.signer else viewer.name,
        )
        if (problem := answer_problem(request, response)) is not None:
            raise ValueError(problem)
        return response

    async def _signed(self, viewer: Viewer, call: WaitingCall, response: ToolApprovalResponse) -> ToolApprovalResponse:
        """`response` as sent: signed, when the inbox has a key and the call's policy is verified."""
        request = call.request
        if self.signer is None:
            return response
        if request.binding is None:
            raise ValueError(
                f"call {request.call_id!r} names no binding to sign (a worker older than signed "
                "decisions asked for it): decide it with the CLI"
            )
        run = call.run or await run_client.run_facts(self.client, call.workflow_id)
        token = self.signer.sign(viewer, decision_claim_for(run, request, response, self.served))
        return response.model_copy(update={"token": token})

    def _signs(self, request: ToolApprovalRequest) -> bool:
        return self.signer is not None and request.policy.verified and request.binding is not None


def _outcome(text: str) -> Outcome:
    return "denied" if text == "denied" else "vote" if text == "vote" else "approved"


def _said(outcome: str, response: ToolApprovalResponse) -> str:
    if response.answers_input:
        return {
            "accept": "answered: the answer goes back to the MCP server",
            "decline": "declined (the server is told)",
        }.get(response.input_action(), "dismissed (the server is told)")
    if outcome == "vote":
        return "your approval is counted; the call waits for more approvers (quorum)"
    if outcome == "denied":
        return f"denied: the model is told Rejected: {response.reason or 'User denied'}"
    return "approved with your edited arguments" if response.arguments is not None else "approved"
