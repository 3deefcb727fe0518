"""The tool loop with an approval gate, as a pure synchronous state machine.

This is the only place that knows the algorithm (the original `FunctionInvokingChatClient`).
Drivers — the in-process agent and the Temporal workflow — ask `next_action()` and turn
its answer into effects:

    CallModel      send `loop.messages` to the model, then `apply_model_turn(...)`
    RunTools       run these calls, then `apply_tool_result(...)` for each
    AwaitApproval  wait until `decide(...)` (or `due` at `next_wakeup()`, or `cancel`) settles them
    Finish         the run is over, for this reason
    Fail           the run must fail with this message (a policy said `fail_run` on timeout)

Rules: every tool call of an assistant message gets exactly one tool message, in call
order, before the next model request. Calls past the per-turn limit, to an unknown tool,
or with arguments that are not a JSON object answer `Error: ...` without asking anyone.
Calls that need no approval run at once; the rest wait, each under its tool's policy
(who may decide, quorum, deadline, reminders, escalation), unless a live grant settles
them. Approved calls run (optionally with edited arguments); denied ones answer
`Rejected: <reason>`. Each decision is an audit record chained to the one before.

Which calls need approval is an *input* (`gated`): the caller asks the run's snapshot,
so this module stays pure. It reads no clock (callers pass `now`), does no I/O and
imports nothing that does. Decision rules live in `signoff.authority`, the audit chain
in `signoff.audit`, the transcript budget in `signoff.budget`.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from signoff import audit, authority
from signoff.approvals import ApprovalRecord, Grant, ToolApprovalRequest, ToolApprovalResponse, parse_arguments
from signoff.authority import Decider, Decision
from signoff.budget import elide_to_budget
from signoff.digest import arguments_digest
from signoff.limits import Limits, cap_text
from signoff.loop_state import DEFAULT_MAX_ROUNDS, CallStatus, LoopState, PendingCall
from signoff.messages import (
    AgentEvent,
    ApprovalDecisionEvent,
    ApprovalEscalatedEvent,
    ApprovalReminderEvent,
    ApprovalRequestEvent,
    ChatMessage,
    ChatResponse,
    DeadlineExtendedEvent,
    DecisionIgnoredEvent,
    FinishEvent,
    FinishReason,
    GrantEvent,
    TextEvent,
    ToolCall,
    ToolCallEvent,
    ToolResultEvent,
)
from signoff.policy import DEFAULT_POLICY, ApprovalPolicy, OnTimeout

DENIED_WITHOUT_REASON = "User denied"
CANCELLED_REASON = "Run cancelled"


# --- next actions ------------------------------------------------------------------


@dataclass(frozen=True)
class CallModel:
    """Send the transcript to the model (round `round`, from 0)."""

    round: int


@dataclass(frozen=True)
class RunTools:
    """Run these calls, with the arguments to run them with (edited ones included)."""

    calls: list[ToolCall]


@dataclass(frozen=True)
class AwaitApproval:
    """Wait for decisions on these requests (until `next_wakeup()` at the latest)."""

    requests: list[ToolApprovalRequest]


@dataclass(frozen=True)
class Finish:
    """The run is over."""

    reason: FinishReason


@dataclass(frozen=True)
class Fail:
    """The run cannot go on: fail it with `message`."""

    message: str


Action = CallModel | RunTools | AwaitApproval | Finish | Fail


class DecisionError(ValueError):
    """A decision that cannot be applied; the message names the pending call ids."""

    def __init__(self, problem: str, pending: list[str]) -> None:
        self.problem = problem
        self.pending = pending
        shown = ", ".join(pending) if pending else "none"
        super().__init__(f"{problem} (pending call ids: {shown})")


# --- the machine -------------------------------------------------------------------


class AgentLoop:
    """The tool loop. Drive it with `next_action()` and the `apply_*`/`decide` methods.

    Args:
        messages: the transcript so far (without the agent's instructions).
        tools: known tool names and their descriptions.
        max_rounds: most model requests in this run.
        approval_timeout_seconds: a call's deadline when its policy sets none (None
            waits forever); undecided calls are then denied.
        policies: approval policy by tool name; others: anyone may decide.
        limits: per-turn calls, tool output, transcript and audit budgets.
        max_total_tokens: finish `length` once the run has used this many tokens.
        requested_by: who asked for the run (for `separate_requester`).
    """

    def __init__(
        self,
        messages: list[ChatMessage],
        tools: Mapping[str, str],
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        approval_timeout_seconds: float | None = None,
        *,
        policies: Mapping[str, ApprovalPolicy] | None = None,
        limits: Limits | None = None,
        max_total_tokens: int | None = None,
        requested_by: str | None = None,
    ) -> None:
        if max_rounds < 1:
            raise ValueError("max_rounds must be at least 1")
        self.state = LoopState(
            messages=list(messages),
            tools=dict(tools),
            policies=dict(policies or {}),
            limits=limits or Limits(),
            max_rounds=max_rounds,
            approval_timeout_seconds=approval_timeout_seconds,
            max_total_tokens=max_total_tokens,
            requested_by=requested_by,
        )
        self._events: list[AgentEvent] = []

    @classmethod
    def from_state(cls, state: LoopState) -> AgentLoop:
        loop = cls.__new__(cls)
        loop.state = state
        loop._events = []
        return loop

    def adopt_agent(self, tools: Mapping[str, str], policies: Mapping[str, ApprovalPolicy], limits: Limits) -> None:
        """Take the run's snapshot of the agent: its tools, their policies, its limits."""
        self.state.tools, self.state.policies, self.state.limits = dict(tools), dict(policies), limits

    # --- reading ---------------------------------------------------------------

    @property
    def messages(self) -> list[ChatMessage]:
        """The transcript: answered tool messages of the open round, in call order."""
        answered = [p for p in self.state.pending if p.status is CallStatus.DONE]
        return self.state.messages + [ChatMessage.tool(p.result or "", p.call.id) for p in answered]

    def pending_requests(self) -> list[ToolApprovalRequest]:
        return [p.request for p in self._waiting() if p.request]

    def live_grants(self, now: datetime) -> list[Grant]:
        return [g for g in self.state.grants if g.live(now)]

    def drain_events(self) -> list[AgentEvent]:
        events, self._events = self._events, []
        return events

    def next_action(self) -> Action:
        s = self.state
        if s.failure is not None:
            return Fail(s.failure)
        if s.finish_reason is not None:
            return Finish(s.finish_reason)
        ready = [p for p in s.pending if p.status is CallStatus.READY]
        if ready:
            return RunTools([p.call.model_copy(update={"arguments": p.run_arguments}) for p in ready])
        waiting = self.pending_requests()
        if waiting:
            return AwaitApproval(waiting)
        return CallModel(s.round)

    def approval_of(self, call_id: str) -> ApprovalRecord | None:
        """The record that approved a ready call (None if it needs no approval)."""
        entry = self._entry(call_id)
        return entry.approval if entry else None

    # --- model turns and tool results ------------------------------------------

    def apply_model_turn(
        self,
        response: ChatResponse,
        gated: Collection[str],
        now: datetime,
        *,
        text_streamed: bool = False,
        previews: Mapping[str, str] | None = None,
    ) -> None:
        """Record one model turn. `gated`: ids of the calls whose tool needs approval;
        `previews`: what those calls would do, by call id."""
        s = self.state
        self._expect(isinstance(self.next_action(), CallModel), "apply_model_turn")
        s.round += 1
        s.usage = s.usage + response.usage
        message = response.message.model_copy(update={"role": "assistant"})
        s.messages.append(message)
        if message.content and not text_streamed:
            self._emit(TextEvent(text=message.content))
        if not message.tool_calls:
            reason = response.finish_reason
            self._finish(FinishReason.STOP if reason is FinishReason.TOOL_CALLS else reason)
            return
        self._open_round(message.tool_calls, set(gated), now, previews=previews or {})

    def apply_tool_result(self, call_id: str, content: str) -> None:
        """Record a tool's message text (`Error: ...` for a failed tool)."""
        entry = self._entry(call_id)
        self._expect(entry is not None and entry.status is CallStatus.READY, f"result for {call_id!r}")
        assert entry is not None
        self._answer(entry, cap_text(content, self.state.limits.max_tool_output))

    # --- decisions -----------------------------------------------------------------

    def decide(self, decisions: Sequence[ToolApprovalResponse | Decision], now: datetime) -> list[str]:
        """Apply decisions; returns the call ids they decided (or voted on).

        Raises:
            DecisionError: nothing is pending, an id is unknown or already decided, one
                call is decided twice, a digest does not match, or a decider may not
                decide a call under its policy. Nothing is applied then.
        """
        targets = self.check_decisions(decisions)
        for call_id, decision in targets:
            entry = self._entry(call_id)
            assert entry is not None
            if entry.status is CallStatus.AWAITING:  # an earlier grant in this batch may have settled it
                self._apply(entry, decision, now)
        return [call_id for call_id, _ in targets]

    def check_decisions(
        self, decisions: Sequence[ToolApprovalResponse | Decision], *, authority: bool = True
    ) -> list[tuple[str, Decision]]:
        """Validate decisions without applying them; returns (call id, decision) pairs.

        With `authority=False` only what needs no identity is checked (ids, digests): an
        update validator does that for a decision whose token is verified later."""
        waiting = [r.call_id for r in self.pending_requests()]
        if not waiting:
            raise DecisionError("no tool call is awaiting approval", waiting)
        if not decisions:
            raise DecisionError("no decision given", waiting)
        targets: list[tuple[str, Decision]] = []
        for item in decisions:
            decision = Decision.of(item)
            star = decision.response.call_id == "*"
            for call_id in waiting if star else [decision.response.call_id]:
                if any(call_id == seen for seen, _ in targets):
                    if star:
                        continue
                    raise DecisionError(f"call {call_id!r} is decided twice in one request", waiting)
                if call_id not in waiting:
                    raise DecisionError(self._why_not_pending(call_id), waiting)
                problem = self._decision_problem(call_id, decision, authority)
                if problem:
                    raise DecisionError(problem, waiting)
                targets.append((call_id, decision))
        return targets

    def due(self, now: datetime) -> None:
        """Fire what is due by `now`: reminders, escalations, and deadlines (with each
        call's `on_timeout` outcome)."""
        for entry in self._waiting():
            request = entry.request
            assert request is not None and request.requested_at is not None
            reminders = request.policy.remind_after_seconds
            while entry.reminders_sent < len(reminders) and request.requested_at + _secs(
                reminders[entry.reminders_sent]
            ) <= now:
                entry.reminders_sent += 1
                self._emit(ApprovalReminderEvent(request=request.model_copy(deep=True)))
            escalate = request.policy.escalate_after_seconds
            if escalate and not request.escalated and request.requested_at + _secs(escalate) <= now:
                request.escalated = True
                self._emit(ApprovalEscalatedEvent(request=request.model_copy(deep=True)))
            if request.expires_at and request.expires_at <= now:
                self._time_out(entry, now)

    def next_wakeup(self) -> datetime | None:
        """The earliest deadline, reminder or escalation of the waiting calls."""
        times = [t for entry in self._waiting() for t in entry.timers()]
        return min(times) if times else None

    def check_extension(self, call_id: str, seconds: float, decider: Decider) -> ToolApprovalRequest:
        """Validate an `extend_deadline`; returns the request it would move."""
        waiting = [r.call_id for r in self.pending_requests()]
        entry = self._entry(call_id)
        if entry is None or entry.status is not CallStatus.AWAITING or entry.request is None:
            raise DecisionError(self._why_not_pending(call_id), waiting)
        if entry.request.expires_at is None:
            raise DecisionError(f"call {call_id!r} has no deadline to extend", waiting)
        if not 0 < seconds <= 366 * 86400:
            raise DecisionError("seconds must be positive and at most a year", waiting)
        problem = authority.refusal(entry.request, decider, self.state.requested_by)
        if problem:
            raise DecisionError(problem, waiting)
        return entry.request

    def extend_deadline(self, call_id: str, seconds: float, decider: Decider) -> datetime:
        """Move a waiting call's deadline `seconds` later; returns the new deadline."""
        request = self.check_extension(call_id, seconds, decider)
        assert request.expires_at is not None
        request.expires_at = request.expires_at + _secs(seconds)
        self._emit(DeadlineExtendedEvent(call_id=call_id, expires_at=request.expires_at, by=decider.name))
        return request.expires_at

    def revoke_grant(self, grant_id: str) -> Grant:
        """End a grant at once; returns it.

        Raises:
            DecisionError: no grant has that id.
        """
        grant = next((g for g in self.state.grants if g.grant_id == grant_id), None)
        if grant is None:
            known = ", ".join(g.grant_id for g in self.state.grants) or "none"
            raise DecisionError(f"no grant with id {grant_id!r} (grants: {known})", [])
        grant.uses_left = 0
        self._emit(GrantEvent(action="revoked", grant=grant.model_copy()))
        return grant

    def cancel(self, now: datetime) -> None:
        """Deny what waits, answer what has not run, and finish `cancelled`."""
        for entry in self.state.pending:
            if entry.status is CallStatus.AWAITING:
                self._settle_decision(entry, ToolApprovalResponse.deny(entry.call.id, CANCELLED_REASON), now)
            if entry.status is CallStatus.READY:
                self._answer(entry, f"Rejected: {CANCELLED_REASON}")
        self._finish(FinishReason.CANCELLED)

    def resume(
        self,
        responses: Sequence[ToolApprovalResponse],
        gated: Collection[str],
        now: datetime,
        requester: Decider | None = None,
        previews: Mapping[str, str] | None = None,
    ) -> None:
        """Stateless resume: reopen the unanswered calls of the last assistant message.

        Tool messages already after that message count as answers. `responses` are the
        requester's decisions on calls among the rest; each obeys the call's policy like
        any decision, and one the policy does not allow is recorded as ignored and the
        call asked for as usual.

        Raises:
            DecisionError: a response names a call that is not open.
        """
        s = self.state
        index = _last_assistant_with_calls(s.messages)
        calls = (s.messages[index].tool_calls or []) if index is not None else []
        answers = {m.tool_call_id: m.content or "" for m in s.messages[(index or 0) + 1 :] if m.role == "tool"}
        open_ids = [c.id for c in calls if c.id not in answers]
        strangers = [r.call_id for r in responses if r.call_id not in open_ids and r.call_id != "*"]
        if responses and (not open_ids or strangers):
            raise DecisionError(f"tool_approval_responses name calls that are not open: {strangers or '*'}", open_ids)
        if not open_ids:
            return
        assert index is not None
        s.messages = s.messages[: index + 1]
        # A decision for an open call counts, even where the snapshot would not ask.
        decided = {r.call_id for r in responses} & set(open_ids)
        self._open_round(calls, set(gated) | decided, now, previews=previews or {}, answered=answers)
        for response in responses:
            try:
                self.decide([Decision(response, self._starter(response, requester))], now)
            except DecisionError as exc:
                self._emit(DecisionIgnoredEvent(reason=f"tool_approval_responses: {exc}"))

    def _starter(self, response: ToolApprovalResponse, requester: Decider | None) -> Decider:
        """Who decides through the start input: the requester, whatever the response claims."""
        requested_by = self.state.requested_by
        if requested_by is None:
            return requester or Decider.claimed(response.approver)
        if response.approver not in (None, requested_by):
            raise DecisionError(f"{response.approver!r} is not the requester {requested_by!r}", [])
        return requester or Decider.claimed(requested_by)

    # --- opening a round ---------------------------------------------------------

    def _open_round(
        self,
        calls: list[ToolCall],
        gated: set[str],
        now: datetime,
        *,
        previews: Mapping[str, str],
        answered: Mapping[str | None, str] | None = None,
    ) -> None:
        answered = answered or {}
        entries = [PendingCall(call=c, status=CallStatus.READY, run_arguments=c.arguments) for c in calls]
        self.state.pending = entries
        for call in calls:
            if call.id not in answered:
                self._emit(ToolCallEvent(call=call))
        limit = self.state.limits.max_calls_per_turn
        for position, entry in enumerate(entries):
            call = entry.call
            if call.id in answered:
                self._settle(entry, answered[call.id], emit=False)
            elif position >= limit:
                self._settle(entry, f"Error: too many tool calls in one turn (limit {limit})")
            elif problem := self._invalid_call(call):
                self._settle(entry, f"Error: {problem}")
            elif call.id in gated:
                entry.status = CallStatus.AWAITING
                entry.request = self._request(call, now, previews.get(call.id))
                self._emit(ApprovalRequestEvent(request=entry.request.model_copy(deep=True)))
                self._apply_grants(entry, now)
        self._close_round_if_answered()

    def _request(self, call: ToolCall, now: datetime, preview: str | None) -> ToolApprovalRequest:
        policy = self.state.policies.get(call.name, DEFAULT_POLICY)
        timeout = policy.timeout_seconds or self.state.approval_timeout_seconds
        arguments = parse_arguments(call.arguments)
        return ToolApprovalRequest(
            call_id=call.id,
            name=call.name,
            arguments=arguments,
            arguments_digest=arguments_digest(arguments),
            description=self.state.tools.get(call.name, ""),
            round=max(self.state.round - 1, 0),
            requested_at=now,
            expires_at=now + _secs(timeout) if timeout is not None else None,
            policy=policy,
            preview=preview,
        )

    def _invalid_call(self, call: ToolCall) -> str | None:
        if call.name not in self.state.tools:
            known = ", ".join(sorted(self.state.tools)) or "none"
            return f"unknown tool {call.name!r} (available tools: {known})"
        if not isinstance(parse_arguments(call.arguments), dict):
            return f"arguments for {call.name} are not a JSON object: {call.arguments[:200]!r}"
        return None

    # --- applying decisions --------------------------------------------------------

    def _decision_problem(self, call_id: str, decision: Decision, check_authority: bool = True) -> str | None:
        entry = self._entry(call_id)
        assert entry is not None and entry.request is not None
        request, response = entry.request, decision.response
        if response.arguments_digest and response.arguments_digest != request.arguments_digest:
            return (
                f"call {call_id!r} is not what was reviewed: its arguments_digest is {request.arguments_digest}, "
                f"the decision names {response.arguments_digest}"
            )
        if not check_authority:
            return None
        problem = authority.refusal(request, decision.decider, self.state.requested_by)
        if problem or not response.approved:
            return problem
        return authority.vote_problem(request, decision.decider) or authority.edit_problem(request, response)

    def _apply(self, entry: PendingCall, decision: Decision, now: datetime, grant_id: str | None = None) -> None:
        request, response = entry.request, decision.response
        assert request is not None
        if response.approved and not authority.add_vote(request, decision.decider, now, grant_id):
            return  # counted; the quorum is not reached yet
        self._settle_decision(entry, response, now, decider=decision.decider, grant_id=grant_id)
        if response.approved and response.grant is not None and grant_id is None:
            self._make_grant(entry, decision, now)

    def _settle_decision(
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
        request = entry.request
        assert request is not None
        decider = decider or Decider.claimed(response.approver)
        edited = response.arguments if response.approved else None
        record = ApprovalRecord(
            call_id=entry.call.id,
            name=entry.call.name,
            arguments=request.arguments,
            approved=response.approved,
            reason=response.reason,
            approver=None if timed_out else decider.name,
            edited_arguments=edited,
            requested_at=request.requested_at,
            decided_at=now,
            timed_out=timed_out,
            outcome=outcome or ("approved" if response.approved else "denied"),
            verified=decider.verified and not timed_out,
            votes=list(request.votes),
            grant_id=grant_id,
            arguments_digest=request.arguments_digest,
            policy_digest=request.policy.digest(),
        )
        self._record(record)
        if response.approved:
            entry.status, entry.approval = CallStatus.READY, record
            if edited is not None:
                entry.run_arguments = json.dumps(edited)
        else:
            self._answer(entry, f"Rejected: {response.reason or DENIED_WITHOUT_REASON}")

    def _record(self, record: ApprovalRecord) -> None:
        s = self.state
        audit.seal(record, s.audit_head)
        s.audit_head = record.hash
        s.approvals.append(record)
        audit.elide_old_arguments(s.approvals, s.limits.audit_budget)
        self._emit(ApprovalDecisionEvent(record=record.model_copy(deep=True)))

    def _time_out(self, entry: PendingCall, now: datetime) -> None:
        request = entry.request
        assert request is not None and request.expires_at is not None and request.requested_at is not None
        seconds = _seconds_text((request.expires_at - request.requested_at).total_seconds())
        outcome = request.policy.on_timeout if request.policy.timeout_seconds else OnTimeout.DENY
        reason = f"No decision within {seconds}s"
        approve = outcome is OnTimeout.APPROVE
        response = ToolApprovalResponse(call_id=entry.call.id, approved=approve, reason=reason)
        failing = outcome is OnTimeout.FAIL_RUN
        self._settle_decision(entry, response, now, timed_out=True, outcome="failed_run" if failing else None)
        if failing:
            self.state.failure = (
                f"no decision on call {entry.call.id!r} ({entry.call.name}) within {seconds}s, "
                "and its approval policy says on_timeout=fail_run"
            )

    # --- grants ------------------------------------------------------------------

    def _make_grant(self, entry: PendingCall, decision: Decision, now: datetime) -> None:
        s, spec, request = self.state, decision.response.grant, entry.request
        assert spec is not None and request is not None
        s.grants_made += 1
        grant = Grant(
            grant_id=f"grant_{s.grants_made}",
            tool=entry.call.name,
            arguments_digest=request.arguments_digest if spec.match == "arguments" else None,
            approver=decision.decider.name,
            verified=decision.decider.verified,
            groups=decision.decider.groups,
            created_at=now,
            expires_at=now + _secs(spec.ttl_seconds) if spec.ttl_seconds else None,
            uses_left=spec.max_uses,
            from_call=entry.call.id,
        )
        s.grants.append(grant)
        self._emit(GrantEvent(action="created", grant=grant.model_copy(), call_id=entry.call.id))
        for other in self._waiting():  # a new grant also settles matching calls already waiting
            self._apply_grants(other, now)

    def _apply_grants(self, entry: PendingCall, now: datetime) -> None:
        """Let live grants vote on a waiting call, each as the approver who granted it."""
        for grant in self.state.grants:
            request = entry.request
            if entry.status is not CallStatus.AWAITING or request is None:
                return
            decider = authority.grant_decider(grant)
            if not authority.grant_matches(grant, request, now):
                continue
            if authority.refusal(request, decider, self.state.requested_by) or authority.vote_problem(request, decider):
                continue  # a grant never widens what its approver may approve
            if grant.uses_left is not None:
                grant.uses_left -= 1
            self._emit(GrantEvent(action="used", grant=grant.model_copy(), call_id=entry.call.id))
            approval = ToolApprovalResponse(call_id=entry.call.id, approved=True, reason=f"granted by {grant.grant_id}")
            self._apply(entry, Decision(approval, decider), now, grant_id=grant.grant_id)

    # --- answering and closing ---------------------------------------------------

    def _answer(self, entry: PendingCall, content: str) -> None:
        self._settle(entry, content)
        self._close_round_if_answered()

    def _settle(self, entry: PendingCall, content: str, emit: bool = True) -> None:
        entry.status = CallStatus.DONE
        entry.result = content
        if emit:
            self._emit(ToolResultEvent(call_id=entry.call.id, name=entry.call.name, content=content))

    def _close_round_if_answered(self) -> None:
        s = self.state
        if not s.pending or any(p.status is not CallStatus.DONE for p in s.pending):
            return
        s.messages = self.messages
        s.pending = []
        if elide_to_budget(s.messages, s.limits.transcript_budget):
            s.transcript_epoch += 1
        if s.max_total_tokens is not None and s.usage.total_tokens >= s.max_total_tokens:
            self._finish(FinishReason.LENGTH)
        elif s.round >= s.max_rounds:
            self._finish(FinishReason.MAX_ROUNDS)

    def _finish(self, reason: FinishReason) -> None:
        if self.state.finish_reason is None:
            self.state.finish_reason = reason
            self._emit(FinishEvent(reason=reason, usage=self.state.usage))

    def _waiting(self) -> list[PendingCall]:
        return [p for p in self.state.pending if p.status is CallStatus.AWAITING]

    def _entry(self, call_id: str) -> PendingCall | None:
        return next((p for p in self.state.pending if p.call.id == call_id), None)

    def _why_not_pending(self, call_id: str) -> str:
        record = next((r for r in reversed(self.state.approvals) if r.call_id == call_id), None)
        if record is not None and record.timed_out:
            return f"call {call_id!r} timed out before a decision arrived; it was not decided late"
        if record is not None:
            return f"call {call_id!r} is already decided"
        return f"no pending call with id {call_id!r}"

    def _emit(self, event: AgentEvent) -> None:
        self._events.append(event)

    @staticmethod
    def _expect(ok: bool, what: str) -> None:
        if not ok:
            raise RuntimeError(f"{what} does not fit the loop's next action")


def unanswered_calls(messages: list[ChatMessage]) -> list[ToolCall]:
    """The calls of a trailing assistant message that have no tool message yet.

    These are what a stateless resume reopens; drivers ask the run's snapshot which
    of them need approval before calling `resume`.
    """
    index = _last_assistant_with_calls(messages)
    if index is None:
        return []
    answered = {m.tool_call_id for m in messages[index + 1 :] if m.role == "tool"}
    return [c for c in messages[index].tool_calls or [] if c.id not in answered]


def _last_assistant_with_calls(messages: list[ChatMessage]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "assistant":
            return index if message.tool_calls else None
        if message.role != "tool":
            return None
    return None


def _secs(seconds: float) -> timedelta:
    return timedelta(seconds=seconds)


def _seconds_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
