"""What a notification channel is told: the JSON body and its human-readable `text`.

Pure: the notify activity (activities/notify.py) fills in where the run is and sends it.
The body is the contract's (CONTRACT v2 "Notifications"); `text` is for people, so
chat tools' incoming webhooks can show it as it is.

What a stranger chose (the model's arguments and call ids, a decider's reason and name,
a run's id) is shown inert in `text`: as escaped JSON, on one line, cut short, with
`<`, `>`, `&`, `@` and backticks escaped, so that no chat tool reads a mention, a link or
the end of a code span in it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from signoff.approval.authority import allowed_approvers
from signoff.approval.policy import ApprovalPolicy

NoticeKind = Literal[
    "approval_requested", "approval_reminder", "approval_escalated", "approval_decided", "approval_timed_out"
]
WAITING_KINDS = ("approval_requested", "approval_reminder", "approval_escalated")
"""Notices about a call that still waits: they carry the commands that decide it."""
PATH_MARK = " \u203a "
"""Between the runs of a sub-agent call's path (a single right-pointing angle quotation mark)."""
ARGUMENTS_SHOWN = 300
REASON_SHOWN = 300
NAME_SHOWN = 120
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.:/+-]{1,120}")
_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "`": "\\u0060", "@": "\\u0040"}


class Notice(BaseModel):
    """The JSON body POSTed to each notification URL."""

    event: NoticeKind
    workflow_id: str
    run_id: str
    agent: str
    request: dict[str, Any] | None = None
    """The call's approval request (as the `events` query keeps it: large values cut)."""
    decision: dict[str, Any] | None = None
    """The audit record, for `approval_decided` and `approval_timed_out`."""
    text: str
    ui_url: str | None = None
    inbox_url: str | None = None
    """The call's page in the inbox (`SIGNOFF_INBOX_URL`), where people decide it."""
    commands: list[str] = Field(default_factory=list)
    sent_at: datetime
    path: list[str] | None = Field(None, exclude_if=lambda value: value is None)
    """A sub-agent's call: the workflow ids from the top run down to the run that waits (left out
    for a top run's own calls)."""
    top_ui_url: str | None = Field(None, exclude_if=lambda value: value is None)
    """A sub-agent's call: the top run in the Web UI."""


def one_line_json(value: Any, limit: int) -> str:
    """`value` as one line of escaped JSON, at most about `limit` characters, safe in any chat."""
    text = json.dumps(value, ensure_ascii=True, default=str)
    for char, escape in _ESCAPES.items():
        text = text.replace(char, escape)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def name(value: Any) -> str:
    """A name or id as it is when it is plainly one (`run_command`, `group:sre`), else `one_line_json`."""
    if isinstance(value, str) and _PLAIN_NAME.fullmatch(value):
        return value
    return one_line_json(value, NAME_SHOWN)


def notice_text(
    kind: NoticeKind,
    workflow_id: str,
    request: dict[str, Any] | None,
    decision: dict[str, Any] | None,
    ui_url: str | None = None,
    commands: Sequence[str] = (),
    inbox_url: str | None = None,
    path: Sequence[str] = (),
    top_ui_url: str | None = None,
) -> str:
    """The human summary: what happened to which call, and how to act on it (`path`: a
    sub-agent's call, the runs from the top down to `workflow_id`)."""
    call = request or decision or {}
    where = f"{name(call.get('name', '?'))} in run {name(workflow_id)} (call {name(call.get('call_id', '?'))})"
    lines = [f"signoff: {_headline(kind, where, request, decision)}"]
    if path:
        lines.append(f"sub-agent: {PATH_MARK.join(name(part) for part in [*path, call.get('name', '?')])}")
    lines.append(f"arguments: `{one_line_json(call.get('arguments'), ARGUMENTS_SHOWN)}`")
    if request is not None and kind in WAITING_KINDS:
        lines += _rules(request)
    lines += [f"{'approve' if c.startswith('signoff approve') else 'deny'}: `{_line(c)}`" for c in commands]
    if inbox_url:  # built by signoff with the ids percent-encoded: its `&` is its own
        lines.append(f"Inbox: {_line(inbox_url).replace(_ESCAPES['&'], '&')}")
    if ui_url:
        lines.append(f"Web UI: {_line(ui_url)}")
    if top_ui_url:
        lines.append(f"Top run: {_line(top_ui_url)}")
    return "\n".join(lines)


