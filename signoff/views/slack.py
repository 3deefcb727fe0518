"""What Slack shows of a waiting call: the channel's message, the reviewer's modal, the outcome.

Pure (Block Kit as dicts): the notify activity posts and updates the channel's message
(`signoff.activities.slack`), the inbox's server answers the clicks (`signoff.inbox.slack`).

**The channel's message never carries the call's arguments** (nor the preview, which is made
of them, nor edited arguments): it names the tool, the agent, the run and the call, who may
decide (approvers, quorum, votes so far) and until when, with three buttons: *Review* (a modal
for the person who clicked: the whole call), *Approve* and *Deny*. Each button's `value` names
one request: run, call, arguments digest and request instance, and the deadline
(`CallRef`); the server that takes the click reads the call as it waits now and decides only
that one. A settled call's message says how it was settled and has no buttons.

Names a stranger chose (a run's id, a tool's name, a reason) are shown inert: plain names as
they are, anything else as escaped JSON, and `&`, `<`, `>` escaped as Slack asks, so no
mention, link or channel-wide ping can be made of them. The modal shows the arguments as
`plain_text` (Slack formats nothing in it).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from signoff.approval.authority import allowed_approvers
from signoff.approval.policy import ApprovalPolicy
from signoff.views.notices import NoticeKind, name, one_line_json

INSTALL = "pip install 'signoff[slack]'"
"""What to install for the Slack app (Slack's `slack_bolt` and `slack_sdk`)."""
INTERACTIONS_PATH = "/slack/interactions"
"""The inbox's route Slack sends clicks and modal submissions to (the app's request URL)."""
ACTION_REVIEW = "signoff_review"
ACTION_APPROVE = "signoff_approve"
ACTION_DENY = "signoff_deny"
ACTIONS = (ACTION_REVIEW, ACTION_APPROVE, ACTION_DENY)
REVIEW_VIEW = "signoff_review"
"""The modal's `callback_id`: its submission is the reviewer's decision."""
CONFIRM_VIEW = "signoff_confirm_edit"
"""The modal that shows edited arguments as a diff before they are sent: its submission approves them."""
METADATA_EVENT = "signoff_call"
"""The message's metadata `event_type`: how a worker finds the message of a call again."""
TEXT_CHARS = 3000
"""Slack's limit for a section's text (and a plain-text input's initial value)."""
VALUE_CHARS = 2000
"""Slack's limit for a button's value."""
METADATA_CHARS = 3000
"""Slack's limit for a view's `private_metadata`."""
REASON_CHARS = 4096
_DIGEST = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class CallRef:
    """One request as a button names it: run, call, arguments digest, request instance, and
    the call's deadline (unix seconds; None: none). Chosen by whoever posted the message:
    the server that takes a click checks all of it against the call as it waits now."""

    workflow_id: str
    call_id: str
    digest: str
    request: str | None = None
    expires: float | None = None

    def value(self) -> str:
        data: dict[str, Any] = {"w": self.workflow_id, "c": self.call_id, "d": self.digest}
        data |= {"r": self.request} if self.request else {}
        data |= {"e": int(self.expires)} if self.expires is not None else {}
        return json.dumps(data, separators=(",", ":"))

    @classmethod
    def parse(cls, value: Any) -> CallRef | None:
        """The request a button's (or a modal's) value names, or None when it names none."""
        try:
            data = json.loads(value) if isinstance(value, str) and len(value) <= METADATA_CHARS else None
        except ValueError:
            return None
        if not isinstance(data, dict):
            return None
        w, c, d, r, e = (data.get(k) for k in ("w", "c", "d", "r", "e"))
        if not all(isinstance(x, str) and x for x in (w, c, d)) or not _DIGEST.fullmatch(str(d)):
            return None
        if r is not None and not isinstance(r, str):
            return None
        if e is not None and (not isinstance(e, int) or isinstance(e, bool)):
            return None
        return cls(str(w), str(c), str(d), r, float(e) if e is not None else None)

    @classmethod
    def of(cls, workflow_id: str, request: dict[str, Any]) -> CallRef:
        binding = request.get("binding") or {}
        expires = instant(request.get("expires_at"))
        return cls(
            workflow_id,
            str(request.get("call_id", "")),
            str(request.get("arguments_digest", "")),
            binding.get("request") if isinstance(binding.get("request"), str) else None,
            expires.timestamp() if expires else None,
        )

    def metadata(self) -> dict[str, Any]:
        """The message's metadata: which call it is about (no arguments)."""
        return {
            "event_type": METADATA_EVENT,
            "event_payload": {"workflow_id": self.workflow_id, "call_id": self.call_id, "digest": self.digest},
        }

    def names(self, metadata: Any) -> bool:
        """Whether a message's `metadata` is this call's."""
        if not isinstance(metadata, dict) or metadata.get("event_type") != METADATA_EVENT:
            return False
        payload = metadata.get("event_payload") or {}
        return isinstance(payload, dict) and (
            payload.get("workflow_id"),
            payload.get("call_id"),
            payload.get("digest"),
        ) == (self.workflow_id, self.call_id, self.digest)


def escape(text: str) -> str:
    """`text` for Slack's mrkdwn: `&`, `<` and `>` as entities (no link, mention or ping)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def shown(value: Any) -> str:
    """A stranger's name or id, inert (`signoff.views.notices.name`) and escaped for mrkdwn."""
    return escape(name(value))


def who_may_decide(request: dict[str, Any]) -> str:
    """`group:sre, alice; 2 approvals needed (1 so far); verified`."""
    policy = ApprovalPolicy.model_validate(request.get("policy") or {})
    approvers = allowed_approvers(policy, bool(request.get("escalated")))
    votes = len(request.get("votes") or [])
    who = ", ".join(shown(a) for a in approvers) or "anyone"
    needed = f"; {policy.quorum} approvals needed ({votes} so far)" if policy.quorum > 1 else ""
    extra = "; not the person who asked for the run" if policy.separate_requester else ""
    return who + needed + extra + ("; verified" if policy.verified else "")


def request_message(
    workflow_id: str,
    agent: str,
    request: dict[str, Any],
    kind: NoticeKind = "approval_requested",
    inbox_url: str | None = None,
) -> dict[str, Any]:
    """The channel's message for a call that waits: `{"text", "blocks", "metadata"}`."""
    ref = CallRef.of(workflow_id, request)
    tool = shown(request.get("name", "?"))
    headline = f"*{tool}* waits for a decision"
    if kind == "approval_reminder":
        headline = f"Reminder: *{tool}* still waits for a decision"
    elif kind == "approval_escalated":
        headline = f"Escalated: *{tool}* still waits; more people may decide it now"
    lines = [
        headline,
        f"agent *{shown(agent)}* · run `{shown(workflow_id)}` · call `{shown(ref.call_id)}`",
        f"who may decide: {who_may_decide(request)}",
    ]
    if ref.expires is not None:
        lines.append(f"decide by {_date(ref.expires, str(request.get('expires_at')))}")
    lines.append("The arguments are not posted here: *Review* shows you the whole call.")
    value = ref.value()
    buttons: list[dict[str, Any]] = [
        _button("Review", ACTION_REVIEW, value),
        _button(
            "Approve",
            ACTION_APPROVE,
            value,
            style="primary",
            confirm={
                "title": {"type": "plain_text", "text": "Approve unseen?"},
                "text": {
                    "type": "mrkdwn",
                    "text": f"Approve *{tool}* in run `{shown(workflow_id)}` without reviewing its arguments?",
                },
                "confirm": {"type": "plain_text", "text": "Approve"},
                "deny": {"type": "plain_text", "text": "Cancel"},
            },
        ),
        _button("Deny", ACTION_DENY, value, style="danger"),
    ]
    if inbox_url:
        buttons.append({"type": "button", "text": _plain("Open in the inbox"), "url": inbox_url})
    text = _cut("\n".join(lines))
    return {
        "text": f"signoff: {tool} waits for a decision (run {shown(workflow_id)})",
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": text}},
            {"type": "actions", "elements": buttons},
        ],
        "metadata": ref.metadata(),
    }


