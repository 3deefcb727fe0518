"""Approval requests, the human's responses, grants, and the audit record of each decision.

The JSON shapes are the public contract (CONTRACT.md): any Temporal client sends and
reads them as plain JSON.
"""

from __future__ import annotations

import json
from datetime import datetime
from enum import Enum
from typing import Any, ClassVar, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator

from signoff.approval.names import MAX_NAME_CHARS, name_problem
from signoff.approval.people import Person
from signoff.approval.policy import ApprovalPolicy, OnTimeout
from signoff.errors import NotStrictJSON
from signoff.text import strict_json
from signoff.text.wire import Compact

MAX_REASON_CHARS = 4096
MAX_APPROVER_CHARS = MAX_NAME_CHARS
MAX_TOKEN_CHARS = 16384
MAX_RESPOND_CHARS = 65_536
"""The longest text a person may answer a call with instead of running it (`respond`): the
default cap of a tool's output kept in the transcript."""
MAX_SECONDS = 366 * 86400
"""The longest time a decision may name (a grant's `ttl_seconds`, a deadline's extension)."""
MAX_USES = 10_000
"""The most calls one grant may approve (`max_uses`)."""
_DIGEST_PATTERN = r"^[0-9a-f]{64}$"


class Vote(BaseModel):
    """One approver's approval of a call that needs more than one (quorum).

    `approver` and `verified` are the voter (a `Person` without groups: a vote records who
    counted, not why they could)."""

    approver: str | None = None
    verified: bool = False
    at: datetime | None = None
    grant_id: str | None = None
    delegate: str | None = Field(None, exclude_if=lambda name: name is None)
    """Who cast this vote for `approver`, under their signed delegation (None: they did)."""

    @classmethod
    def by(cls, person: Person, at: datetime, grant_id: str | None = None, delegate: str | None = None) -> Vote:
        """`person`'s approval at `at` (through the grant `grant_id`, if one voted for them;
        cast by `delegate`, if they delegated it)."""
        return cls(approver=person.name, verified=person.verified, at=at, grant_id=grant_id, delegate=delegate)


class Binding(Compact):
    """What a signed decision on one call names (CONTRACT v3 "What counts as a sign-off"):
    this workflow, this continue-as-new chain (its first run's id), this call, its tool
    and its arguments digest, and (v4) `request`: the value the workflow drew when it asked
    for the call, so a decision signed for one request instance decides no other (the same
    call asked again after `temporal workflow reset`, say). A token whose `signoff` claim is
    this object plus `approved`, `edited_arguments_digest` and `grant` decides this call and
    nothing else.

    `request` is None only for calls asked before v4 (runs that resume from older histories);
    a claim without it binds only such a call (and it is left out of every dump when None, so
    the digests and seals of state carrying such a call stay what they were)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    absent_when_none: ClassVar[frozenset[str]] = frozenset({"request", "state_digest"})

    workflow_id: str
    chain_id: str
    call_id: str
    tool: str
    arguments_digest: str
    request: str | None = None
    state_digest: str | None = None
    """(v4 answers) For an MCP server's question (`kind: "input"`): the SHA-256 of the server's
    `requestState` the answer goes back with, so an answer signed for one question answers no
    other. None (absent) for approvals."""


class AutoNote(BaseModel):
    """What auto mode made of a waiting call, shown with it (`signoff pending`, the inbox).

    `state`: `evaluating` (the evaluator is thinking; a person may decide meanwhile),
    `escalated` (the call waits for a person: `reasoning` says why), `voted` (its approval
    counted as one vote; the quorum needs more)."""

    criteria: str
    state: Literal["evaluating", "escalated", "voted"] = "evaluating"
    verdict: Literal["approve", "deny", "escalate"] | None = None
    confidence: float | None = None
    reasoning: str | None = None


MAX_ANSWER_CHARS = 65_536
"""The longest answer to an MCP server's question, as JSON."""


