"""Chat messages, tool calls, usage, finish reasons and the agent's event stream.

The JSON shapes are the public contract (CONTRACT.md): other programs read and
write them with nothing of this code.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from signoff.approval.requests import ApprovalRecord, Grant, ToolApprovalRequest, parse_arguments

Role = Literal["system", "user", "assistant", "tool"]


class ToolCall(BaseModel):
    """A tool call the model asked for; `arguments` is the model's raw JSON text.

    `id` is how people, decisions and the audit name the call. `model_id` is set when
    signoff gave the call that id because the model's own was empty, `*`, malformed or
    used twice (`signoff.loop.answer`): it is what the model sent, and what it is shown again.
    """

    id: str
    name: str
    arguments: str = ""
    model_id: str | None = Field(None, exclude_if=lambda value: value is None)  # the contract's shape, unless set

    @property
    def shown_id(self) -> str:
        """The id the model knows this call by."""
        return self.model_id if self.model_id is not None else self.id

    @property
    def parsed_arguments(self) -> Any:
        """`arguments` as JSON (`parse_arguments`: the raw text when it is not strict JSON),
        parsed once: every part that reads a call (the gate, the tool activity's checks, the
        tool) reads this one object, and none of them may change it. A copy keeps it only while
        its `arguments` are the same text."""
        raw, parsed = self.__dict__.get(_PARSED, (None, None))
        if raw is not self.arguments:
            parsed = parse_arguments(self.arguments)
            self.__dict__[_PARSED] = (self.arguments, parsed)  # not a field: never dumped or compared
        return parsed


_PARSED = "_parsed_arguments"


class ChatMessage(BaseModel):
    """One message of a transcript, in the OpenAI chat shape."""

    role: Role
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None

    @classmethod
    def system(cls, content: str) -> ChatMessage:
        return cls(role="system", content=content)

    @classmethod
    def user(cls, content: str) -> ChatMessage:
        return cls(role="user", content=content)

    @classmethod
    def assistant(cls, content: str | None = None, tool_calls: list[ToolCall] | None = None) -> ChatMessage:
        return cls(role="assistant", content=content, tool_calls=tool_calls or None)

    @classmethod
    def tool(cls, content: str, tool_call_id: str) -> ChatMessage:
        return cls(role="tool", content=content, tool_call_id=tool_call_id)


class Usage(BaseModel):
    """Token counts, summed over the model requests of a run."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
        )


class FinishReason(str, Enum):
    """Why a model turn or a whole run ended."""

    STOP = "stop"
    TOOL_CALLS = "tool_calls"
    AWAITING_APPROVAL = "awaiting_approval"
    MAX_ROUNDS = "max_rounds"
    LENGTH = "length"
    CONTENT_FILTER = "content_filter"
    CANCELLED = "cancelled"


class ChatResponse(BaseModel):
    """One complete model turn: the assistant message, why it ended, what it cost."""

    message: ChatMessage
    finish_reason: FinishReason = FinishReason.STOP
    usage: Usage = Field(default_factory=Usage)

    def assistant_message(self) -> ChatMessage:
        """The model's message as a transcript keeps it: in the assistant's role, whatever role
        the provider sent it in (the one place it is said)."""
        return self.message.model_copy(update={"role": "assistant"})


class ToolSpec(BaseModel):
    """What the model is told about a tool (OpenAI `function` shape)."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})

    def to_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


# --- the event stream (the original AgentResponseUpdate) -------------------------


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True)


class TextEvent(_Event):
    type: Literal["text"] = "text"
    text: str


class ToolCallEvent(_Event):
    type: Literal["tool_call"] = "tool_call"
    call: ToolCall


class ToolResultEvent(_Event):
    type: Literal["tool_result"] = "tool_result"
    call_id: str
    name: str
    content: str


class ApprovalRequestEvent(_Event):
    type: Literal["approval_request"] = "approval_request"
    request: ToolApprovalRequest


class ApprovalDecisionEvent(_Event):
    type: Literal["approval_decision"] = "approval_decision"
    record: ApprovalRecord


class DecisionIgnoredEvent(_Event):
    """A decision that could not be applied (unknown id, already decided, malformed)."""

    type: Literal["decision_ignored"] = "decision_ignored"
    reason: str
    payload: Any = None


class ApprovalReminderEvent(_Event):
    """A pending call is still undecided at one of its policy's reminder times."""

    type: Literal["approval_reminder"] = "approval_reminder"
    request: ToolApprovalRequest


