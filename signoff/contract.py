"""The durable run's public names and JSON shapes (CONTRACT.md): input, result, answers.

Pure pydantic, no Temporal: orchestrators build these, and any Temporal client can send
the same JSON by hand. This module is the one home of every name the contract fixes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from signoff.approval.policy import ApprovalPolicy, Gate
from signoff.approval.requests import (
    MAX_APPROVER_CHARS,
    MAX_SECONDS,
    MAX_TOKEN_CHARS,
    ApprovalRecord,
    Grant,
    ToolApprovalRequest,
    ToolApprovalResponse,
    checked_name,
)
from signoff.loop.limits import MAX_ROUNDS_LIMIT
from signoff.loop.state import DEFAULT_MAX_ROUNDS
from signoff.messages import ChatMessage, FinishReason, Usage
from signoff.text.wire import Compact

WORKFLOW_TYPE = "AgentRun"
DEFAULT_TASK_QUEUE = "signoff"
SIGNAL_APPROVAL = "tool_approval"
UPDATE_APPROVAL = "submit_tool_approval"
UPDATE_EXTEND_DEADLINE = "extend_deadline"
UPDATE_REVOKE_GRANT = "revoke_grant"
UPDATE_REARM = "rearm_tool_call"
UPDATE_SEND_MESSAGE = "send_message"
UPDATE_END_SESSION = "end_session"
QUERY_PENDING = "pending_approvals"
QUERY_STATUS = "status"
QUERY_EVENTS = "events"
QUERY_MESSAGES = "messages"
QUERY_GRANTS = "grants"
QUERY_AUDIT = "audit"
QUERY_SNAPSHOT = "agent_snapshot"
QUERY_SESSION = "session"
STATUS_RUNNING = "Running"
STATUS_AWAITING = "AwaitingApproval"
STATUS_AWAITING_INPUT = "AwaitingInput"
"""(v4 answers) Only MCP servers' questions wait (`kind: "input"`): a run to answer, not approve."""
STATUS_FINISHED = "Finished"
STATUS_AWAITING_MESSAGE = "AwaitingMessage"
"""A session between turns: it waits for the next `send_message` (never advertised in search attributes)."""
TURN_COMPLETED = "Completed"
TURN_RUNNING = "Running"
TURN_ENDED = "Ended"
SESSION_MOVING = "SessionMoving"
"""The type of the refusal of a message sent while a session continues as new: send it again."""
TOPIC_TOKENS = "tokens"
"""The run's Workflow Stream topic of model text deltas: `{"turn", "text", "attempt"}` (CONTRACT v4)."""
TOPIC_EVENTS = "events"
"""The run's Workflow Stream topic of its events: the items the `events` query answers."""
MAX_MESSAGE_CHARS = 65_536
"""The longest text one `send_message` may carry."""
SEARCH_ATTRIBUTES = {"SignoffStatus": "Keyword", "SignoffAgent": "Keyword", "SignoffPendingTools": "KeywordList"}
"""Search attributes and their Temporal types."""
SA_STATUS, SA_AGENT, SA_PENDING_TOOLS = SEARCH_ATTRIBUTES
MAX_DECISIONS = 100
"""The most decisions one signal or update may carry (CONTRACT v3 "Input limits")."""
METRIC_PENDING = "signoff_pending_approvals"
METRIC_WAIT = "signoff_approval_wait_seconds"
METRIC_DECISIONS = "signoff_decisions_total"
METRIC_TOOL_CALLS = "signoff_tool_calls_total"
METRIC_TOKENS = "signoff_model_tokens_total"
METRIC_AUTO_VERDICTS = "signoff_auto_verdicts_total"
METRIC_DECISION_SECONDS = "signoff_decision_seconds"
"""Metrics a worker exposes on `SIGNOFF_METRICS_ADDRESS`, beside the SDK's own (`temporal_*`)."""
INVALID_REFERENCE = "invalid_payload_reference"
"""The one key of what a payload-store reference that cannot be resolved reads as
(`signoff.runtime.filestore.not_a_payload`): a JSON object no model accepts."""
SAME_STORE = "Every worker and client of a namespace must use the same SIGNOFF_PAYLOAD_STORE"