class InputAsked(BaseModel):
    """What an MCP server asked in the middle of a `tools/call` (protocol 2026-07-28
    `input_required`): one elicitation, whose answer goes back with the server's state.

    Attributes:
        key: the server's name for its question (the `inputRequests` key the answer goes under).
        mode: `form` (the person answers `requested_schema`) or `url` (the person is sent to
            `url`; nothing entered there passes through signoff: they only consent or decline).
        state: the server's `requestState`, echoed verbatim on the retry (opaque to signoff).
    """

    key: str
    mode: Literal["form", "url"] = "form"
    message: str = ""
    requested_schema: dict[str, Any] | None = None
    url: str | None = None
    state: str | None = None

    def state_digest(self) -> str:
        """SHA-256 of the server's state (what a signed answer names)."""
        from signoff.approval.digest import sha256_hex

        return sha256_hex(self.state or "")

    def url_host(self) -> str | None:
        """The host a URL-mode question sends the person to (shown before they consent)."""
        from urllib.parse import urlsplit

        return urlsplit(self.url).hostname if self.url else None


class ToolApprovalRequest(BaseModel):
    """A gated tool call waiting for a human decision.

    Attributes:
        arguments: the parsed JSON arguments, or the raw text when not valid JSON.
        arguments_digest: SHA-256 of `arguments` as canonical JSON: a decision may
            carry it to say "this is what I reviewed".
        policy: who may decide, how many must agree, what a timeout does.
        votes: approvals so far (quorum above 1).
        preview: what the call would do, computed worker-side (a diff, a summary).
        expires_at: when the call times out (None waits forever).
        binding: what a signed decision on this call must name (None in process, where
            nothing is signed).
        similar_pattern: what an approval's `"grant": {"match": "similar"}` would cover,
            derived from the call (`signoff.approval.similar`); None: the tool has none.
        auto: what auto mode made of the call (None: no auto mode).
    """

    call_id: str
    name: str
    arguments: Any = None
    arguments_digest: str = ""
    description: str = ""
    round: int = 0
    requested_at: datetime | None = None
    expires_at: datetime | None = None
    policy: ApprovalPolicy = Field(default_factory=ApprovalPolicy)
    votes: list[Vote] = Field(default_factory=list)
    preview: str | None = None
    escalated: bool = False
    binding: Binding | None = None
    workflow_id: str | None = Field(None, exclude_if=lambda value: value is None)
    """In query answers: the run that waits on the call (itself or a sub-agent's child run)."""
    path: list[str] | None = Field(None, exclude_if=lambda value: value is None)
    """In query answers: the workflow ids from the run queried down to the one that waits (`[]`: its own)."""
    status: Literal["waiting", "expired"] = Field("waiting", exclude_if=lambda status: status == "waiting")
    """`expired`: its deadline passed under `on_timeout = "hold"`; it waits to be re-opened
    (`rearm_tool_call`). Left out while `waiting`."""
    rearmed_from: str | None = Field(None, exclude_if=lambda request: request is None)
    """The request instance (`binding.request`) this one re-opens, when it was re-armed."""
    similar_pattern: str | None = Field(None, exclude_if=lambda v: v is None)
    auto: AutoNote | None = Field(None, exclude_if=lambda v: v is None)
    kind: Literal["approval", "input"] | None = Field(None, exclude_if=lambda kind: kind is None)
    """`input`: an MCP server asked a question in the middle of the call (`message`, `schema`);
    it is answered (`answer`, `decline`, `cancel`), not approved. None in the run's state for an
    approval (so the state of runs from before stays as sealed); queries say `approval`."""
    message: str | None = Field(None, exclude_if=lambda text: text is None)
    """What the MCP server asks (`kind: "input"`)."""
    input_schema: dict[str, Any] | None = Field(
        None,
        serialization_alias="schema",
        validation_alias=AliasChoices("schema", "input_schema"),
        exclude_if=lambda schema: schema is None,
    )
    """The JSON schema the server wants the answer to fit (`schema` in JSON; form mode)."""
    url: str | None = Field(None, exclude_if=lambda url: url is None)
    """URL mode: where the server sends the person; `url_host` is its host, shown before consent."""
    url_host: str | None = Field(None, exclude_if=lambda host: host is None)

    model_config = ConfigDict(serialize_by_alias=True)

    @property
    def asks_input(self) -> bool:
        """An MCP server's question (answered, not approved)."""
        return self.kind == "input"

    def viewed(self) -> ToolApprovalRequest:
        """As queries show it: with its `kind` (`approval` unless it asks for input)."""
        return self if self.kind else self.model_copy(update={"kind": "approval"})


