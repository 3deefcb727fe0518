"""Small text formatters of the CLI and the inbox: values made inert, laid out whole, wrapped,
aged; a policy and its votes in words.

What a person is asked to approve is never cut: `value_lines` gives all of it, pretty
JSON when it does not fit on one line, wrapped to the terminal's width with the
continuation indented. Only what is not decided on (tool output) is `shorten`ed, and
then it says how much was left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from signoff.approval.policy import DEFAULT_POLICY, ApprovalPolicy
from signoff.approval.requests import AutoNote, Vote
from signoff.text.neutral import neutralise
from signoff.views.render import arguments_text

MAX_SHOWN_LINES = 12
MAX_SHOWN_CHARS = 1200
ONE_LINE = 100
"""Compact JSON longer than this (or than the width) is shown pretty, one key a line."""
CONTINUED = "~ "
"""Marks a wrapped line's continuation: not a JSON line start, so it cannot pass for a new key."""


def safe(value: Any) -> str:
    """Any value as inert text (None as an empty string)."""
    return "" if value is None else neutralise(value if isinstance(value, str) else str(value))


def compact(value: Any) -> str:
    """A JSON value (or raw text) on one line, inert and whole."""
    return neutralise(arguments_text(value))


def wrap(line: str, width: int | None, indent: str = "") -> list[str]:
    """`line` cut into pieces of at most `width` characters (the first as is, the rest after
    `indent` and a continuation mark); nothing is lost. No width: the line whole."""
    if width is None or len(line) <= width:
        return [line]
    room = max(10, width - len(indent) - len(CONTINUED))
    first, rest = line[:width], line[width:]
    return [first, *(indent + CONTINUED + rest[i : i + room] for i in range(0, len(rest), room))]


def value_lines(value: Any, width: int | None = None, used: int = 0, indent: str = "") -> list[str]:
    """A value whole and inert: one line when it fits, else pretty JSON, wrapped.

    Args:
        used: columns already taken on the first line (a label before the value).
        indent: what each further line starts with, so they line up under the first.
    """
    one = compact(value)
    room = max(10, width - used) if width else ONE_LINE
    if len(one) <= room and "\n" not in one:
        return [one]
    pretty = neutralise(arguments_text(value, indent=2)).splitlines() or [""]
    head = wrap(pretty[0], room if width else None, indent)
    return head + [piece for line in pretty[1:] for piece in wrap(indent + line, width, indent)]


def text_lines(text: str, width: int | None = None, indent: str = "") -> list[str]:
    """Multi-line text (a preview, a reason) inert and whole, each line wrapped, after `indent`."""
    return [piece for line in neutralise(text).splitlines() or [""] for piece in wrap(indent + line, width, indent)]


def shorten(text: str, max_lines: int = MAX_SHOWN_LINES, max_chars: int = MAX_SHOWN_CHARS) -> str:
    """At most `max_lines` lines and `max_chars` characters, saying how much was left out."""
    lines = text.rstrip("\n").splitlines() or [""]
    kept = "\n".join(lines[:max_lines])[:max_chars]
    hidden = len(text.rstrip("\n")) - len(kept)
    return kept if hidden <= 0 else f"{kept}\n… ({hidden} more characters)"


def indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in text.splitlines() or [""])


def _aware(when: str | datetime) -> datetime:
    moment = datetime.fromisoformat(when) if isinstance(when, str) else when
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def span(seconds: float) -> str:
    """`42s`, `5m`, `3h`, `2d`: coarse and short."""
    seconds = max(0, int(seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def format_age(requested_at: str | datetime | None, now: datetime | None = None) -> str:
    """How long ago: `42s`, `5m`, `3h`, `2d` (`?` when unknown)."""
    if requested_at is None:
        return "?"
    return span(((now or datetime.now(UTC)) - _aware(requested_at)).total_seconds())


def format_deadline(expires_at: datetime | None, now: datetime | None = None) -> str:
    """`2026-11-29 12:05:00Z (in 5m)`, `... (passed)`, or `none (waits until decided)`."""
    if expires_at is None:
        return "none (waits until decided)"
    moment = _aware(expires_at).astimezone(UTC)
    left = (moment - (now or datetime.now(UTC))).total_seconds()
    return f"{moment:%Y-%m-%d %H:%M:%S}Z ({f'in {span(left)}' if left > 0 else 'passed'})"


def policy_text(policy: ApprovalPolicy) -> str:
    """`anyone may decide` or the rules that differ from it, e.g. `approvers: alice; quorum 2`."""
    if policy == DEFAULT_POLICY:
        return "anyone may decide"
    rules = [f"approvers: {', '.join(policy.approvers) or 'anyone'}", f"quorum {policy.quorum}"]
    rules += ["verified tokens only"] if policy.verified else []
    rules += ["not the requester"] if policy.separate_requester else []
    if policy.timeout_seconds:
        rules.append(f"after {policy.timeout_seconds:g}s: {policy.on_timeout.value}")
    if policy.escalate_after_seconds:
        rules.append(f"escalates after {policy.escalate_after_seconds:g}s to {', '.join(policy.escalate_to)}")
    return "; ".join(safe(rule) for rule in rules)


def votes_text(votes: Sequence[Vote]) -> str:
    """`alice (verified), bob`: who approved so far."""
    return ", ".join(f"{safe(v.approver or '?')}{' (verified)' if v.verified else ''}" for v in votes)


def auto_text(note: AutoNote) -> str:
    """`auto mode escalated: <why>`: what auto mode made of a waiting call."""
    sure = (
        f" ({note.verdict}, confidence {note.confidence:.2f})" if note.verdict and note.confidence is not None else ""
    )
    if note.state == "evaluating":
        return f"auto mode ({note.criteria}) is evaluating; you may decide meanwhile"
    if note.state == "voted":
        return f"auto mode ({note.criteria}) approved: one vote{sure}"
    return f"auto mode escalated: {note.reasoning or 'no reason given'}{sure}"
