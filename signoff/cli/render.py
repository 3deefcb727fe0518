"""How a run's events and its result look in the terminal.

The core says what each event is about (`signoff.views.render.describe`); this module only
lays that out with colours and symbols. Every value from the run is made inert
(`cli.text`) as it is placed.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from signoff.approval.requests import ApprovalRecord
from signoff.cli.style import Style
from signoff.contract import AgentRunResult
from signoff.messages import (
    AgentEvent,
    ApprovalDecisionEvent,
    ApprovalRequestEvent,
    ToolCallEvent,
)
from signoff.operator.run_client import Seen
from signoff.views.render import EventView, describe
from signoff.views.text import compact, indent, safe, shorten, text_lines, value_lines

_SYMBOLS = {
    "info": ("info", "cyan"),
    "wait": ("wait", "yellow"),
    "ok": ("yes", "green"),
    "bad": ("no", "red"),
    "warn": ("warn", "yellow"),
    "end": ("end", "blue"),
}


def painted_event(event: AgentEvent, style: Style, width: int | None = None) -> str:
    """One event as terminal text."""
    view = describe(event)
    if view.kind == "text":
        return f"{style.paint('assistant:', 'bold')} " + "\n".join(text_lines(view.detail or "", width, "  ")).lstrip()
    if view.kind == "tool_result":
        head = f"{style.sym('result', 'cyan')} {safe(view.tool)} {_dim_id(view.call_id, style)}"
        return head + "\n" + style.paint(indent(safe(shorten(view.detail or ""))), "dim")
    if view.kind == "approval_decision":
        return _decision_line(view, style)
    symbol, colour = _SYMBOLS[view.tone]
    subject = _subject(view, style)
    if view.kind == "tool_call":  # the arrow says it: `→ read_file {"path": "a"}  (call_1)`
        return f"{style.sym('call', colour)} {subject}"
    label = view.label.lower() if view.tone == "info" else style.paint(view.label.lower(), colour, "bold")
    return f"{style.sym(symbol, colour)} {label}" + (f": {subject}" if subject else "")


def _subject(view: EventView, style: Style) -> str:
    parts = [
        style.paint(safe(view.tool), "bold") if view.tool else "",
        compact(view.arguments) if view.has_arguments else "",
        f"by {safe(view.by)}" if view.by else "",
    ]
    text = " ".join(part for part in parts if part)
    if view.detail:
        text += (": " if text else "") + safe(view.detail)
    if view.tokens is not None:
        text += f" ({view.tokens} tokens)"
    return text + (f"  {_dim_id(view.call_id, style)}" if view.call_id else "")


def _decision_line(view: EventView, style: Style) -> str:
    """`✔ call_1 approved by alice` / `✘ call_1 denied by bob: reason`."""
    colour = "green" if view.tone == "ok" else "red"
    by = f" by {safe(view.by)}" if view.by else ""
    extra = f" with arguments {compact(view.arguments)}" if view.has_arguments else ""
    reason = f": {safe(view.detail)}" if view.detail else ""
    sym = style.sym("yes" if view.tone == "ok" else "no", colour)
    return f"{sym} {safe(view.call_id)} {style.paint(view.label.lower(), colour)}{by}{extra}{reason}"


def _dim_id(call_id: str | None, style: Style) -> str:
    return style.paint(f"({safe(call_id)})", "dim")


def final_text_seqs(events: Sequence[Seen]) -> set[int]:
    """The seqs of text events directly followed by `finish`: the final answer, shown once at the end."""
    return {a.seq for a, b in itertools.pairwise(events) if a.kind == "text" and b.kind == "finish"}


def gated_call_seqs(events: Sequence[Seen]) -> set[int]:
    """The seqs of tool calls that have an approval request among `events`: the request shows them."""
    gated = {e.event.request.call_id for e in events if isinstance(e.event, ApprovalRequestEvent)}
    return {e.seq for e in events if isinstance(e.event, ToolCallEvent) and e.event.call.id in gated}


def render_record(record: ApprovalRecord, style: Style) -> str:
    """A decision of the audit trail in one line, as its event shows it."""
    return _decision_line(describe(ApprovalDecisionEvent(record=record)), style)


def render_result(result: AgentRunResult, style: Style, width: int | None = None) -> list[str]:
    """Finish reason, rounds, tokens, each approval (with its call, whole), then the final text."""
    reason = result.finish_reason.value
    colour = "green" if reason == "stop" else "yellow"
    head = f"{style.paint('finished', 'bold')}: {style.paint(reason, colour, 'bold')}"
    lines = [f"{head} after {result.rounds} round(s), {result.usage.total_tokens} tokens"]
    if result.approvals:
        lines.append(style.paint("approvals:", "bold"))
        for record in result.approvals:
            call = value_lines(record.arguments, width, 40, "    ")
            lines.append(f"  {render_record(record, style)} ({safe(record.name)} {call[0]}" + ("" if call[1:] else ")"))
            lines += [*call[1:-1], call[-1] + ")"] if call[1:] else []
    lines.append(style.paint("answer:", "bold"))
    lines += text_lines(result.text or "(no text)", width, "  ")
    return lines