class GrantMatch(str, Enum):
    """What later calls a grant approves: any call of the tool, only identical arguments, or
    calls the request's `similar_pattern` covers (`signoff.approval.similar`)."""

    TOOL = "tool"
    ARGUMENTS = "arguments"
    SIMILAR = "similar"


class GrantSpec(BaseModel):
    """`grant` on an approval: approve and remember, for matching later calls of the run."""

    model_config = ConfigDict(extra="forbid")

    match: GrantMatch = GrantMatch.ARGUMENTS
    ttl_seconds: float | None = Field(None, gt=0, le=MAX_SECONDS, allow_inf_nan=False)
    max_uses: int | None = Field(None, ge=1, le=MAX_USES)
    pattern: str | None = Field(None, max_length=1024, exclude_if=lambda v: v is None)
    """With `match: similar`: the `similar_pattern` the approver was shown (required when the
    decision is signed, so the signature covers it; when given it must be the request's)."""


def shown_grant(grant: GrantSpec | None, request: ToolApprovalRequest) -> GrantSpec | None:
    """`grant` as a signer sends it for `request`: a `similar` grant names the pattern shown."""
    if grant is None or grant.match is not GrantMatch.SIMILAR or grant.pattern is not None:
        return grant
    return grant.model_copy(update={"pattern": request.similar_pattern})


