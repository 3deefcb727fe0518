"""Auto mode in a run: an evaluator judges each waiting call whose policy has `auto`, beside the wait.

When a call starts waiting, the run asks `signoff.auto_evaluate` (activities/auto.py) about it
and goes on waiting for people as usual: whoever decides first wins. A person's decision, a
grant or a deadline that settles the call while the evaluator thinks leaves its verdict
recorded and unused (`superseded`). A verdict decides the call only if the activity says it
may (a confident approve or deny the policy lets `auto:<set>` make; under a `verified`
policy, signed with the worker's service key) and the loop's own rules accept it as they
would a person's (who may decide, quorum, signatures); anything else leaves the call to a
person, with the evaluator's reasoning shown in the pending request. Every verdict is an
`auto_evaluation` event.

The evaluation is asked once per request; a run that continues as new while one is in flight
asks again in its next run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

from signoff.activities import AgentActivities
from signoff.activities.models import AutoInput, AutoOutput
from signoff.approval import auto
from signoff.approval.authority import Decider, Decision
from signoff.approval.auto import AutoVerdict
from signoff.approval.identity import read_verified
from signoff.approval.names import same_name
from signoff.approval.people import Person
from signoff.approval.requests import AutoNote, ToolApprovalRequest, ToolApprovalResponse
from signoff.errors import DecisionError, TokenError
from signoff.loop.agent_loop import AgentLoop
from signoff.loop.state import CallStatus
from signoff.messages import AgentEvent, AutoEvaluationEvent
from signoff.workflows.activity_options import root_message

GRACE = timedelta(seconds=30)
"""The activity's own timeout past the policy's: the evaluator answers `escalate` at the policy's."""


class AutoEvaluations:
    """The run's evaluations in flight, by call id.

    Args:
        loop: the run's loop (its waiting calls, and the rules a verdict must pass).
        emit: records an event in the run's feed.
        changed: called once a verdict may have changed what the run waits for.
    """

    def __init__(self, loop: AgentLoop, emit: Callable[[AgentEvent], None], changed: Callable[[], None]) -> None:
        self._loop = loop
        self._emit = emit
        self._changed = changed
        self._running: dict[str, asyncio.Task[None]] = {}

    def start(self, agent: str, snapshot_digest: str | None) -> None:
        """Ask about every waiting call under auto mode that has not been asked about in this run."""
        for entry in self._loop.state.waiting():
            request = entry.request
            if request is None or request.policy.auto is None or request.call_id in self._running:
                continue
            if request.auto is not None and request.auto.state != "evaluating":
                continue  # asked already (a run continued as new while one was in flight asks again)
            request.auto = AutoNote(criteria=request.policy.auto.criteria)
            task = asyncio.create_task(self._evaluate(agent, snapshot_digest, request))
            self._running[request.call_id] = task

    async def _evaluate(self, agent: str, snapshot_digest: str | None, request: ToolApprovalRequest) -> None:
        assert request.policy.auto is not None
        try:
            out: AutoOutput = await workflow.execute_activity_method(
                AgentActivities.auto_evaluate,
                AutoInput(agent=agent, snapshot_digest=snapshot_digest, request=request),
                start_to_close_timeout=timedelta(seconds=request.policy.auto.timeout_seconds) + GRACE,
                retry_policy=RetryPolicy(maximum_attempts=1),
                summary=f"auto mode: {request.call_id} ({request.name})",
            )
        except ActivityError as exc:
            why = f"the evaluator failed: {root_message(exc)}"
            out = AutoOutput(criteria=request.policy.auto.criteria, verdict=AutoVerdict.escalate(why))
        outcome, note = self._apply(request, out)
        verdict = out.verdict
        self._emit(
            AutoEvaluationEvent(
                call_id=request.call_id,
                criteria=out.criteria or request.policy.auto.criteria,
                verdict=verdict.verdict,
                confidence=verdict.confidence,
                reasoning=verdict.reasoning,
                outcome=outcome,
                note=note,
                latency_ms=out.latency_ms,
                model=out.model,
                prompt_tokens=out.prompt_tokens,
                completion_tokens=out.completion_tokens,
            )
        )
        self._changed()

    def _apply(self, request: ToolApprovalRequest, out: AutoOutput) -> tuple[str, str | None]:
        """What the verdict does to the call (its outcome, and a note saying why not more)."""
        entry = self._loop.state.entry(request.call_id)
        if entry is None or entry.status is not CallStatus.AWAITING or entry.request is not request:
            return "superseded", "the call was decided before the verdict arrived"
        verdict, criteria = out.verdict, request.policy.auto.criteria if request.policy.auto else out.criteria
        note = AutoNote(
            criteria=criteria, verdict=verdict.verdict, confidence=verdict.confidence, reasoning=verdict.reasoning
        )
        if not (out.decides and auto.settles(verdict, out.needed)):
            request.auto = note.model_copy(update={"state": "escalated"})
            if out.why_not:
                request.auto.reasoning = f"{verdict.reasoning} (not applied: {out.why_not})"
            return ("refused" if out.why_not else "escalated"), out.why_not
        approved = verdict.verdict == "approve"
        response = ToolApprovalResponse(
            call_id=request.call_id,
            approved=approved,
            reason=verdict.reasoning,
            arguments_digest=request.arguments_digest,
        )
        try:
            decider = self._decider(criteria, out.token)
            self._loop.decide([Decision(response, decider)], workflow.now())
        except (DecisionError, TokenError, ValueError) as exc:
            request.auto = note.model_copy(update={"state": "escalated", "reasoning": f"not applied: {exc}"})
            return "refused", str(exc)
        if entry.status is CallStatus.AWAITING:  # one vote of a quorum
            request.auto = note.model_copy(update={"state": "voted"})
            return "vote", None
        return ("approved" if approved else "denied"), None

    def _decider(self, criteria: str, token: str | None) -> Decider:
        """The evaluator as a decider: `auto:<set>`, vouched for by its signed token when it has one
        (the tool activity verifies that token again before the call runs)."""
        if token is None:
            return Decider(Person(name=auto.approver_name(criteria)))
        identity = read_verified(token)
        if not same_name(identity.subject, auto.approver_name(criteria)):
            raise ValueError(
                f"the evaluator's token signs as {identity.subject!r}, not {auto.approver_name(criteria)!r}"
            )
        self._loop.state.signed_decisions = True
        return Decider(identity.person(), identity.claim, token)