def unresolvable(value: object) -> str | None:
    """Why `value` is a payload that could not be resolved (`not_a_payload`), or None.

    Pure, so that workflow code asks it without importing the payload store's file I/O."""
    if isinstance(value, dict) and len(value) == 1 and isinstance(value.get(INVALID_REFERENCE), str):
        return f"a payload-store reference that cannot be resolved ({value[INVALID_REFERENCE]})"
    return None


class RunOptions(Compact):
    """`options` of the workflow input."""

    model_config = ConfigDict(extra="forbid")

    max_rounds: int = Field(DEFAULT_MAX_ROUNDS, ge=1, le=MAX_ROUNDS_LIMIT)
    approval_timeout_seconds: float | None = Field(None, gt=0, le=MAX_SECONDS, allow_inf_nan=False)
    tool_approval_responses: list[ToolApprovalResponse] = Field(default_factory=list, max_length=512)
    model: str | None = Field(None, max_length=256)
    temperature: float | None = Field(None, ge=0, allow_inf_nan=False)
    max_total_tokens: int | None = Field(None, ge=1)
    requested_by: str | None = Field(None, min_length=1, max_length=MAX_APPROVER_CHARS)
    requester_token: str | None = Field(None, max_length=MAX_TOKEN_CHARS)
    session: bool = False
    """A session (CONTRACT v4): after each answer the run waits for the next `send_message`
    instead of finishing; `max_rounds` then limits each turn."""

    @field_validator("requested_by")
    @classmethod
    def _a_name(cls, name: str | None) -> str | None:
        return checked_name("requested_by", name)


class InheritedGate(Compact):
    """How a parent run gates a tool name: a child run's tool of that name is gated at least so."""

    model_config = ConfigDict(extra="forbid")

    gate: Gate = "per_call"
    policy: ApprovalPolicy | None = None


class SubAgentLink(Compact):
    """`sub_agent` of a child run's input, set by the parent that started it (sub-agents): where
    its waiting calls are reported, how deep it is, and the gates its ancestors hand it."""

    model_config = ConfigDict(extra="forbid")

    parent_workflow_id: str = Field(min_length=1, max_length=1000)
    path: list[str] = Field(default_factory=list, max_length=64)
    """The workflow ids from the top run down to the parent."""
    depth: int = Field(1, ge=1, le=64)
    max_depth: int = Field(3, ge=1, le=64)
    inherited: dict[str, InheritedGate] = Field(default_factory=dict)


class AgentRunInput(Compact):
    """Workflow input: public fields only. Exactly one of `prompt` or `messages` (a session may
    have neither: it waits for its first message)."""

    model_config = ConfigDict(extra="forbid")
    absent_when_none: ClassVar[frozenset[str]] = frozenset({"sub_agent"})

    agent: str = Field("default", min_length=1, max_length=256)
    prompt: str | None = None
    messages: list[ChatMessage] | None = None
    options: RunOptions = Field(default_factory=RunOptions)
    sub_agent: SubAgentLink | None = None
    """A child run's link to its parent (absent for a top run)."""

    @model_validator(mode="after")
    def _one_source(self) -> AgentRunInput:
        if self.prompt is not None and self.messages is not None:
            raise ValueError("give exactly one of 'prompt' or 'messages'")
        if self.prompt is None and self.messages is None and not self.options.session:
            raise ValueError("give exactly one of 'prompt' or 'messages' (only a session may start without either)")
        if self.messages is not None and not self.messages:
            raise ValueError("'messages' is empty")
        return self

    def transcript(self) -> list[ChatMessage]:
        if self.messages is not None:
            return list(self.messages)
        return [] if self.prompt is None else [ChatMessage.user(self.prompt)]


class AgentRunResult(BaseModel):
    """Workflow result."""

    finish_reason: FinishReason
    text: str | None = None
    messages: list[ChatMessage]
    rounds: int
    usage: Usage
    approvals: list[ApprovalRecord]


