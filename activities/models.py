"""One input and one output model per activity, so fields can be added compatibly."""

from __future__ import annotations

from pydantic import BaseModel, Field

from signoff.contract import AgentSnapshotModel
from signoff.messages import ChatMessage, ChatResponse, ToolCall


class PrepareInput(BaseModel):
    agent: str
    open_calls: list[ToolCall] = Field(default_factory=list)
    """Unanswered calls of a resumed transcript, to be checked against the registry."""


class PrepareOutput(BaseModel):
    snapshot: AgentSnapshotModel
    snapshot_digest: str
    gated: list[str] = Field(default_factory=list)


class ChatInput(BaseModel):
    """One model turn. The transcript and the snapshot travel by reference.

    `messages` is the transcript from index `base` on: the worker keeps what it saw of
    this run (and the model's answer), so history grows with new messages only. On a
    worker that has not seen the run, the rest is read with the `messages` query.
    """

    agent: str
    snapshot_digest: str | None = None
    """None on a run's first turn: the activity snapshots the agent and returns it."""
    base: int = 0
    messages: list[ChatMessage]
    model: str | None = None
    temperature: float | None = None


class ChatTurn(BaseModel):
    response: ChatResponse
    gated: list[str] = Field(default_factory=list)
    """Ids of the calls whose tool needs approval, decided by the worker's registry."""
    snapshot: AgentSnapshotModel | None = None
    snapshot_digest: str | None = None


class ToolInput(BaseModel):
    agent: str
    call: ToolCall


class ToolOutput(BaseModel):
    content: str
