"""Whether signed decisions authorise a call: the last check before a gated call runs.

The tool activity asks this, under a `verified` policy of the worker's own, with the tokens
the workflow handed it already verified against the worker's own keys. Nothing the
workflow says about approvals counts here (CONTRACT v3 "Evidence, not state"); what does:

- a decision signed for this call (`signoff.approval.signatures.DecisionClaim`): this workflow,
  this chain, this call, its tool and arguments digest, the request instance the run says it
  asked (`binding.request`), `approved`, and the arguments that will run (the edited ones'
  digest, or the call's own);
- or, where the policy takes grants (not `"grants": false`), a grant signed on an earlier
  call of this chain: the same tool, the arguments that were approved (for a `match:
  arguments` grant), within its `ttl_seconds` of the token's `iat`, and the call running its
  own arguments;
- from subjects the policy allows (names and verified groups, `escalate_to` included: the
  activity cannot tell whether the escalation time had come), counted once each (names
  compared as `signoff.approval.names` does), never the requester's under `separate_requester`
  (known only from a requester token bound to this workflow id), until the quorum.

Whether a token was honoured before (a reset run, a forged history), and how often a grant
was used, the activity asks the server's records (`signoff.approval.spent`), with the
tokens that count here (`verdict`). What it cannot see, and so does not check, is listed in
the threat model (docs/threat-model.md): whether a denial came first, when an escalation was due.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from signoff.approval.authority import allowed_approvers, refusal
from signoff.approval.claims import LEEWAY
from signoff.approval.identity import Identity
from signoff.approval.names import name_key
from signoff.approval.people import Person
from signoff.approval.policy import ApprovalPolicy
from signoff.approval.requests import GrantMatch, ToolApprovalRequest
from signoff.approval.signatures import DecisionClaim, RequesterClaim
from signoff.approval.similar import covers


@dataclass(frozen=True)
class CallToRun:
    """The call the tool activity is about to run, as the server and the call itself say.

    Attributes:
        workflow_id: the calling workflow (the activity's own info: the server's word).
        chain_id: the first run of its continue-as-new chain (the server's description).
        arguments_digest: of the call's arguments as the model asked (what people reviewed).
        run_digest: of the arguments it will run with (edited ones, if any).
        at: when the server scheduled it (grant TTLs are counted up to then).
    """

    workflow_id: str
    chain_id: str
    call_id: str
    tool: str
    arguments_digest: str
    run_digest: str
    at: datetime
    request: str | None = None
    """The request instance the run says it asked the call as (`binding.request`)."""
    arguments: Any = None
    """The arguments it will run with (a `similar` grant's pattern must cover them)."""


@dataclass(frozen=True)
class Counted:
    """A verified token that counts towards a call's quorum, and how it authorises it.

    Attributes:
        claim: the decision it signs.
        grant_use: it approves the call through a grant signed on another call (or another
            request of this one); False: it signs this very call.
    """

    identity: Identity
    claim: DecisionClaim
    grant_use: bool


@dataclass(frozen=True)
class Verdict:
    """Whether the tokens handed with a call authorise it: the ones that count (one per
    subject), and why they are not enough (None: they are)."""

    counted: tuple[Counted, ...]
    problem: str | None


def why_not(claim: DecisionClaim, identity: Identity, call: CallToRun) -> str | None:
    """Why one verified token is no approval of `call`, or None when it is one."""
    if (claim.workflow_id, claim.chain_id) != (call.workflow_id, call.chain_id):
        return f"{identity.subject}'s token is signed for another run ({claim.workflow_id}, chain {claim.chain_id})"
    if not claim.approved:
        return f"{identity.subject}'s token signs a denial"
    if claim.tool != call.tool:
        return f"{identity.subject}'s token is signed for tool {claim.tool!r}"
    approved = claim.edited_arguments_digest or claim.arguments_digest
    if signs_this_call(claim, call):
        return None if approved == call.run_digest else f"{identity.subject} approved other arguments than will run"
    grant = claim.grant
    if grant is None and (claim.call_id, claim.arguments_digest) == (call.call_id, call.arguments_digest):
        return (
            f"{identity.subject}'s token is signed for another request of call {claim.call_id!r} "
            f"(request {claim.request!r}, not {call.request!r}: the call was asked again), and grants nothing"
        )
    if grant is None:
        return (
            f"{identity.subject}'s token is signed for call {claim.call_id!r} with other arguments, and grants nothing"
        )
    if call.run_digest != call.arguments_digest:
        return "a grant approves a call as the model asked it, not edited"
    if grant.match is GrantMatch.ARGUMENTS and approved != call.arguments_digest:
        return f"{identity.subject}'s grant covers other arguments"
    if grant.match is GrantMatch.SIMILAR and not (grant.pattern and covers(grant.pattern, call.tool, call.arguments)):
        return f"{identity.subject}'s similar grant ({grant.pattern!r}) does not cover these arguments"
    if grant.ttl_seconds is not None:
        if identity.issued_at is None:
            return (
                f"{identity.subject}'s grant token does not say when it was signed (iat), so its TTL cannot be counted"
            )
        if call.at > identity.issued_at + timedelta(seconds=grant.ttl_seconds) + LEEWAY:
            return f"{identity.subject}'s grant expired ({grant.ttl_seconds:g} s after it was signed)"
    return None


def signs_this_call(claim: DecisionClaim, call: CallToRun) -> bool:
    """Whether `claim` decides `call` itself (its id, digest and request instance), rather
    than approving it through a grant made on another."""
    return (claim.call_id, claim.arguments_digest, claim.request) == (call.call_id, call.arguments_digest, call.request)


def requester_of(requester: Identity | None, call: CallToRun) -> str | None:
    """The requester's subject, if their token is bound to this workflow id."""
    claim = requester.claim if requester else None
    if requester is None or not isinstance(claim, RequesterClaim) or claim.workflow_id != call.workflow_id:
        return None
    return requester.subject


def sign_off_problem(
    policy: ApprovalPolicy,
    call: CallToRun,
    approvals: Sequence[Identity],
    requester: Identity | None,
    refused: Sequence[str] = (),
) -> str | None:
    """Why the verified tokens do not authorise `call` under the worker's `policy`, or None
    (`verdict`'s problem)."""
    return verdict(policy, call, approvals, requester, refused).problem


def verdict(
    policy: ApprovalPolicy,
    call: CallToRun,
    approvals: Sequence[Identity],
    requester: Identity | None,
    refused: Sequence[str] = (),
) -> Verdict:
    """Which verified tokens count towards `call`'s quorum under the worker's `policy` (the
    first of each subject), and why they are not enough, if they are not.

    Args:
        approvals: the tokens handed with the call, as verified with the worker's keys.
        requester: the run's requester token, verified, if it had one.
        refused: why other tokens handed with the call did not verify (for the message).
    """
    requested_by = requester_of(requester, call)
    if policy.separate_requester and requested_by is None:
        return Verdict(
            (), "separate_requester needs the run's requester token, bound to this workflow id, and there is none"
        )
    counted: dict[str, Counted] = {}
    problems = list(refused)
    everyone = policy.model_copy(update={"approvers": allowed_approvers(policy, escalated=True)})
    for identity in approvals:
        claim = identity.claim
        problem = (
            why_not(claim, identity, call)
            if isinstance(claim, DecisionClaim)
            else (f"{identity.subject}'s token signs no decision")
        )
        problem = problem or _refused(everyone, call, identity.person(), requested_by)
        grant_use = isinstance(claim, DecisionClaim) and not signs_this_call(claim, call)
        if problem is None and grant_use and not policy.grants:
            problem = f"{identity.subject}'s token approves it through a grant, and {call.tool} takes no grants here"
        if problem is not None:
            problems.append(problem)
        else:
            assert isinstance(claim, DecisionClaim)
            counted.setdefault(name_key(identity.subject), Counted(identity, claim, not signs_this_call(claim, call)))
    if len(counted) >= policy.quorum:
        return Verdict(tuple(counted.values()), None)
    return Verdict(tuple(counted.values()), short_of(policy.quorum, counted.values(), problems))


def short_of(quorum: int, counted: Iterable[Counted], problems: Sequence[str]) -> str:
    """`1 of 2 signed approval(s) (alice); <why the others did not count>`."""
    names = [c.identity.subject for c in counted]
    have = f"{len(names)} of {quorum} signed approval(s)" + (f" ({', '.join(names)})" if names else "")
    return f"{have}; " + ("; ".join(problems) if problems else "no signed decision was handed with it")


def _refused(policy: ApprovalPolicy, call: CallToRun, person: Person, requested_by: str | None) -> str | None:
    """What `authority.refusal` says of this subject under the worker's policy."""
    request = ToolApprovalRequest(call_id=call.call_id, name=call.tool, policy=policy)
    return refusal(request, person, requested_by)


__all__ = [
    "CallToRun",
    "Counted",
    "Verdict",
    "requester_of",
    "short_of",
    "sign_off_problem",
    "signs_this_call",
    "verdict",
    "why_not",
]
