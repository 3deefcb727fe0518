"""Which of a run's events people hear of, and how the notices go out without holding the run up.

| loop event | notice |
| --- | --- |
| `approval_request` (the call still waits once the loop settled: no grant took it) | `approval_requested` |
| `approval_reminder`, `approval_escalated` (the call still waits) | the same name |
| `approval_decision` of a call that waited | `approval_decided`, or `approval_timed_out` |
| `auto_evaluation` that leaves the call to a person (escalated, refused, one vote of a quorum) | `approval_requested` |

A call that never waited (a live grant or the start input decided it at once) was never
announced, so neither is its decision. A call under auto mode is announced only once auto
mode leaves it to a person, and a decision auto mode made alone is not announced either. Runs
whose snapshot names no channel send nothing and schedule nothing.

Each notice goes to each channel as its own activity (`signoff.notify`), retried by
Temporal for the plan's `retry_seconds`, in a workflow task of its own: the run goes on
at once. A channel that still fails is recorded as a `notification_failed` event. Before
the run returns, continues as new or fails on an approval deadline, it waits at most
`DRAIN` for notices still in flight; those still retrying then are dropped with the run
(as are any in flight when it fails for another reason).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from signoff.activities import AgentActivities
    from signoff.activities.models import NotifyInput
    from signoff.agent.snapshot import NotifyPlan
    from signoff.approval.auto import is_auto_name
    from signoff.messages import (
        AgentEvent,
        ApprovalDecisionEvent,
        ApprovalEscalatedEvent,
        ApprovalReminderEvent,
        ApprovalRequestEvent,
        AutoEvaluationEvent,
        NotificationFailedEvent,
    )
    from signoff.views.notices import NoticeKind
    from signoff.workflows.activity_options import root_message

DRAIN = timedelta(seconds=30)
"""How long a finishing run waits for notices still in flight."""
ATTEMPT_TIMEOUT = timedelta(seconds=30)
RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1), backoff_coefficient=2.0, maximum_interval=timedelta(seconds=60)
)
"""Bounded by the plan's `retry_seconds` (schedule-to-close), not by a number of attempts."""


_TO_A_PERSON = frozenset({"escalated", "refused", "vote"})
"""Auto mode's outcomes after which a person must decide (or add their vote)."""


def notice_for(event: AgentEvent, waiting: Collection[str]) -> NoticeKind | None:
    """The notice an event sets off, or None. `waiting`: ids of the calls still waiting."""
    if isinstance(event, AutoEvaluationEvent):  # auto mode left the call to a person: now they are told
        return "approval_requested" if event.outcome in _TO_A_PERSON and event.call_id in waiting else None
    if isinstance(event, (ApprovalRequestEvent, ApprovalReminderEvent, ApprovalEscalatedEvent)):
        if event.request.call_id not in waiting:
            return None  # settled in the same step (a grant, the start input, a deadline)
        if isinstance(event, ApprovalRequestEvent):
            return None if event.request.policy.auto is not None else "approval_requested"  # auto mode first
        return "approval_reminder" if isinstance(event, ApprovalReminderEvent) else "approval_escalated"
    if isinstance(event, ApprovalDecisionEvent):
        record = event.record
        if record.decided_at is not None and record.decided_at == record.requested_at:
            return None  # decided as it was asked for: it never waited, nobody was told it did
        if is_auto_name(record.approver):
            return None  # auto mode decided it alone: nobody was asked
        return "approval_timed_out" if record.timed_out else "approval_decided"
    return None


class Notifier:
    """Starts a run's notices and knows how many are still in flight."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def in_flight(self) -> int:
        return len(self._tasks)

    def send(
        self,
        plan: NotifyPlan,
        kind: NoticeKind,
        agent: str,
        kept: dict[str, Any],
        record: Callable[[AgentEvent], object],
    ) -> None:
        """Start `kind` to every channel of `plan`; `kept` is the event as the run keeps it."""
        call = kept.get("request") or kept.get("record") or {}
        for channel in plan.channels:
            notice = NotifyInput(
                channel=channel,
                event=kind,
                agent=agent,
                seq=kept["seq"],
                request=kept.get("request"),
                decision=kept.get("record"),
            )
            task = asyncio.create_task(self._one(notice, plan, str(call.get("call_id", "?")), record))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def drain(self) -> None:
        """Wait, at most `DRAIN`, for the notices still in flight (no timer when there are none)."""
        if not self.in_flight:
            return
        try:
            await workflow.wait_condition(
                lambda: not self.in_flight, timeout=DRAIN, timeout_summary="notifications in flight"
            )
        except TimeoutError:
            pass  # still retrying: they end with the run

    async def _one(
        self, notice: NotifyInput, plan: NotifyPlan, call_id: str, record: Callable[[AgentEvent], object]
    ) -> None:
        try:
            await workflow.execute_activity_method(
                AgentActivities.notify,
                notice,
                start_to_close_timeout=ATTEMPT_TIMEOUT,
                schedule_to_close_timeout=timedelta(seconds=plan.retry_seconds),
                retry_policy=RETRY,
                summary=f"notify {notice.event} for {call_id}",
            )
        except ActivityError as exc:
            message = f"{notice.event} for call {call_id} to channel {notice.channel}: {root_message(exc)}"
            record(NotificationFailedEvent(event=notice.event, message=message[:2_000]))
