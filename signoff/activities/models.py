"""One input and one output model per activity, so fields can be added compatibly."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, Field

from signoff.agent.snapshot import RunSnapshot
from signoff.approval.auto import AutoVerdict
from signoff.approval.people import Person
from signoff.approval.requests import InputAsked, ToolApprovalRequest
from signoff.approval.signatures import SignoffClaim
from signoff.contract import InheritedGate
from signoff.loop.transcript import TranscriptDelta
from signoff.messages import ChatMessage, ChatResponse, MCPUnavailableEvent, ToolCall
from signoff.text.wire import Compact
from signoff.views.notices import NoticeKind

# The activities' names, stable across versions (histories name them): their one home.
PREPARE_ACTIVITY = "signoff.prepare"
"""Snapshots the agent for a resumed transcript, and gates its open calls."""
CHAT_ACTIVITY = "signoff.chat"
"""One model turn."""
TOOL_ACTIVITY = "signoff.tool"
"""The activity that runs one tool call; `signoff audit --verify` finds the calls run by it."""
TOOL_ANSWER_ACTIVITY = "signoff.tool_answer"
"""Sends a person's answer to an MCP server's question back with the call (`tools/call` again)."""
IDENTIFY_ACTIVITY = "signoff.identify"
"""Verifies a token worker-side."""
SEAL_ACTIVITY = "signoff.seal"
"""Seals the state a run carries across continue-as-new (a local activity)."""
UNSEAL_ACTIVITY = "signoff.unseal"
"""Checks the seal of a continued run's state (a local activity)."""
NOTIFY_ACTIVITY = "signoff.notify"
"""Sends one notice to the notification channels."""
AUTO_ACTIVITY = "signoff.auto_evaluate"
"""Auto mode's evaluator; `signoff audit --verify` finds its signed votes in its results."""


class Requester(Compact, Person):
    """Who asked for the run: the person (`verified` when a requester token vouched for
    `name`), and `bound` when that token is bound to this workflow id
    (`signoff.approval.signatures.RequesterClaim`). On the wire: name, groups, verified, bound."""

    bound: bool = False

    @classmethod
    def of(cls, person: Person, *, bound: bool = False) -> Requester:
        """`person` as the run's requester."""
        return cls(name=person.name, groups=person.groups, verified=person.verified, bound=bound)


class PrepareInput(Compact):
    """A resumed transcript: snapshot the agent with it and gate its open calls."""

    agent: str
    transcript: list[ChatMessage]
    open_calls: list[ToolCall] = Field(default_factory=list)
    requester: Requester = Field(default_factory=Requester)
    """Checked against the snapshot's policies (`authority.requester_problem`)."""


class PrepareOutput(Compact):
    snapshot: RunSnapshot
    snapshot_digest: str
    gated: list[str] = Field(default_factory=list)
    previews: dict[str, str] = Field(default_factory=dict)
    unavailable: list[MCPUnavailableEvent] = Field(default_factory=list)
    """MCP servers or tools the snapshot could not include, for the run's events."""


class ChatInput(Compact):
    """One model turn. The transcript travels by reference (`signoff.loop.transcript`)."""

    agent: str
    snapshot_digest: str | None = None
    """None on a run's first turn: the activity snapshots the agent and returns it."""
    transcript: TranscriptDelta
    model: str | None = None
    temperature: float | None = None
    requester: Requester | None = None
    """On the first turn: checked against the snapshot's policies before the model is asked."""
    inherited: dict[str, InheritedGate] | None = None
    """On a child run's first turn: its ancestors' gates, applied over its own tools' (sub-agents)."""
    stream_turn: int | None = None
    """The run's model turn number: the activity publishes the model's text to the run's stream
    (topic `tokens`, activities/tokens.py) under it. None: nothing is published."""

    absent_when_none: ClassVar[frozenset[str]] = frozenset({"inherited", "stream_turn"})


class ChatTurn(Compact):
    response: ChatResponse
    gated: list[str] = Field(default_factory=list)
    """Ids of the calls that need approval under the run's snapshot."""
    previews: dict[str, str] = Field(default_factory=dict)
    """What the gated calls would do, by call id, for tools that can say."""
    snapshot: RunSnapshot | None = None
    snapshot_digest: str | None = None
    unavailable: list[MCPUnavailableEvent] = Field(default_factory=list)
    """With the snapshot: MCP servers or tools it could not include, for the run's events."""


