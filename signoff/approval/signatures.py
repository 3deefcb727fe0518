"""What a bound token says: the `signoff` claim, and whether it fits what it is used for.

Under a `verified` policy a token is evidence only for what its `signoff` claim names
(CONTRACT v3 "What counts as a sign-off"), so a token copied from one run's history
decides nothing anywhere else. Three shapes:

- a decision (`DecisionClaim`): the call's `binding` (workflow, continue-as-new chain,
  call, tool, arguments digest, request instance) plus the answer: `approved`, `edited_arguments_digest`
  (the digest of the arguments an approval runs instead, else null) and `grant` (the
  grant the approval makes, exactly as sent, else null);
- a deadline extension (`ExtensionClaim`): the binding plus `extend_seconds`;
- a requester token (`RequesterClaim`): `{"workflow_id": ..., "requester": true}`, the
  run a person asks for (its run id is not known before it starts, so only the id the
  starter chose is bound).

Pure: parsing and comparing; verifying signatures is `signoff.approval.identity`.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from signoff.approval.digest import arguments_digest, sha256_hex
from signoff.approval.requests import Binding, GrantSpec, ToolApprovalResponse

CLAIM = "signoff"
"""The JWT claim that binds a token to one decision."""
SIGN_HELP = (
    "sign the decision for this call: `signoff approve RUN CALL` with SIGNOFF_APPROVER_KEY_FILE, "
    "or `signoff sign RUN CALL` to paste into the Web UI"
)


class DecisionClaim(Binding):
    """A signed decision on one call. `respond_digest`: the digest of the text it answers the
    call with instead of running it (`respond_digest()`; absent otherwise)."""

    absent_when_none: ClassVar[frozenset[str]] = Binding.absent_when_none | {
        "respond_digest",
        "answer_digest",
        "answer_action",
    }

    approved: bool
    edited_arguments_digest: str | None = None
    grant: GrantSpec | None = None
    respond_digest: str | None = None
    answer_action: Literal["accept", "decline", "cancel"] | None = None
    """An answer to an MCP server's question: what the person did (with `state_digest` of the binding)."""
    answer_digest: str | None = None
    """The digest of the JSON answer (`answer_digest()`), for `answer_action: accept` in form mode."""


class ExtensionClaim(Binding):
    """A signed request to move one waiting call's deadline."""

    extend_seconds: float = Field(gt=0)


class DelegationClaim(BaseModel):
    """A signed "let `delegate`'s decisions count as my vote": on `tools` (None: every tool),
    within the token's own window (`nbf` to `exp`). Its signer is the delegator."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    delegate: str = Field(min_length=1, max_length=256)
    tools: tuple[str, ...] | None = Field(None, max_length=100)

    def covers(self, tool: str) -> bool:
        return self.tools is None or tool in self.tools


class RequesterClaim(BaseModel):
    """A signed "I ask for this run"."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    workflow_id: str
    requester: Literal[True]


SignoffClaim = DecisionClaim | ExtensionClaim | RequesterClaim | DelegationClaim


def read_claim(value: Any) -> SignoffClaim:
    """The `signoff` claim of a token, by its shape.

    Raises:
        ValueError: it is none of the three shapes (the message says what is wrong).
    """
    if not isinstance(value, dict):
        raise ValueError(f"the {CLAIM!r} claim must be a JSON object, not {type(value).__name__}")
    shape: type[BaseModel] = (
        RequesterClaim
        if "requester" in value
        else DelegationClaim
        if "delegate" in value
        else ExtensionClaim
        if "extend_seconds" in value
        else DecisionClaim
    )
    try:
        claim: SignoffClaim = shape.model_validate(value)  # type: ignore[assignment]
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'claim'}: {e['msg']}" for e in exc.errors()[:5])
        raise ValueError(f"the {CLAIM!r} claim is not a {shape.__name__}: {problems}") from None
    return claim


def respond_digest(text: str) -> str:
    """The digest a signed `respond` names: lowercase hex SHA-256 of the text, UTF-8."""
    return sha256_hex(text)


def answer_digest(answer: Any) -> str:
    """The digest a signed answer names: lowercase hex SHA-256 of the answer's canonical JSON."""
    return arguments_digest(answer)


def decision_claim(binding: Binding, response: ToolApprovalResponse) -> DecisionClaim:
    """The claim a token must carry to sign `response` on the call of `binding`."""
    edited = arguments_digest(response.arguments) if response.arguments is not None else None
    responded = respond_digest(response.respond) if response.respond is not None else None
    return DecisionClaim(
        **binding.model_dump(),
        approved=response.approved,
        edited_arguments_digest=edited,
        grant=response.grant,
        respond_digest=responded,
        answer_action=response.input_action() if response.answers_input else None,
        answer_digest=answer_digest(response.answer) if response.answer is not None else None,
    )


def extension_claim(binding: Binding, seconds: float) -> ExtensionClaim:
    """The claim a token must carry to move the deadline of the call of `binding`."""
    return ExtensionClaim(**binding.model_dump(), extend_seconds=seconds)


def requester_claim(workflow_id: str) -> RequesterClaim:
    return RequesterClaim(workflow_id=workflow_id, requester=True)


def mismatch(signed: SignoffClaim | None, wanted: SignoffClaim) -> str | None:
    """Why a token signed as `signed` is no evidence of `wanted`, or None when it is.

    The message names each field that differs, so a person can see what they signed."""
    if signed is None:
        return f"the token is a plain identity token, without the {CLAIM!r} claim a verified policy needs: {SIGN_HELP}"
    if type(signed) is not type(wanted):
        return f"the token signs a {_kind(signed)}, not a {_kind(wanted)}"
    mine, theirs = signed.model_dump(mode="json"), wanted.model_dump(mode="json")
    keys = [*theirs, *(key for key in mine if key not in theirs)]  # a field left out (None) is compared too
    differing = [
        f"its {key} is {mine.get(key)!r}, not {theirs.get(key)!r}" for key in keys if mine.get(key) != theirs.get(key)
    ]
    if not differing:
        return None
    return f"the token is signed for another {_kind(wanted)}: " + "; ".join(differing)


def _kind(claim: SignoffClaim) -> str:
    kinds = {DecisionClaim: "decision", ExtensionClaim: "deadline extension", RequesterClaim: "requester"}
    return kinds.get(type(claim), "delegation")


__all__ = [
    "CLAIM",
    "SIGN_HELP",
    "DecisionClaim",
    "DelegationClaim",
    "ExtensionClaim",
    "RequesterClaim",
    "SignoffClaim",
    "answer_digest",
    "decision_claim",
    "extension_claim",
    "mismatch",
    "read_claim",
    "requester_claim",
    "respond_digest",
]
