"""Terminal rendering of agent events (the original `AgentResponseConverter`)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from signoff.messages import (
    AgentEvent,
    ApprovalDecisionEvent,
    ApprovalRequestEvent,
    DecisionIgnoredEvent,
    ErrorEvent,
    FinishEvent,
    TextEvent,
    ToolCallEvent,
    ToolResultEvent,
)


def _args(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def render_event(event: AgentEvent) -> str:
    """One event as terminal text; text deltas come back as they are."""
    if isinstance(event, TextEvent):
        return event.text
    if isinstance(event, ToolCallEvent):
        return f"[Tool call: {event.call.name}({event.call.arguments})]"
    if isinstance(event, ApprovalRequestEvent):
        return f"[Approval required: {event.request.name}({_args(event.request.arguments)})]"
    if isinstance(event, ApprovalDecisionEvent):
        r = event.record
        verdict = "Approved" if r.approved else ("Timed out" if r.timed_out else "Denied")
        reason = f": {r.reason}" if r.reason else ""
        return f"[{verdict}: {r.name}{reason}]"
    if isinstance(event, ToolResultEvent):
        return f"[Tool result {event.name}: {event.content}]"
    if isinstance(event, DecisionIgnoredEvent):
        return f"[Decision ignored: {event.reason}]"
    if isinstance(event, FinishEvent):
        return f"[Finish: {event.reason.value}]"
    if isinstance(event, ErrorEvent):
        return f"[Error: {event.message}]"
    raise TypeError(f"not an agent event: {event!r}")


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
