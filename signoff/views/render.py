"""What each agent event says, and its plain text (the original `AgentResponseConverter`).

One description of events serves every renderer: `describe` says what an event is
about (its label, tool, call, arguments, who, details, tone), `render_event` lays that
out as plain text for the in-process API, and the CLI styles the same description for
a terminal. Text that came from a model, a tool or a decision is neutralised where it
is laid out (`signoff.text.neutral`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from signoff.approval.requests import ApprovalRecord, Grant, parse_arguments
from signoff.messages import (
    AgentEvent,
    ApprovalDecisionEvent,
    ApprovalEscalatedEvent,
    ApprovalReminderEvent,
    ApprovalRequestEvent,
    AutoEvaluationEvent,
    CallRearmedEvent,
    DeadlineExtendedEvent,
    DecisionIgnoredEvent,
    ErrorEvent,
    FinishEvent,
    GrantEvent,
    MCPUnavailableEvent,
    NotificationFailedEvent,
    TextEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from signoff.text.neutral import neutralise

Tone = Literal["info", "wait", "ok", "bad", "warn", "end"]
_NOTHING: Any = object()


@dataclass(frozen=True)
class EventView:
    """What an event says, for a renderer to lay out. Values are raw (not yet neutralised).

    Attributes:
        kind: the event's `type`.
        label: a short title, e.g. `Tool call`, `Approved`, `Timed out`.
        tone: how it should feel: a wait, a success, a refusal, a warning, the end.
        arguments: the call's arguments (a JSON value, or the raw text); see `has_arguments`.
        detail: text that goes with it: model text, tool output, a reason, a message.
        by: who did it (an approver, `grant g-1`), with `(verified)` when a token said so.
    """

    kind: str
    label: str
    tone: Tone = "info"
    tool: str | None = None
    call_id: str | None = None
    arguments: Any = _NOTHING
    detail: str | None = None
    by: str | None = None
    tokens: int | None = None

    @property
    def has_arguments(self) -> bool:
        return self.arguments is not _NOTHING


def describe(event: AgentEvent) -> EventView:
    """The description of one event (TypeError for anything else)."""
    for kind, view in _VIEWS:
        if isinstance(event, kind):
            described: EventView = view(event)
            return described
    raise TypeError(f"not an agent event: {event!r}")


def _decision(event: ApprovalDecisionEvent) -> EventView:
    record = event.record
    label = "Approved" if record.approved else "Answered instead of run" if record.outcome == "responded" else "Denied"
    if record.timed_out:
        label = {
            "approved": "Timed out, approved",
            "failed_run": "Timed out, run failed",
            "expired": "Expired, held for a rearm",
        }.get(record.outcome or "", "Timed out")
    edited = record.edited_arguments if record.edited_arguments is not None else _NOTHING
    return EventView(
        kind=event.type,
        label=label,
        tone="ok" if record.approved else "bad",
        tool=record.name,
        call_id=record.call_id,
        arguments=edited,
        detail=record.reason,
        by=decided_by(record),
    )


def decided_by(record: ApprovalRecord) -> str | None:
    """`alice (verified)`, `grant g-1`, `alice, bob`: who decided a call (None: nobody said)."""
    if record.grant_id:
        return f"grant {record.grant_id}"
    names = [v.approver for v in record.votes if v.approver] if len(record.votes) > 1 else []
    who = ", ".join(names) or record.approver
    if who is None:
        return None
    return f"{who} (verified)" if record.verified else who


def _grant(event: GrantEvent) -> EventView:
    return EventView(
        kind=event.type,
        label=f"Grant {event.action}",
        tone="warn" if event.action == "created" else "info",
        tool=event.grant.tool,
        call_id=event.call_id,
        detail=grant_scope(event.grant),
        by=event.grant.approver,
    )


def grant_scope(grant: Grant) -> str:
    """`grant g-1: any call of run_command, 3 uses left, until 2026-...`"""
    what = f"calls with arguments {grant.arguments_digest[:16]}…" if grant.arguments_digest else "any call"
    what = f"calls like {grant.pattern!r}" if grant.pattern else what
    limits = [f"{grant.uses_left} uses left"] if grant.uses_left is not None else []
    limits += [f"until {grant.expires_at.isoformat()}"] if grant.expires_at else []
    return f"grant {grant.grant_id}: {what} of {grant.tool}" + (f" ({', '.join(limits)})" if limits else "")


_VIEWS: list[tuple[type, Any]] = [
    (TextEvent, lambda e: EventView(kind=e.type, label="Assistant", detail=e.text)),
    (
        ToolCallEvent,
        lambda e: EventView(
            kind=e.type,
            label="Tool call",
            tool=e.call.name,
            call_id=e.call.id,
            arguments=parse_arguments(e.call.arguments),
        ),
    ),
    (
        ToolResultEvent,
        lambda e: EventView(kind=e.type, label="Tool result", tool=e.name, call_id=e.call_id, detail=e.content),
    ),
    (
        ApprovalRequestEvent,
        lambda e: EventView(
            kind=e.type,
            label="Approval required",
            tone="wait",
            tool=e.request.name,
            call_id=e.request.call_id,
            arguments=e.request.arguments,
        ),
    ),
    (ApprovalDecisionEvent, _decision),
    (DecisionIgnoredEvent, lambda e: EventView(kind=e.type, label="Decision ignored", tone="warn", detail=e.reason)),
    (
        ApprovalReminderEvent,
        lambda e: EventView(
            kind=e.type, label="Still awaiting approval", tone="wait", tool=e.request.name, call_id=e.request.call_id
        ),
    ),
    (
        ApprovalEscalatedEvent,
        lambda e: EventView(
            kind=e.type,
            label="Escalated",
            tone="warn",
            tool=e.request.name,
            call_id=e.request.call_id,
            detail="may now also be decided by " + (", ".join(e.request.policy.escalate_to) or "nobody new"),
        ),
    ),
    (
        DeadlineExtendedEvent,
        lambda e: EventView(
            kind=e.type, label="Deadline extended", call_id=e.call_id, detail=f"now {e.expires_at.isoformat()}", by=e.by
        ),
    ),
    (
        CallRearmedEvent,
        lambda e: EventView(
            kind=e.type,
            label="Re-opened",
            tone="wait",
            call_id=e.call_id,
            detail=f"waits until {e.expires_at.isoformat()}" if e.expires_at else "waits for a decision",
            by=e.by,
        ),
    ),
    (GrantEvent, _grant),
    (
        NotificationFailedEvent,
        lambda e: EventView(kind=e.type, label="Notification failed", tone="warn", detail=f"{e.event}: {e.message}"),
    ),
    (
        MCPUnavailableEvent,
        lambda e: EventView(
            kind=e.type,
            label="MCP unavailable",
            tone="warn",
            detail=f"{e.server}{f' tool {e.tool}' if e.tool else ''}: {e.message}",
        ),
    ),
    (
        FinishEvent,
        lambda e: EventView(
            kind=e.type, label="Finish", tone="end", detail=e.reason.value, tokens=e.usage.total_tokens
        ),
    ),
    (ErrorEvent, lambda e: EventView(kind=e.type, label="Error", tone="bad", detail=e.message)),
    (AutoEvaluationEvent, lambda e: _auto(e)),
]


_AUTO_TONES: dict[str, Tone] = {"approved": "ok", "denied": "bad", "vote": "ok"}


def _auto(event: AutoEvaluationEvent) -> EventView:
    """`[Auto mode (ops): call_1: approve 0.95, approved: <reasoning>]`."""
    detail = f"{event.verdict} {event.confidence:.2f}, {event.outcome}: {event.reasoning}"
    return EventView(
        kind=event.type,
        label=f"Auto mode ({event.criteria})",
        tone=_AUTO_TONES.get(event.outcome, "wait"),
        call_id=event.call_id,
        detail=detail + (f" ({event.note})" if event.note else ""),
    )


def arguments_text(arguments: Any, indent: int | None = None) -> str:
    """Arguments as JSON text (the raw text when the model's was not JSON), not yet neutralised."""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False, indent=indent, default=str)


def render_event(event: AgentEvent) -> str:
    """One event as plain, inert text; text deltas come back as they are (neutralised)."""
    view = describe(event)
    if isinstance(event, TextEvent):
        return neutralise(event.text)
    body = view.tool or ""
    if view.has_arguments:
        shown = arguments_text(view.arguments)
        body += f"({shown})" if view.tool else f"with arguments {shown}"
    if view.by:
        body += f" by {view.by}"
    if view.detail:
        body += (": " if body else "") + view.detail
    return neutralise(f"[{view.label}: {body}]" if body else f"[{view.label}]")


class AgentResponseConverter:
    """Turns a stream of events into the text a terminal shows."""

    @staticmethod
    def to_text(events: Iterable[AgentEvent]) -> str:
        parts: list[str] = []
        for event in events:
            rendered = render_event(event)
            if isinstance(event, TextEvent):
                parts.append(rendered)
            else:
                parts.append(("\n" if parts and not parts[-1].endswith("\n") else "") + rendered + "\n")
        return "".join(parts)