class ToolApprovalResponse(BaseModel):
    """A human's decision on one pending call (`call_id="*"` decides them all).

    Unknown fields are rejected: a typo such as `"aproved"` must not read as a denial.
    `respond` answers the call with its result instead of running it (a tool whose policy
    says `respond = true`): such a decision needs no `approved`, and is no approval.
    """

    model_config = ConfigDict(extra="forbid")

    call_id: str = Field(min_length=1, max_length=512)
    approved: bool
    respond: str | None = Field(None, max_length=MAX_RESPOND_CHARS, exclude_if=lambda text: text is None)
    answer: Any = Field(None, exclude_if=lambda value: value is None)
    """The answer to an MCP server's question (`kind: "input"`): JSON fitting its `schema`."""
    decline: bool = Field(False, exclude_if=lambda flag: flag is False)
    """Decline an MCP server's question (the server is told `decline`; a URL is not visited)."""
    cancel: bool = Field(False, exclude_if=lambda flag: flag is False)
    """Dismiss an MCP server's question without a choice (the server is told `cancel`)."""
    delegation: str | None = Field(None, max_length=MAX_TOKEN_CHARS, exclude_if=lambda token: token is None)
    """A delegation token (`signoff delegate`): the sender's signed decision (`token`) counts as
    the delegator's vote, within its window and tools."""
    reason: str | None = Field(None, max_length=MAX_REASON_CHARS)
    approver: str | None = Field(None, max_length=MAX_APPROVER_CHARS)
    arguments: dict[str, Any] | None = None
    arguments_digest: str | None = Field(None, pattern=_DIGEST_PATTERN)
    token: str | None = Field(None, max_length=MAX_TOKEN_CHARS)
    grant: GrantSpec | None = None
    workflow_id: str | None = Field(None, min_length=1, max_length=1000, exclude_if=lambda value: value is None)
    """The run that waits on the call, when the decision is sent to an ancestor of it (a sub-agent's
    parent): routed there; None or the receiving run's own id: its own call."""

    @field_validator("arguments")
    @classmethod
    def _strict_arguments(cls, arguments: dict[str, Any] | None) -> dict[str, Any] | None:
        if arguments is not None:
            strict_json.check(arguments)  # NaN, Infinity or deep nesting could be neither digested nor run
        return arguments

    @field_validator("approver")
    @classmethod
    def _a_name(cls, approver: str | None) -> str | None:
        return checked_name("approver", approver)

    @model_validator(mode="before")
    @classmethod
    def _an_answer_is_no_approval(cls, data: Any) -> Any:
        answers = ("respond", "answer", "decline", "cancel")
        if isinstance(data, dict) and "approved" not in data and any(data.get(k) not in (None, False) for k in answers):
            return {**data, "approved": False}
        return data

    @field_validator("answer")
    @classmethod
    def _strict_answer(cls, answer: Any) -> Any:
        if answer is not None:
            strict_json.check(answer)
            if len(json.dumps(answer)) > MAX_ANSWER_CHARS:
                raise ValueError(f"the answer is longer than {MAX_ANSWER_CHARS:,} characters of JSON")
        return answer

    @property
    def answers_input(self) -> bool:
        """An answer to an MCP server's question (`answer`, `decline` or `cancel`)."""
        return self.answer is not None or self.decline or self.cancel

    def input_action(self) -> Literal["accept", "decline", "cancel"]:
        """The MCP `ElicitResult.action` this answer is."""
        return "decline" if self.decline else "cancel" if self.cancel else "accept"

    @model_validator(mode="after")
    def _approval_only_fields(self) -> ToolApprovalResponse:
        if self.respond is not None and self.approved:
            raise ValueError("'respond' answers the call instead of running it: it is no approval (no 'approved')")
        if sum((self.answer is not None, self.decline, self.cancel)) > 1:
            raise ValueError("one of 'answer', 'decline' or 'cancel' answers a server's question, not several")
        if self.answers_input and (self.approved or self.respond is not None or self.arguments is not None):
            raise ValueError(
                "'answer', 'decline' and 'cancel' answer an MCP server's question: "
                "no 'approved', 'respond' or 'arguments' with them"
            )
        if self.delegation is not None and self.token is None:
            raise ValueError("'delegation' goes with the delegate's own token (who sends the decision)")
        if self.delegation is not None and self.grant is not None:
            raise ValueError("a delegated decision makes no grant")
        if not self.approved and self.arguments is not None:
            raise ValueError("'arguments' (edited arguments) go with an approval, not a denial")
        if not self.approved and self.grant is not None:
            raise ValueError("'grant' goes with an approval, not a denial")
        return self

    @classmethod
    def approve(cls, call_id: str, **kwargs: Any) -> ToolApprovalResponse:
        return cls(call_id=call_id, approved=True, **kwargs)

    @classmethod
    def deny(cls, call_id: str, reason: str | None = None, **kwargs: Any) -> ToolApprovalResponse:
        return cls(call_id=call_id, approved=False, reason=reason, **kwargs)

    @classmethod
    def answering(cls, call_id: str, answer: Any, **kwargs: Any) -> ToolApprovalResponse:
        """Answer an MCP server's question (`kind: "input"`) with `answer` (JSON fitting its schema)."""
        return cls(call_id=call_id, approved=False, answer=answer, **kwargs)

    @classmethod
    def declining(cls, call_id: str, **kwargs: Any) -> ToolApprovalResponse:
        """Decline an MCP server's question (the server is told)."""
        return cls(call_id=call_id, approved=False, decline=True, **kwargs)

    @classmethod
    def responding(cls, call_id: str, text: str, **kwargs: Any) -> ToolApprovalResponse:
        """Answer the call with `text` as its result instead of running it (`respond`)."""
        return cls(call_id=call_id, approved=False, respond=text, **kwargs)


def checked_name(what: str, name: str | None) -> str | None:
    """`name` as given, or ValueError saying why it cannot name a person (`signoff.approval.names`);
    an empty name is nobody in particular, as None is."""
    if name and (problem := name_problem(what, name)) is not None:
        raise ValueError(problem)
    return name


