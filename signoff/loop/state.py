"""What the tool loop knows: serialisable, so a run can continue as new with it.

Every part of the loop (`signoff.loop.agent_loop` and the parts it is composed of) reads and
changes this one state; the reads they share are its methods.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from pydantic import BaseModel, Field

from signoff.approval.audit import GENESIS
from signoff.approval.policy import ApprovalPolicy
from signoff.approval.requests import ApprovalRecord, Grant, InputAsked, ToolApprovalRequest
from signoff.loop.limits import Limits
from signoff.messages import ChatMessage, FinishReason, ToolCall, Usage

DEFAULT_MAX_ROUNDS = 10


class CallStatus(str, Enum):
    READY = "ready"  # runs without approval, or approved
    AWAITING = "awaiting"  # waits for a human
    DONE = "done"  # has its tool message
    EXPIRED = "expired"  # its deadline passed under on_timeout = "hold": waits for a rearm


class PendingCall(BaseModel):
    """One tool call of the open round."""

    call: ToolCall
    status: CallStatus
    request: ToolApprovalRequest | None = None
    run_arguments: str | None = None
    result: str | None = None
    approval: ApprovalRecord | None = None
    """The record that approved this call (None for a call that needs no approval)."""
    tokens: list[str] = Field(default_factory=list)
    """The signed decisions (and grants' tokens) that approved it: handed to the tool activity,
    which verifies them itself before the call runs."""
    reminders_sent: int = 0
    delegations: list[str | None] = Field(default_factory=list, exclude_if=lambda tokens: not tokens)
    """The delegation each of `tokens` was sent under (by position; None or absent: none)."""
    asked: InputAsked | None = Field(None, exclude_if=lambda asked: asked is None)
    """What the MCP server asked in the middle of this call (its `request` is then `kind: "input"`),
    kept with the server's state until the answer goes back with it."""
    answered: ApprovalRecord | None = Field(None, exclude_if=lambda record: record is None)
    """The record of the person's answer to `asked`: the call is ready to go back to the server."""
    answer: dict[str, Any] | None = Field(None, exclude_if=lambda answer: answer is None)
    """The MCP `ElicitResult` to send (`{"action", "content"?}`) with `asked.state`."""
    answer_tokens: list[str] = Field(default_factory=list, exclude_if=lambda tokens: not tokens)
    """The signed answer, handed to the activity that sends it."""

    def timers(self) -> list[datetime]:
        """When this waiting call next needs attention: deadline, reminder, escalation."""
        req = self.request
        if self.status is not CallStatus.AWAITING or req is None or req.requested_at is None:
            return []
        return [t for t in (req.expires_at, self.next_reminder_at(), self.escalation_at()) if t is not None]

    def next_reminder_at(self) -> datetime | None:
        """When the next reminder of the policy is due (None: none left)."""
        req = self.request
        reminders = req.policy.remind_after_seconds if req is not None else ()
        if req is None or req.requested_at is None or self.reminders_sent >= len(reminders):
            return None
        return req.requested_at + timedelta(seconds=reminders[self.reminders_sent])

    def escalation_at(self) -> datetime | None:
        """When the policy's escalation is due (None: none, or it happened)."""
        req = self.request
        if req is None or req.requested_at is None or not req.policy.escalate_after_seconds or req.escalated:
            return None
        return req.requested_at + timedelta(seconds=req.policy.escalate_after_seconds)


class LoopState(BaseModel):
    """Everything the loop knows."""

    messages: list[ChatMessage]
    tools: dict[str, str] = Field(default_factory=dict)
    """Known tool names and their descriptions."""
    policies: dict[str, ApprovalPolicy] = Field(default_factory=dict)
    """Approval policy by tool name (tools not named: anyone may decide)."""
    limits: Limits = Field(default_factory=Limits)
    max_rounds: int = DEFAULT_MAX_ROUNDS
    approval_timeout_seconds: float | None = None
    max_total_tokens: int | None = None
    requested_by: str | None = None
    workflow_id: str | None = None
    chain_id: str | None = None
    """The durable run's workflow id and continue-as-new chain (its first run's id), set by
    the workflow: what each request's `binding` names. None in process."""
    signed_decisions: bool = False
    """Under a verified policy, a decision counts only if its token signs it (its `signoff`
    claim). Set by the workflow before it looks at a run's first token; False only for a run
    replaying a history from before signed decisions, which keeps v2's rule in the workflow
    (and whose tool calls still run only with signatures)."""
    round: int = 0
    usage: Usage = Field(default_factory=Usage)
    pending: list[PendingCall] = Field(default_factory=list)
    cut: int = 0
    """How many calls of the open round were past the per-turn limit (the last ones of its message)."""
    approvals: list[ApprovalRecord] = Field(default_factory=list)
    audit_head: str = GENESIS
    grants: list[Grant] = Field(default_factory=list)
    grants_made: int = 0
    transcript_epoch: int = 0
    """Counts rewrites of earlier messages (elision), so by-reference copies know to refresh."""
    finish_reason: FinishReason | None = None
    failure: str | None = None
    """Why the run must fail (a call's policy says `fail_run` on timeout)."""

    def waiting(self) -> list[PendingCall]:
        """The calls of the open round that wait for a person."""
        return [p for p in self.pending if p.status is CallStatus.AWAITING]

    def requests(self) -> list[ToolApprovalRequest]:
        """What the waiting calls ask, in call order, expired ones (held for a rearm) included."""
        held = (CallStatus.AWAITING, CallStatus.EXPIRED)
        return [p.request for p in self.pending if p.status in held and p.request]

    def entry(self, call_id: str) -> PendingCall | None:
        """The open round's call with this id (None: no such call is open)."""
        return next((p for p in self.pending if p.call.id == call_id), None)