def settled_message(
    workflow_id: str, agent: str, record: dict[str, Any], kind: NoticeKind, ref: CallRef
) -> dict[str, Any]:
    """The channel's message once the call is settled (an audit record): no buttons."""
    tool = shown(record.get("name", "?"))
    lines = [f"*{tool}* {settled(record, kind)}"]
    lines.append(f"agent *{shown(agent)}* · run `{shown(workflow_id)}` · call `{shown(ref.call_id)}`")
    text = _cut("\n".join(lines))
    return {
        "text": f"signoff: {tool} {settled(record, kind)}",
        "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text}}],
        "metadata": ref.metadata(),
    }


def settled(record: dict[str, Any], kind: NoticeKind = "approval_decided") -> str:
    """`approved by alice (verified)`, `denied by bob (verified): not now`, `timed out: denied`."""
    if kind == "approval_timed_out" or record.get("timed_out"):
        outcome = {"approved": "approved", "failed_run": "the run failed"}.get(record.get("outcome") or "", "denied")
        return f"had no decision in time: {outcome} by its policy"
    verb = "approved" if record.get("approved") else "denied"
    who = f" by {shown(record['approver'])}" if record.get("approver") else ""
    how = " (verified)" if record.get("verified") else ""
    if record.get("grant_id"):
        how += f" through grant {shown(record['grant_id'])}"
    if record.get("approved") and record.get("edited_arguments") is not None:
        how += " with edited arguments"
    reason = record.get("reason")
    why = f": {escape(one_line_json(reason, 300))}" if reason and not record.get("approved") else ""
    return f"{verb}{who}{how}{why}"