class Grant(BaseModel):
    """A live "approve and remember": who granted it, what it matches, how long it lasts.

    `arguments_digest` is the digest of the arguments that were approved (the edited
    ones, when the approval edited them), so a grant never covers what nobody approved.
    `token` is the signed decision that made it (verified policies): the tool activity
    checks it for every call the grant approves."""

    grant_id: str
    tool: str
    arguments_digest: str | None = None
    approver: str | None = None
    verified: bool = False
    groups: tuple[str, ...] = ()
    created_at: datetime
    expires_at: datetime | None = None
    uses_left: int | None = None
    from_call: str = ""
    token: str | None = None
    pattern: str | None = Field(None, exclude_if=lambda v: v is None)
    """A `similar` grant's pattern: it approves the calls this covers (`signoff.approval.similar`)."""

    def live(self, now: datetime) -> bool:
        return (self.expires_at is None or now < self.expires_at) and self.uses_left != 0

    def person(self) -> Person:
        """Who granted it: a grant decides as them, never as anyone more."""
        return Person(name=self.approver, groups=self.groups, verified=self.verified)


class ApprovalRecord(BaseModel):
    """The audit trail entry of one decided call.

    `call_digest` is the SHA-256 of the call as it ran (tool and the arguments actually
    used); `hash` chains each record to the one before (`signoff.approval.audit`), so an edited
    record no longer verifies.
    """

    call_id: str
    name: str
    arguments: Any = None
    approved: bool
    reason: str | None = None
    approver: str | None = None
    edited_arguments: dict[str, Any] | None = None
    requested_at: datetime | None = None
    decided_at: datetime | None = None
    timed_out: bool = False
    outcome: (
        Literal["approved", "denied", "failed_run", "responded", "expired", "answered", "declined", "cancelled"] | None
    ) = None
    """`responded`: a person answered the call with its result (`respond_digest`); nothing ran."""
    verified: bool = False
    votes: list[Vote] = Field(default_factory=list)
    grant_id: str | None = None
    arguments_digest: str = ""
    call_digest: str = ""
    policy_digest: str = ""
    hash: str = ""
    respond_digest: str | None = Field(None, exclude_if=lambda digest: digest is None)
    answer_digest: str | None = Field(None, exclude_if=lambda digest: digest is None)
    """SHA-256 of the canonical JSON a person answered an MCP server's question with (outcome
    `answered`, `declined` or `cancelled`), chained; None otherwise."""
    state_digest: str | None = Field(None, exclude_if=lambda digest: digest is None)
    """SHA-256 of the server's `requestState` that answer went back with, chained."""
    delegate: str | None = Field(None, exclude_if=lambda name: name is None)
    """Who decided for `approver` under their signed delegation ("bob for alice"), chained; None otherwise."""
    """SHA-256 of the text a person answered the call with (`respond`), chained; None otherwise."""

    def grant_ids(self) -> list[str]:
        """The grants that voted for this call (the one that decided it, and under a quorum the
        others), in order; empty when people decided it themselves."""
        found = [v.grant_id for v in self.votes if v.grant_id] + ([self.grant_id] if self.grant_id else [])
        return list(dict.fromkeys(found))


def parse_arguments(raw: str) -> Any:
    """The model's argument text as JSON, or the raw text when it is not strict JSON
    (`signoff.text.strict_json`: no NaN or Infinity, nesting at most 64 deep)."""
    try:
        return strict_json.loads(raw) if raw.strip() else {}
    except NotStrictJSON:
        return raw


def arguments_problem(name: str, raw: str) -> str | None:
    """Why a call's argument text cannot be run (not strict JSON, or not an object), or None."""
    try:
        arguments = strict_json.loads(raw) if raw.strip() else {}
    except NotStrictJSON as exc:
        return f"invalid JSON arguments for {name}: {exc}"
    if not isinstance(arguments, dict):
        return f"arguments for {name} are not a JSON object: {raw[:200]!r}"
    return None


__all__ = [
    "MAX_ANSWER_CHARS",
    "MAX_APPROVER_CHARS",
    "MAX_REASON_CHARS",
    "MAX_RESPOND_CHARS",
    "MAX_SECONDS",
    "MAX_TOKEN_CHARS",
    "MAX_USES",
    "ApprovalRecord",
    "AutoNote",
    "Binding",
    "Grant",
    "GrantMatch",
    "GrantSpec",
    "InputAsked",
    "OnTimeout",
    "ToolApprovalRequest",
    "ToolApprovalResponse",
    "Vote",
    "arguments_problem",
    "checked_name",
    "parse_arguments",
    "shown_grant",
]