SLACK_TEXT_CHARS = 3000
"""Slack's limit for a section block's text."""


def slack_message(notice: Notice) -> dict[str, Any]:
    """The notice as a Slack-compatible message (Block Kit): its `text` in a section, and
    link buttons to the call's page in the inbox and to the run in the Web UI.

    `text` is already inert for chat tools (no `<`, `>`, `&`, `@` or backtick from a stranger
    survives unescaped), so Slack's mrkdwn reads no mention, link or code-span end in it.
    """
    text = notice.text if len(notice.text) <= SLACK_TEXT_CHARS else notice.text[: SLACK_TEXT_CHARS - 1] + "…"
    blocks: list[dict[str, Any]] = [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]
    buttons = [
        {"type": "button", "text": {"type": "plain_text", "text": label}, "url": url, **extra}
        for label, url, extra in (
            (
                "Decide in the inbox" if notice.event in WAITING_KINDS else "Open in the inbox",
                notice.inbox_url,
                {"style": "primary"},
            ),
            ("Temporal Web UI", notice.ui_url, {}),
            ("Top run in the Web UI", notice.top_ui_url, {}),
        )
        if url
    ]
    if buttons:
        blocks.append({"type": "actions", "elements": buttons})
    return {"text": text, "blocks": blocks}


def _headline(kind: NoticeKind, where: str, request: dict[str, Any] | None, decision: dict[str, Any] | None) -> str:
    asked = (request or {}).get("message") if (request or {}).get("kind") == "input" else None
    if kind == "approval_requested" and asked is not None:  # an MCP server's question: answered, not approved
        return f"an answer needed for {where}: its MCP server asks {one_line_json(asked, REASON_SHOWN)}"
    if kind == "approval_requested":
        return f"approval needed for {where}"
    if kind == "approval_reminder":
        return f"reminder: {where} still waits for approval (requested {_when(request, 'requested_at')})"
    if kind == "approval_escalated":
        extra = ", ".join(name(n) for n in ((request or {}).get("policy") or {}).get("escalate_to", []))
        return f"escalated: {where} still waits; now {extra or 'more approvers'} may decide it too"
    record = decision or {}
    if kind == "approval_timed_out":
        outcome = {"approved": "approved", "failed_run": "the run failed"}.get(record.get("outcome") or "", "denied")
        reason = one_line_json(record.get("reason") or "no decision in time", REASON_SHOWN)
        return f"no decision in time on {where}: {outcome} by its policy ({reason})"
    answered = {"answered": "answered", "declined": "declined", "cancelled": "dismissed"}
    verb = answered.get(record.get("outcome") or "") or ("approved" if record.get("approved") else "denied")
    who = f" by {name(record['approver'])}" if record.get("approver") else ""
    how = " (verified)" if record.get("verified") else ""
    if record.get("grant_id"):
        how += f" through grant {name(record['grant_id'])}"
    why = (
        f": {one_line_json(record['reason'], REASON_SHOWN)}"
        if record.get("reason") and not record.get("approved")
        else ""
    )
    return f"{where} {verb}{who}{how}{why}"


def _rules(request: dict[str, Any]) -> list[str]:
    """Who may decide and until when, where that is not "anyone, forever"."""
    policy = ApprovalPolicy.model_validate(request.get("policy") or {})
    lines = []
    approvers = allowed_approvers(policy, bool(request.get("escalated")))
    if approvers or policy.quorum > 1 or policy.verified:
        who = ", ".join(name(a) for a in approvers) or "anyone"
        votes = len(request.get("votes") or [])
        extra = "; verified token needed" if policy.verified else ""
        lines.append(f"approvers: {who}; quorum {policy.quorum} ({votes} so far){extra}")
    if request.get("expires_at"):
        lines.append(f"expires: {_when(request, 'expires_at')} (then: {policy.timeout_outcome.value})")
    return lines


def _when(data: dict[str, Any] | None, key: str) -> str:
    value = (data or {}).get(key)
    return one_line_json(value, 40).strip('"') if value else "?"


def _line(text: str) -> str:
    """A command or link on one line, with nothing a chat tool would interpret."""
    escaped = text.encode("unicode_escape").decode("ascii")
    for char, escape in _ESCAPES.items():
        escaped = escaped.replace(char, escape)
    return escaped
