"""The durable run's public JSON shapes (CONTRACT.md): input, result, acks, status.

Pure pydantic, no Temporal: orchestrators build these, and any Temporal client
can send the same JSON by hand.
"""

from __future__ import annotations

import hashlib
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from signoff.approvals import ApprovalRecord, ToolApprovalRequest, ToolApprovalResponse
from signoff.loop import DEFAULT_MAX_ROUNDS, LoopState
from signoff.messages import ChatMessage, FinishReason, ToolSpec, Usage

WORKFLOW_TYPE = "AgentRun"
DEFAULT_TASK_QUEUE = "signoff"
SIGNAL_APPROVAL = "tool_approval"
UPDATE_APPROVAL = "submit_tool_approval"
QUERY_PENDING = "pending_approvals"
QUERY_STATUS = "status"
QUERY_EVENTS = "events"
QUERY_MESSAGES = "messages"
QUERY_SNAPSHOT = "agent_snapshot"
STATUS_RUNNING = "Running"
STATUS_AWAITING = "AwaitingApproval"
STATUS_FINISHED = "Finished"


class RunOptions(BaseModel):
    """`options` of the workflow input."""

    model_config = ConfigDict(extra="forbid")

    max_rounds: int = Field(DEFAULT_MAX_ROUNDS, ge=1)
    approval_timeout_seconds: float | None = Field(None, gt=0)
    tool_approval_responses: list[ToolApprovalResponse] = Field(default_factory=list)
    model: str | None = None
    temperature: float | None = Field(None, ge=0)


class AgentSnapshotModel(BaseModel):
    """The agent as the run started with it: fixed for the whole run."""

    agent: str
    instructions: str = ""
    tools: list[ToolSpec] = Field(default_factory=list)
    idempotent: dict[str, bool] = Field(default_factory=dict)

    @property
    def descriptions(self) -> dict[str, str]:
        return {t.name: t.description for t in self.tools}

    def digest(self) -> str:
        """A stable fingerprint, so activities can refer to the snapshot by it."""
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:32]


class ContinuedState(BaseModel):
    """What a run carries across continue-as-new (not for callers to write)."""

    loop: LoopState
    snapshot: AgentSnapshotModel | None = None
    snapshot_digest: str = ""
    event_seq: int = 0


class AgentRunInput(BaseModel):
    """Workflow input. Exactly one of `prompt` or `messages`."""

    model_config = ConfigDict(extra="forbid")

    agent: str = "default"
    prompt: str | None = None
    messages: list[ChatMessage] | None = None
    options: RunOptions = Field(default_factory=RunOptions)
    continued: ContinuedState | None = None

    @model_validator(mode="after")
    def _one_source(self) -> AgentRunInput:
        if self.continued is None and (self.prompt is None) == (self.messages is None):
            raise ValueError("give exactly one of 'prompt' or 'messages'")
        if self.messages is not None and not self.messages and self.continued is None:
            raise ValueError("'messages' is empty")
        return self

    def transcript(self) -> list[ChatMessage]:
        return list(self.messages) if self.messages is not None else [ChatMessage.user(self.prompt or "")]


class AgentRunResult(BaseModel):
    """Workflow result."""

    finish_reason: FinishReason
    text: str | None = None
    messages: list[ChatMessage]
    rounds: int
    usage: Usage
    approvals: list[ApprovalRecord]


class DecisionAck(BaseModel):
    """What the update returns: the call ids it decided, and those still pending."""

    accepted: list[str]
    pending: list[str]


class RunStatus(BaseModel):
    """What the `status` query returns."""

    status: str
    agent: str
    round: int
    pending: list[ToolApprovalRequest]
    finish_reason: FinishReason | None = None
    usage: Usage = Field(default_factory=Usage)
    event_seq: int = 0


def parse_responses(payload: Any) -> list[ToolApprovalResponse]:
    """One response object or a list of them; raises pydantic's ValidationError."""
    items = payload if isinstance(payload, list) else [payload]
    return [ToolApprovalResponse.model_validate(item) for item in items]