class ApprovalProof(Compact):
    """Why the run lets this call run: the audit record that approved it, the request
    instance it was asked as (`binding.request`; None for a call asked before v4), and the
    grants that voted for it (empty: people decided it themselves)."""

    call_id: str
    arguments_digest: str
    record_hash: str
    request: str | None = None
    grants: list[str] = Field(default_factory=list)


class ToolInput(Compact):
    agent: str
    snapshot_digest: str | None = None
    call: ToolCall
    """The call with the arguments to run it with (edited ones included)."""
    approval: ApprovalProof | None = None
    """Set for a call a person (or a grant, or its policy) approved; None for one that needs none."""
    tokens: list[str] = Field(default_factory=list)
    """The signed decisions that approved it. Under a verified policy they are the only
    evidence the activity accepts: it verifies them itself before the call runs."""
    requester_token: str | None = None
    """The run's requester token, for `separate_requester` under a verified policy."""
    delegations: list[str | None] = Field(default_factory=list)
    """The delegation each of `tokens` was sent under (by position; None or absent: none)."""


class ToolOutput(BaseModel):
    content: str
    input: InputAsked | None = Field(None, exclude_if=lambda asked: asked is None)
    """The call's MCP server asked a question instead of finishing (`input_required`): the run
    waits for a person's answer. Absent otherwise (so results recorded before keep their shape)."""


class ToolAnswerInput(Compact):
    """A person's answer to the question an MCP server asked in the middle of `call`."""

    agent: str
    snapshot_digest: str | None = None
    call: ToolCall
    asked: InputAsked
    """The question, with the server's state to echo (`asked.state`)."""
    answer: dict[str, Any]
    """The MCP `ElicitResult` to send (`{"action", "content"?}`)."""
    record_hash: str = ""
    """The audit record of the answer (who answered)."""
    tokens: list[str] = Field(default_factory=list)
    """The signed answer, under a verified policy (checked by the activity with its own keys)."""


class IdentifyInput(BaseModel):
    token: str


class IdentifyOutput(Compact):
    """Who a token vouches for and what it signs, or why it does not (recorded in history
    either way)."""

    subject: str | None = None
    groups: list[str] = Field(default_factory=list)
    error: str | None = None
    claim: SignoffClaim | None = None
    signed_decisions: bool = False
    """True from a worker that requires verified decisions to be signed (v3). Absent from the
    answers v2 recorded, so a run replaying such a history keeps v2's rule in the workflow."""

    def person(self) -> Person | None:
        """Whom the token vouches for (verified), or None when it was refused."""
        if self.subject is None:
            return None
        return Person(name=self.subject, groups=tuple(self.groups), verified=True)


class SealInput(BaseModel):
    """Seal the state a run continues as new with: its digest, and the chain it belongs to."""

    chain_id: str
    digest: str


class SealOutput(BaseModel):
    seal: str
    """Hex HMAC-SHA256, or empty when the worker has no state key."""


class UnsealInput(BaseModel):
    """Check the seal of the state a continued run starts from."""

    chain_id: str
    digest: str
    seal: str
    continued_run_id: str
    """The run this one continues, as the server says (checked with the server without a key)."""


class UnsealOutput(BaseModel):
    error: str | None = None
    """Why the state is refused (None: it is the state a run of this chain sealed)."""


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


class AutoInput(Compact):
    """A waiting call for auto mode's evaluator (`signoff.auto_evaluate`)."""

    agent: str
    snapshot_digest: str | None = None
    request: ToolApprovalRequest


class AutoOutput(Compact):
    """The evaluator's verdict on a call, and whether it decides it.

    Attributes:
        criteria: the criteria set it judged by (the worker's own policy's).
        verdict: what it said; `escalate` for anything that was not a verdict.
        needed: the confidence a verdict needed (`signoff.approval.auto.bar`).
        decides: it is a confident approve or deny the evaluator may make under the policy.
        why_not: why a confident verdict does not decide (the policy does not let it).
        model: the model that judged (None: an evaluator in code).
        latency_ms, prompt_tokens, completion_tokens: what the evaluation cost.
        token: under a verified policy, the decision signed with the worker's service key.
    """

    criteria: str = ""
    verdict: AutoVerdict
    needed: float = 1.0
    decides: bool = False
    why_not: str | None = None
    model: str | None = None
    latency_ms: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    token: str | None = None
