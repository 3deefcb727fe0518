"""How the tool loop settles a waiting call: decisions under its policy, grants, the audit record.

A part of `AgentLoop` (signoff/loop/agent_loop.py): `Decisions` works on the open round
through `signoff.loop.rounds.Rounds`. The rules of who may decide are
`signoff.approval.authority`, the audit chain `signoff.approval.audit`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta

from signoff.approval import answers, audit, authority
from signoff.approval.authority import Decider, Decision
from signoff.approval.requests import ApprovalRecord, Grant, GrantMatch, ToolApprovalResponse
from signoff.approval.signatures import answer_digest, respond_digest
from signoff.errors import DecisionError
from signoff.loop.limits import cap_text
from signoff.loop.rounds import Rounds
from signoff.loop.state import CallStatus, LoopState, PendingCall
from signoff.messages import ApprovalDecisionEvent, GrantEvent

DENIED_WITHOUT_REASON = "User denied"


class Decisions:
    """Decisions, grants and audit records of the waiting calls."""

    def __init__(self, rounds: Rounds) -> None:
        self.rounds = rounds

    @property
    def state(self) -> LoopState:
        return self.rounds.state

    def decide(self, decisions: Sequence[ToolApprovalResponse | Decision], now: datetime) -> list[str]:
        """Apply decisions; returns the call ids they decided (or voted on).

        Raises:
            DecisionError: nothing is pending, an id is unknown or already decided, one
                call is decided twice, a digest does not match, or a decider may not
                decide a call under its policy. Nothing is applied then.
        """
        targets = self.check(decisions, now=now)
        for call_id, decision in targets:
            entry = self.state.entry(call_id)
            assert entry is not None
            if entry.status is CallStatus.AWAITING:  # an earlier grant in this batch may have settled it
                self._apply(entry, decision, now)
        return [call_id for call_id, _ in targets]

    def check(
        self,
        decisions: Sequence[ToolApprovalResponse | Decision],
        *,
        authority: bool = True,
        now: datetime | None = None,
    ) -> list[tuple[str, Decision]]:
        """Validate decisions without applying them; returns (call id, decision) pairs.

        With `authority=False` only what needs no identity is checked (ids, digests): an
        update validator does that for a decision whose token is verified later. `now`: when
        they arrive (a policy's `min_review_seconds` is counted to then; None: not checked)."""
        waiting = [r.call_id for r in self.state.requests()]
        if not waiting:
            raise DecisionError("no tool call is awaiting approval", waiting)
        if not decisions:
            raise DecisionError("no decision given", waiting)
        if len(decisions) > 1 and any(_similar(item) for item in decisions):
            raise DecisionError(
                "a similar grant is made for one call at a time, never in a batch of decisions", waiting
            )
        targets: list[tuple[str, Decision]] = []
        for item in decisions:
            decision = Decision.of(item)
            star = decision.response.call_id == "*"
            # `*` leaves expired calls be, and MCP servers' questions (each is answered on its own)
            awaiting = [p.call.id for p in self.state.waiting() if not (p.request and p.request.asks_input)]
            for call_id in awaiting if star else [decision.response.call_id]:
                if any(call_id == seen for seen, _ in targets):
                    if star:
                        continue
                    raise DecisionError(f"call {call_id!r} is decided twice in one request", waiting)
                if call_id not in waiting:
                    raise DecisionError(self.why_not_pending(call_id), waiting)
                problem = self._problem(call_id, decision, authority, now)
                if problem:
                    raise DecisionError(problem, waiting)
                targets.append((call_id, decision))
        return targets

    def revoke_grant(self, grant_id: str) -> Grant:
        """End a grant at once; returns it.

        Raises:
            DecisionError: no grant has that id.
        """
        problem = self.unknown_grant(grant_id)
        if problem is not None:
            raise DecisionError(problem, [])
        grant = next(g for g in self.state.grants if g.grant_id == grant_id)
        grant.uses_left = 0
        self.rounds.emit(GrantEvent(action="revoked", grant=grant.model_copy()))
        return grant

    def unknown_grant(self, grant_id: str) -> str | None:
        """Why `grant_id` names no grant of this run (with the ids it has), or None."""
        if any(g.grant_id == grant_id for g in self.state.grants):
            return None
        known = ", ".join(g.grant_id for g in self.state.grants) or "none"
        return f"no grant with id {grant_id!r} (grants: {known})"

    def settle(
        self,
        entry: PendingCall,
        response: ToolApprovalResponse,
        now: datetime,
        *,
        decider: Decider | None = None,
        grant_id: str | None = None,
        timed_out: bool = False,
        outcome: str | None = None,
    ) -> None:
        """Decide a waiting call: record it in the audit chain; an approved call is ready to
        run (with edited arguments, if any), a denied one answered `Rejected: <reason>`."""
        request = entry.request
        assert request is not None
        person = (decider or Decider.claimed(response.approver)).person
        edited = response.arguments if response.approved else None
        responded = response.respond is not None and not timed_out
        answered = response.answers_input and not timed_out
        if answered:
            outcome = (
                outcome or {"accept": "answered", "decline": "declined", "cancel": "cancelled"}[response.input_action()]
            )
        record = ApprovalRecord(
            call_id=entry.call.id,
            name=entry.call.name,
            arguments=request.arguments,
            approved=response.approved,
            reason=response.reason,
            approver=None if timed_out else person.name,
            edited_arguments=edited,
            requested_at=request.requested_at,
            decided_at=now,
            timed_out=timed_out,
            outcome=outcome or ("approved" if response.approved else "responded" if responded else "denied"),
            verified=person.verified and not timed_out,
            votes=list(request.votes),
            grant_id=grant_id,
            arguments_digest=request.arguments_digest,
            policy_digest=request.policy.digest(),
            respond_digest=respond_digest(response.respond) if response.respond is not None else None,
            answer_digest=answer_digest(response.answer) if answered and response.answer is not None else None,
            state_digest=entry.asked.state_digest() if answered and entry.asked else None,
            delegate=decider.delegate if decider and not timed_out else None,
        )
        self.record(record)
        if response.approved:
            entry.status, entry.approval = CallStatus.READY, record
            if edited is not None:
                entry.run_arguments = json.dumps(edited)
        elif answered:  # the answer goes back to the server with its state (AgentLoop.answer_of)
            entry.status, entry.answered, entry.answer = CallStatus.READY, record, answers.elicit_result(response)
        elif response.respond is not None:  # the person's text is the result; the tool never runs
            self.rounds.answer(entry, cap_text(response.respond, self.state.limits.max_tool_output))
        else:
            self.rounds.answer(entry, f"Rejected: {response.reason or DENIED_WITHOUT_REASON}")

    def apply_grants(self, entry: PendingCall, now: datetime) -> None:
        """Let live grants vote on a waiting call, each as the approver who granted it."""
        for grant in self.state.grants:
            request = entry.request
            if entry.status is not CallStatus.AWAITING or request is None:
                return
            decider = authority.grant_decider(grant)
            if not authority.grant_matches(grant, request, now, signed=self.state.signed_decisions):
                continue
            person, requested_by = decider.person, self.state.requested_by
            if authority.refusal(request, person, requested_by) or authority.vote_problem(request, person):
                continue  # a grant never widens what its approver may approve
            if grant.uses_left is not None:
                grant.uses_left -= 1
            self.rounds.emit(GrantEvent(action="used", grant=grant.model_copy(), call_id=entry.call.id))
            approval = ToolApprovalResponse(call_id=entry.call.id, approved=True, reason=f"granted by {grant.grant_id}")
            self._apply(entry, Decision(approval, decider), now, grant_id=grant.grant_id)

    def why_not_pending(self, call_id: str) -> str:
        """Why `call_id` names no waiting call: timed out, already decided, or unknown."""
        record = next((r for r in reversed(self.state.approvals) if r.call_id == call_id), None)
        if record is not None and record.timed_out:
            return f"call {call_id!r} timed out before a decision arrived; it was not decided late"
        if record is not None:
            return f"call {call_id!r} is already decided"
        return f"no pending call with id {call_id!r}"

    def _problem(
        self, call_id: str, decision: Decision, check_authority: bool = True, now: datetime | None = None
    ) -> str | None:
        entry = self.state.entry(call_id)
        assert entry is not None and entry.request is not None
        request, response = entry.request, decision.response
        if entry.status is CallStatus.EXPIRED:
            return (
                f"call {call_id!r} expired before a decision arrived (its policy holds it): re-open it first "
                f"(update rearm_tool_call, or `signoff rearm RUN {call_id}`)"
            )
        if response.arguments_digest and response.arguments_digest != request.arguments_digest:
            return (
                f"call {call_id!r} is not what was reviewed: its arguments_digest is {request.arguments_digest}, "
                f"the decision names {response.arguments_digest}"
            )
        if problem := answers.answer_problem(request, response):
            return problem
        if not check_authority:
            return None
        person = decision.decider.person
        problem = authority.refusal(request, person, self.state.requested_by)
        problem = problem or authority.delegation_problem(request, decision.decider, self.state.requested_by)
        problem = problem or (None if response.answers_input else authority.kind_problem(request, response))
        if self.state.signed_decisions:
            problem = problem or authority.signature_problem(request, response, decision.decider.claim)
        if problem or not response.approved:
            return problem or authority.respond_problem(request, response)
        return (
            authority.vote_problem(request, person, decision.decider.delegate)
            or authority.edit_problem(request, response)
            or authority.grant_problem(request, response)
            or (authority.review_problem(request, person, now) if now is not None else None)
        )

    def _apply(self, entry: PendingCall, decision: Decision, now: datetime, grant_id: str | None = None) -> None:
        request, response = entry.request, decision.response
        assert request is not None
        decider = decision.decider
        if response.approved and decider.token is not None:
            entry.tokens.append(decider.token)  # the evidence the tool activity checks
            if decider.delegation_token is not None:  # with the delegation it is the delegator's vote under
                entry.delegations.extend([None] * (len(entry.tokens) - 1 - len(entry.delegations)))
                entry.delegations.append(decider.delegation_token)
        if response.answers_input and decider.token is not None:
            entry.answer_tokens.append(decider.token)  # the signed answer, which the sending activity hands on
        if response.approved and not authority.add_vote(request, decider.person, now, grant_id, decider.delegate):
            return  # counted; the quorum is not reached yet
        self.settle(entry, response, now, decider=decision.decider, grant_id=grant_id)
        if response.approved and response.grant is not None and grant_id is None:
            self._make_grant(entry, decision, now)

    def record(self, record: ApprovalRecord) -> None:
        s = self.state
        audit.chain_record(record, s.audit_head)
        s.audit_head = record.hash
        s.approvals.append(record)
        audit.elide_old_arguments(s.approvals, s.limits.audit_budget)
        self.rounds.emit(ApprovalDecisionEvent(record=record.model_copy(deep=True)))

    def _make_grant(self, entry: PendingCall, decision: Decision, now: datetime) -> None:
        s, spec, request = self.state, decision.response.grant, entry.request
        assert spec is not None and request is not None
        approved = authority.approved_digest(request, decision.response)
        grantor = decision.decider.person
        s.grants_made += 1
        grant = Grant(
            grant_id=f"grant_{s.grants_made}",
            tool=entry.call.name,
            arguments_digest=approved if spec.match == "arguments" else None,
            approver=grantor.name,
            verified=grantor.verified,
            groups=grantor.groups,
            created_at=now,
            expires_at=now + timedelta(seconds=spec.ttl_seconds) if spec.ttl_seconds else None,
            uses_left=spec.max_uses,
            from_call=entry.call.id,
            token=decision.decider.token,
            pattern=request.similar_pattern if spec.match is GrantMatch.SIMILAR else None,
        )
        s.grants.append(grant)
        self.rounds.emit(GrantEvent(action="created", grant=grant.model_copy(), call_id=entry.call.id))
        for other in s.waiting():  # a new grant also settles matching calls already waiting
            self.apply_grants(other, now)


def _similar(item: ToolApprovalResponse | Decision) -> bool:
    grant = Decision.of(item).response.grant
    return grant is not None and grant.match is GrantMatch.SIMILAR
