"""A waiting call's timers: its deadline (with its policy's outcome), reminders, escalation.

A part of `AgentLoop` (signoff/loop/agent_loop.py). The loop reads no clock: drivers pass
`now`, wait until `next_wakeup()`, then call `due(now)`. A deadline settles its call as
`signoff.loop.decisions.Decisions` settles any decision.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from signoff.approval import authority
from signoff.approval.authority import Decider
from signoff.approval.policy import OnTimeout
from signoff.approval.requests import MAX_SECONDS, ApprovalRecord, ToolApprovalRequest, ToolApprovalResponse
from signoff.errors import DecisionError
from signoff.loop.decisions import Decisions
from signoff.loop.rounds import Rounds
from signoff.loop.state import CallStatus, LoopState, PendingCall
from signoff.messages import ApprovalEscalatedEvent, ApprovalReminderEvent, CallRearmedEvent, DeadlineExtendedEvent


class Timers:
    """Deadlines, reminders and escalation of the waiting calls."""

    def __init__(self, rounds: Rounds, decisions: Decisions) -> None:
        self.rounds, self.decisions = rounds, decisions

    @property
    def state(self) -> LoopState:
        return self.rounds.state

    def due(self, now: datetime) -> None:
        """Fire what is due by `now`: reminders, escalations, and deadlines (with each
        call's `on_timeout` outcome)."""
        for entry in self.state.waiting():
            request = entry.request
            assert request is not None
            while (reminder := entry.next_reminder_at()) is not None and reminder <= now:
                entry.reminders_sent += 1
                self.rounds.emit(ApprovalReminderEvent(request=request.model_copy(deep=True)))
            if (escalation := entry.escalation_at()) is not None and escalation <= now:
                request.escalated = True
                self.rounds.emit(ApprovalEscalatedEvent(request=request.model_copy(deep=True)))
            if request.expires_at and request.expires_at <= now:
                self._time_out(entry, now)

    def next_wakeup(self) -> datetime | None:
        """The earliest deadline, reminder or escalation of the waiting calls."""
        times = [t for entry in self.state.waiting() for t in entry.timers()]
        return min(times) if times else None

    def check_extension(self, call_id: str, seconds: float, decider: Decider) -> ToolApprovalRequest:
        """Validate an `extend_deadline`; returns the request it would move."""
        waiting = [r.call_id for r in self.state.requests()]
        entry = self.state.entry(call_id)
        if entry is None or entry.status is not CallStatus.AWAITING or entry.request is None:
            raise DecisionError(self.decisions.why_not_pending(call_id), waiting)
        if entry.request.expires_at is None:
            raise DecisionError(f"call {call_id!r} has no deadline to extend", waiting)
        if not 0 < seconds <= MAX_SECONDS:
            raise DecisionError("seconds must be positive and at most 366 days", waiting)
        try:
            entry.request.expires_at + timedelta(seconds=seconds)
        except OverflowError:
            raise DecisionError(f"call {call_id!r}'s deadline cannot move that far", waiting) from None
        problem = authority.refusal(entry.request, decider.person, self.state.requested_by)
        if self.state.signed_decisions:
            problem = problem or authority.extension_problem(entry.request, seconds, decider.claim)
        if problem:
            raise DecisionError(problem, waiting)
        return entry.request

    def extend_deadline(self, call_id: str, seconds: float, decider: Decider) -> datetime:
        """Move a waiting call's deadline `seconds` later; returns the new deadline."""
        request = self.check_extension(call_id, seconds, decider)
        assert request.expires_at is not None
        request.expires_at = request.expires_at + timedelta(seconds=seconds)
        self.rounds.emit(DeadlineExtendedEvent(call_id=call_id, expires_at=request.expires_at, by=decider.person.name))
        return request.expires_at

    def check_rearm(self, call_id: str, seconds: float | None, decider: Decider) -> ToolApprovalRequest:
        """Validate a `rearm_tool_call`; returns the expired request it would re-open."""
        waiting = [r.call_id for r in self.state.requests()]
        entry = self.state.entry(call_id)
        if entry is not None and entry.status is CallStatus.AWAITING:
            raise DecisionError(f"call {call_id!r} has not expired: it still waits (extend_deadline moves it)", waiting)
        if entry is None or entry.status is not CallStatus.EXPIRED or entry.request is None:
            raise DecisionError(self.decisions.why_not_pending(call_id), waiting)
        if seconds is not None and not 0 < seconds <= MAX_SECONDS:
            raise DecisionError("deadline_seconds must be positive and at most 366 days", waiting)
        problem = authority.refusal(entry.request, decider.person, self.state.requested_by)
        if problem:
            raise DecisionError(problem, waiting)
        return entry.request

    def rearm(
        self, call_id: str, seconds: float | None, decider: Decider, now: datetime, drawn: str | None = None
    ) -> ToolApprovalRequest:
        """Re-open an expired call as a new request (a new deadline, `seconds` or its policy's,
        and a new binding): it waits, is reminded and escalates as a fresh one; returns it."""
        old = self.check_rearm(call_id, seconds, decider)
        entry = self.state.entry(call_id)
        assert entry is not None
        if entry.asked is not None and old.asks_input:  # an MCP server's question is asked again, as it was
            self.rounds.ask_input(entry, entry.asked, now, drawn)
        else:
            self.rounds.ask(entry, now, old.preview, drawn)
        request = entry.request
        assert request is not None
        if seconds is not None:
            request.expires_at = now + timedelta(seconds=seconds)
        request.rearmed_from = old.binding.request if old.binding else None
        entry.reminders_sent, entry.tokens = 0, []
        self.rounds.emit(
            CallRearmedEvent(
                call_id=call_id,
                by=decider.person.name,
                expires_at=request.expires_at,
                request=request.binding.request if request.binding else None,
                previous_request=request.rearmed_from,
            )
        )
        self.decisions.apply_grants(entry, now)
        return request

    def _time_out(self, entry: PendingCall, now: datetime) -> None:
        request = entry.request
        assert request is not None and request.expires_at is not None and request.requested_at is not None
        seconds = _seconds_text((request.expires_at - request.requested_at).total_seconds())
        outcome = request.policy.timeout_outcome
        reason = f"No decision within {seconds}s"
        if outcome is OnTimeout.HOLD:
            self._hold(entry, now, f"{reason}; held: re-open it with rearm_tool_call")
            return
        approve = outcome is OnTimeout.APPROVE
        response = ToolApprovalResponse(call_id=entry.call.id, approved=approve, reason=reason)
        failing = outcome is OnTimeout.FAIL_RUN
        self.decisions.settle(entry, response, now, timed_out=True, outcome="failed_run" if failing else None)
        if failing:
            self.state.failure = (
                f"no decision on call {entry.call.id!r} ({entry.call.name}) within {seconds}s, "
                "and its approval policy says on_timeout=fail_run"
            )

    def _hold(self, entry: PendingCall, now: datetime, reason: str) -> None:
        """Retire a call whose deadline passed under `on_timeout = "hold"`: recorded as expired,
        still listed (status `expired`), the run parked until it is re-armed."""
        request = entry.request
        assert request is not None
        record = ApprovalRecord(
            call_id=entry.call.id,
            name=entry.call.name,
            arguments=request.arguments,
            approved=False,
            reason=reason,
            requested_at=request.requested_at,
            decided_at=now,
            timed_out=True,
            outcome="expired",
            votes=list(request.votes),
            arguments_digest=request.arguments_digest,
            policy_digest=request.policy.digest(),
        )
        self.decisions.record(record)
        entry.status, request.status = CallStatus.EXPIRED, "expired"


def _seconds_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