class ApprovalEscalatedEvent(_Event):
    """A pending call's `escalate_to` approvers may now decide it too."""

    type: Literal["approval_escalated"] = "approval_escalated"
    request: ToolApprovalRequest


class DeadlineExtendedEvent(_Event):
    type: Literal["deadline_extended"] = "deadline_extended"
    call_id: str
    expires_at: datetime
    by: str | None = None


class CallRearmedEvent(_Event):
    """An expired call re-opened (`rearm_tool_call`): a new request, linked to the one that expired."""

    type: Literal["call_rearmed"] = "call_rearmed"
    call_id: str
    by: str | None = None
    expires_at: datetime | None = None
    request: str | None = None
    previous_request: str | None = None


class GrantEvent(_Event):
    """A grant was created, used for a call, revoked, or ran out."""

    type: Literal["grant"] = "grant"
    action: Literal["created", "used", "revoked", "expired"]
    grant: Grant
    call_id: str | None = None


class NotificationFailedEvent(_Event):
    """A notification channel kept failing; the run went on without it."""

    type: Literal["notification_failed"] = "notification_failed"
    event: str
    message: str


class MCPUnavailableEvent(_Event):
    """An MCP server, or one of its tools, the run could not be given when it started; the
    run goes on without it (`tool` None: the whole server)."""

    type: Literal["mcp_unavailable"] = "mcp_unavailable"
    server: str
    tool: str | None = None
    message: str


class SubAgentEvent(_Event):
    """A sub-agent call's child run (sub-agents): `started` with the child's workflow id and chain
    (the first run id, which its approval records and signatures are bound to), then `finished`
    (its finish reason) or `failed`."""

    type: Literal["sub_agent"] = "sub_agent"
    call_id: str
    agent: str
    workflow_id: str
    chain_id: str | None = None
    state: Literal["started", "finished", "failed"]
    finish_reason: FinishReason | None = None


class AutoEvaluationEvent(_Event):
    """Auto mode's verdict on a waiting call, and what came of it.

    `outcome`: `approved`, `denied` (it decided the call), `vote` (its approval is one vote of
    a quorum), `escalated` (the call waits for a person), `superseded` (a person, a grant or
    the deadline decided it first), `refused` (the policy did not let it decide: `note` says why)."""

    type: Literal["auto_evaluation"] = "auto_evaluation"
    call_id: str
    criteria: str
    verdict: Literal["approve", "deny", "escalate"]
    confidence: float
    reasoning: str
    outcome: Literal["approved", "denied", "vote", "escalated", "superseded", "refused"]
    note: str | None = None
    latency_ms: int = 0
    model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0


class FinishEvent(_Event):
    type: Literal["finish"] = "finish"
    reason: FinishReason
    usage: Usage = Field(default_factory=Usage)


class ErrorEvent(_Event):
    type: Literal["error"] = "error"
    message: str


AgentEvent = Annotated[
    TextEvent
    | ToolCallEvent
    | ToolResultEvent
    | ApprovalRequestEvent
    | ApprovalDecisionEvent
    | DecisionIgnoredEvent
    | ApprovalReminderEvent
    | ApprovalEscalatedEvent
    | DeadlineExtendedEvent
    | CallRearmedEvent
    | GrantEvent
    | NotificationFailedEvent
    | MCPUnavailableEvent
    | SubAgentEvent
    | AutoEvaluationEvent
    | FinishEvent
    | ErrorEvent,
    Field(discriminator="type"),
]