def review_view(
    ref: CallRef,
    where: dict[str, str],
    request: dict[str, Any],
    *,
    may_edit: bool,
    requested_by: str | None = None,
) -> dict[str, Any]:
    """The modal *Review* opens for the person who clicked: the whole call, its preview, the
    policy and votes, and the decision (approve or deny, a reason, edited arguments).

    Args:
        where: `channel` and `ts` of the message clicked, kept in `private_metadata` with `ref`
            so the submission updates that message.
        may_edit: offer the arguments as an editable field (a call a quorum decides, or whose
            arguments are not a JSON object, cannot be edited).
    """
    arguments = json.dumps(request.get("arguments"), indent=2, ensure_ascii=False, sort_keys=True)
    policy = ApprovalPolicy.model_validate(request.get("policy") or {})
    facts = [
        f"tool: {request.get('name', '?')}",
        f"run: {ref.workflow_id}",
        f"call: {ref.call_id}",
        f"arguments digest: {ref.digest}",
        f"requested by: {requested_by or 'not said'}",
        f"requested at: {request.get('requested_at') or '?'}",
        f"deadline: {request.get('expires_at') or 'none'}"
        + (f" (then: {policy.timeout_outcome.value})" if request.get("expires_at") else ""),
        "who may decide: " + who_may_decide(request).replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"),
        "votes so far: " + (", ".join(_vote(v) for v in request.get("votes") or []) or "none"),
    ]
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": _plain(_cut("\n".join(facts)))},
        {"type": "header", "text": _plain("Arguments")},
        *_plain_sections(arguments),
    ]
    if request.get("description"):
        blocks.insert(1, {"type": "context", "elements": [_plain(_cut(str(request["description"]), 2000))]})
    if request.get("preview"):
        blocks += [{"type": "header", "text": _plain("Preview")}, *_plain_sections(str(request["preview"]))]
    blocks.append(
        {
            "type": "input",
            "block_id": "decision",
            "label": _plain("Decision"),
            "element": {
                "type": "radio_buttons",
                "action_id": "decision",
                "options": [
                    {"text": _plain("Approve"), "value": "approve"},
                    {"text": _plain("Deny"), "value": "deny"},
                ],
            },
        }
    )
    blocks.append(
        {
            "type": "input",
            "block_id": "reason",
            "optional": True,
            "label": _plain("Reason (a denial's reason is what the model reads)"),
            "element": {"type": "plain_text_input", "action_id": "reason", "multiline": True, "max_length": 3000},
        }
    )
    if may_edit and len(arguments) <= TEXT_CHARS:
        blocks.append(
            {
                "type": "input",
                "block_id": "arguments",
                "optional": True,
                "label": _plain("Arguments to run (approve only: edit to run these instead)"),
                "element": {
                    "type": "plain_text_input",
                    "action_id": "arguments",
                    "multiline": True,
                    "initial_value": arguments,
                },
            }
        )
    metadata = json.dumps({"ref": ref.value(), **where}, separators=(",", ":"))
    return {
        "type": "modal",
        "callback_id": REVIEW_VIEW,
        "title": _plain("Review a call"),
        "submit": _plain("Send decision"),
        "close": _plain("Cancel"),
        "private_metadata": metadata,
        "blocks": blocks[:100],
    }


