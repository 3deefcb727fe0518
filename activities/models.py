"""One input and one output model per activity, so fields can be added compatibly."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from signoff.messages import ChatMessage, ChatResponse, MCPUnavailableEvent, ToolCall
from signoff.notices import NoticeKind
from signoff.snapshot import RunSnapshot
from signoff.transcript import TranscriptDelta

TOOL_ACTIVITY = "signoff.tool"
"""The activity that runs one tool call; `signoff audit --verify` finds the calls run by it."""

class PrepareInput(BaseModel):
    """A resumed transcript: snapshot the agent with it and gate its open calls."""

    agent: str
    transcript: list[ChatMessage]
    open_calls: list[ToolCall] = Field(default_factory=list)


class PrepareOutput(BaseModel):
    snapshot: RunSnapshot
    snapshot_digest: str
    gated: list[str] = Field(default_factory=list)
    previews: dict[str, str] = Field(default_factory=dict)
    unavailable: list[MCPUnavailableEvent] = Field(default_factory=list)
    """MCP servers or tools the snapshot could not include, for the run's events."""


class ChatInput(BaseModel):
    """One model turn. The transcript travels by reference (`signoff.transcript`)."""

    agent: str
    snapshot_digest: str | None = None
    """None on a run's first turn: the activity snapshots the agent and returns it."""
    transcript: TranscriptDelta
    model: str | None = None
    temperature: float | None = None


class ChatTurn(BaseModel):
    response: ChatResponse
    gated: list[str] = Field(default_factory=list)
    """Ids of the calls that need approval under the run's snapshot."""
    previews: dict[str, str] = Field(default_factory=dict)
    """What the gated calls would do, by call id, for tools that can say."""
    snapshot: RunSnapshot | None = None
    snapshot_digest: str | None = None
    unavailable: list[MCPUnavailableEvent] = Field(default_factory=list)
    """With the snapshot: MCP servers or tools it could not include, for the run's events."""


class ApprovalProof(BaseModel):
    """Why the run lets this call run: the audit record that approved it."""

    call_id: str
    arguments_digest: str
    record_hash: str


class ToolInput(BaseModel):
    agent: str
    snapshot_digest: str | None = None
    call: ToolCall
    """The call with the arguments to run it with (edited ones included)."""
    approval: ApprovalProof | None = None
    """Set for a call a person (or a grant, or its policy) approved; None for one that needs none."""


class ToolOutput(BaseModel):
    content: str


class IdentifyInput(BaseModel):
    token: str


class IdentifyOutput(BaseModel):
    """Who a token vouches for, or why it does not (recorded in history either way)."""

    subject: str | None = None
    groups: list[str] = Field(default_factory=list)
    error: str | None = None


class NotifyInput(BaseModel):
    """One notice for one channel. The run's id comes from the activity's own info."""

    channel: str
    """The channel's fingerprint (`NotifyPlan.channels`), never its URL."""
    event: NoticeKind
    agent: str
    seq: int
    """The run's event number: with the run's ids, the delivery id receivers dedupe on."""
    request: dict[str, Any] | None = None
    decision: dict[str, Any] | None = None


class NotifyOutput(BaseModel):
    status: int