class DecidedCall(BaseModel):
    """One call a decision reached, as the update's answer names it."""

    call_id: str
    name: str
    arguments: Any = None
    arguments_digest: str = ""
    outcome: str
    """`approved`, `denied`, or `vote` (counted towards a quorum not yet reached)."""
    edited_arguments: dict[str, Any] | None = Field(None, exclude_if=lambda value: value is None)
    """What the call runs with instead of `arguments`, when the approval edited them (absent otherwise)."""


class DecisionAck(BaseModel):
    """What the update returns: the call ids it decided, each call, and what is still pending."""

    accepted: list[str]
    pending: list[str]
    decided: list[DecidedCall] = Field(default_factory=list)


class DeadlineAck(BaseModel):
    call_id: str
    expires_at: datetime


class DeadlineExtension(BaseModel):
    """Input of the `extend_deadline` update."""

    model_config = ConfigDict(extra="forbid")

    call_id: str = Field(min_length=1, max_length=512)
    seconds: float = Field(gt=0, le=MAX_SECONDS, allow_inf_nan=False)
    approver: str | None = Field(None, max_length=MAX_APPROVER_CHARS)
    token: str | None = Field(None, max_length=MAX_TOKEN_CHARS)

    @field_validator("approver")
    @classmethod
    def _a_name(cls, approver: str | None) -> str | None:
        return checked_name("approver", approver)


class Rearm(BaseModel):
    """Input of the `rearm_tool_call` update: re-open an expired call (`on_timeout = "hold"`)
    with a new deadline, `deadline_seconds` from now (default: its policy's)."""

    model_config = ConfigDict(extra="forbid")

    call_id: str = Field(min_length=1, max_length=512)
    deadline_seconds: float | None = Field(None, gt=0, le=MAX_SECONDS, allow_inf_nan=False)
    approver: str | None = Field(None, max_length=MAX_APPROVER_CHARS)
    token: str | None = Field(None, max_length=MAX_TOKEN_CHARS)

    @field_validator("approver")
    @classmethod
    def _a_name(cls, approver: str | None) -> str | None:
        return checked_name("approver", approver)


class GrantRevocation(BaseModel):
    """Input of the `revoke_grant` update."""

    model_config = ConfigDict(extra="forbid")

    grant_id: str = Field(min_length=1, max_length=128)


class SessionMessage(BaseModel):
    """Input of the `send_message` update."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(max_length=MAX_MESSAGE_CHARS)

    @field_validator("text")
    @classmethod
    def _some_text(cls, text: str) -> str:
        if not text.strip():
            raise ValueError("the message is empty")
        return text


class SessionEnd(BaseModel):
    """Input of the `end_session` update: nothing."""

    model_config = ConfigDict(extra="forbid")


class TurnAnswer(BaseModel):
    """What `send_message` answers once its turn settles: `Completed` (the assistant's text) or
    `AwaitingApproval` (the calls the turn waits for; a decision on them continues the turn)."""

    status: str
    text: str | None = None
    pending: list[ToolApprovalRequest] = Field(default_factory=list)


class SessionView(TurnAnswer):
    """What the `session` query answers: the latest turn (`turn`, from 1; 0: none yet) as
    `send_message` would answer it, `Running` while it runs, `Ended` once the session ended."""

    turn: int = 0
    session: bool = True


class RunStatus(BaseModel):
    """What the `status` query returns."""

    status: str
    agent: str
    round: int
    pending: list[ToolApprovalRequest]
    finish_reason: FinishReason | None = None
    usage: Usage = Field(default_factory=Usage)
    event_seq: int = 0
    requested_by: str | None = None
    grants: list[Grant] = Field(default_factory=list)


class _TooManyDecisions(ValueError):
    """More decisions in one signal or update than `MAX_DECISIONS`."""


def parse_responses(payload: Any) -> list[ToolApprovalResponse]:
    """One response object or a list of at most `MAX_DECISIONS`.

    Raises:
        _TooManyDecisions: the list is longer (counted before any is read).
        pydantic.ValidationError: a response is not valid.
    """
    items = payload if isinstance(payload, list) else [payload]
    if len(items) > MAX_DECISIONS:
        raise _TooManyDecisions(f"{len(items):,} decisions in one request: at most {MAX_DECISIONS} are taken at once")
    return [ToolApprovalResponse.model_validate(item) for item in items]