def confirm_view(ref: CallRef, where: dict[str, str], diff: str, edit: str, reason: str | None) -> dict[str, Any]:
    """The modal that shows the edit as a diff of the model's arguments and the edited ones,
    before anything is sent; its submission approves the edited arguments.

    Args:
        edit: the server's id of the edit it keeps (the arguments never travel back through Slack).
    """
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": _plain("You edited the arguments. Approve the call with these instead?")},
        {"type": "header", "text": _plain("The model's arguments → the edited ones")},
        *_plain_sections(diff),
    ]
    if reason:
        blocks.append({"type": "context", "elements": [_plain(_cut(f"reason: {reason}", 2000))]})
    metadata = json.dumps({"ref": ref.value(), "edit": edit, **where}, separators=(",", ":"))
    return {
        "type": "modal",
        "callback_id": CONFIRM_VIEW,
        "title": _plain("Confirm the edit"),
        "submit": _plain("Approve edited"),
        "close": _plain("Cancel"),
        "private_metadata": metadata,
        "blocks": blocks[:100],
    }


def result_view(text: str) -> dict[str, Any]:
    """The modal after a submission: what came of it."""
    return {
        "type": "modal",
        "title": _plain("signoff"),
        "close": _plain("Close"),
        "blocks": [{"type": "section", "text": _plain(_cut(text))}],
    }


def _vote(vote: Any) -> str:
    if isinstance(vote, dict):
        return str(vote.get("approver") or vote.get("name") or "?") + (" (verified)" if vote.get("verified") else "")
    return str(vote)


def _button(text: str, action_id: str, value: str, **extra: Any) -> dict[str, Any]:
    return {"type": "button", "text": _plain(text), "action_id": action_id, "value": value, **extra}


def _plain(text: str) -> dict[str, Any]:
    return {"type": "plain_text", "text": text or " ", "emoji": False}


def _plain_sections(text: str, most: int = 20) -> list[dict[str, Any]]:
    chunks = [text[i : i + TEXT_CHARS] for i in range(0, len(text), TEXT_CHARS)] or [" "]
    blocks: list[dict[str, Any]] = [{"type": "section", "text": _plain(chunk)} for chunk in chunks[:most]]
    if len(chunks) > most:
        blocks.append({"type": "context", "elements": [_plain("(cut: open the call in the inbox to see it whole)")]})
    return blocks


def _cut(text: str, limit: int = TEXT_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def instant(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _date(unix: float, fallback: str) -> str:
    """Slack's date token: each reader sees it in their own time zone."""
    return f"<!date^{int(unix)}^{{date_short_pretty}} {{time}}|{escape(fallback)}>"
