"""Who is deciding, and whether a policy lets them: pure rules, no I/O.

A `Decider` is what the run knows of whoever sent a decision: the `Person`
(`signoff.approval.people`: a name that was only claimed, on the plain path of the
Temporal UI, CLI or JSON, or a subject and groups a verified token vouched for), and the
token with what it signs (its `signoff` claim). The driver verifies tokens (worker-side,
recorded in history) and hands the loop a `Decider`; the rules here read the
verification's answer, never a signature. Who may decide is a rule over the person
alone (`refusal`, `vote_problem`), so the inbox and the tool activity ask it too. Names
are compared as `signoff.approval.names` says (NFKC, case folded): `Alice` and `alice`
are one approver.

Under a `verified` policy a decision counts only with a token signed for exactly that
decision (`signoff.approval.signatures`); the tool activity checks the same tokens again before
the call runs (`signoff.approval.evidence`), since nothing the workflow remembers is evidence.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from signoff.approval.auto import is_auto_name
from signoff.approval.digest import arguments_digest
from signoff.approval.names import group_of, is_group_entry, name_key, same_name
from signoff.approval.people import Person
from signoff.approval.policy import ApprovalPolicy, DecisionKind
from signoff.approval.requests import Grant, GrantMatch, ToolApprovalRequest, ToolApprovalResponse, Vote
from signoff.approval.signatures import (
    SIGN_HELP,
    DelegationClaim,
    SignoffClaim,
    decision_claim,
    extension_claim,
    mismatch,
)
from signoff.approval.similar import covers


@dataclass(frozen=True)
class Decider:
    """Who sent a decision: the person, and the token that vouched for them (if any).

    Attributes:
        person: the verified subject and groups, or the claimed `approver` (`Person.claimed`).
        claim: what the verified token signs (None: a plain identity token, or none).
        token: the verified token itself, kept as the call's evidence for the tool activity.
    """

    person: Person = field(default_factory=Person)
    claim: SignoffClaim | None = None
    token: str | None = field(default=None, repr=False)
    delegate: str | None = None
    """Who sent it for `person`, under their signed delegation (None: `person` did)."""
    delegation: DelegationClaim | None = None
    """What that delegation allows (tools), as verified."""
    delegation_token: str | None = field(default=None, repr=False)

    @classmethod
    def claimed(cls, approver: str | None) -> Decider:
        """Someone who only gave a name: no token, no groups."""
        return cls(Person.claimed(approver))


@dataclass(frozen=True)
class Decision:
    """A response and who sent it."""

    response: ToolApprovalResponse
    decider: Decider = field(default_factory=Decider)

    @classmethod
    def of(cls, item: ToolApprovalResponse | Decision) -> Decision:
        if isinstance(item, Decision):
            return item
        return cls(item, Decider.claimed(item.approver))


def allowed_approvers(policy: ApprovalPolicy, escalated: bool) -> tuple[str, ...]:
    """The approvers of a call: the policy's, plus `escalate_to` once escalated."""
    return policy.approvers + (policy.escalate_to if escalated and policy.approvers else ())


def refusal(request: ToolApprovalRequest, person: Person, requested_by: str | None) -> str | None:
    """Why `person` may not decide this call under its policy, or None if they may."""
    policy, call = request.policy, f"call {request.call_id!r} ({request.name})"
    if policy.verified and not person.verified:
        return f"{call} needs a verified approver: {SIGN_HELP}"
    if policy.separate_requester and same_name(person.name, requested_by):
        return f"{call}: {requested_by!r} requested this run and may not decide its calls (separate_requester)"
    approvers = allowed_approvers(policy, request.escalated)
    if approvers and not _listed(person, approvers):
        who = repr(person.name) if person.name else "an anonymous approver"
        return f"{call}: {who} is not among its approvers ({', '.join(approvers)})"
    return None


def _listed(person: Person, approvers: tuple[str, ...]) -> bool:
    """Whether `approvers` names the person, or (verified) one of their groups. A group entry
    never matches a name, so a claimed `group:ops` is no member of `group:ops`."""
    names = {name_key(a) for a in approvers if not is_group_entry(a)}
    if person.name is not None and name_key(person.name) in names:
        return True
    groups = {group_of(a) for a in approvers if is_group_entry(a)}
    return person.verified and any(name_key(group) in groups for group in person.groups)


def signature_problem(
    request: ToolApprovalRequest, response: ToolApprovalResponse, claim: SignoffClaim | None
) -> str | None:
    """Under a verified policy: why a token signing `claim` does not sign this decision on
    this call (its `binding`, the answer, edited arguments, grant), or None when it does."""
    if not request.policy.verified or request.binding is None:
        return None
    return _signed(request, mismatch(claim, decision_claim(request.binding, response)))


def extension_problem(request: ToolApprovalRequest, seconds: float, claim: SignoffClaim | None) -> str | None:
    """Under a verified policy: why a token signing `claim` does not sign moving this call's
    deadline by `seconds`, or None when it does."""
    if not request.policy.verified or request.binding is None:
        return None
    return _signed(request, mismatch(claim, extension_claim(request.binding, seconds)))


def _signed(request: ToolApprovalRequest, problem: str | None) -> str | None:
    return f"call {request.call_id!r} ({request.name}): {problem}" if problem else None


def delegation_problem(request: ToolApprovalRequest, decider: Decider, requested_by: str | None) -> str | None:
    """Why a decision sent under a delegation may not count as the delegator's, or None."""
    scope = decider.delegation
    if decider.delegate is None or scope is None:
        return None
    call = f"call {request.call_id!r} ({request.name})"
    if not scope.covers(request.name):
        tools = ", ".join(scope.tools or ())
        return f"{call}: {decider.person.name!r}'s delegation to {decider.delegate!r} covers only {tools}"
    if request.policy.separate_requester and same_name(decider.delegate, requested_by):
        return (
            f"{call}: {requested_by!r} requested this run and may not decide its calls, for anyone (separate_requester)"
        )
    return None


def vote_problem(request: ToolApprovalRequest, person: Person, delegate: str | None = None) -> str | None:
    """Why `person`'s approval (cast by `delegate`, if one) cannot count towards the quorum, or None."""
    if request.policy.quorum <= 1:
        return None
    if person.name is None:
        return f"call {request.call_id!r} needs {request.policy.quorum} distinct approvers: name yourself"
    people = {name_key(n) for v in request.votes for n in (v.approver, v.delegate) if n}
    if delegate is not None and name_key(delegate) in people:
        return f"{delegate!r} already voted on call {request.call_id!r}: a quorum needs distinct people"
    if delegate is None and name_key(person.name) in {name_key(v.delegate) for v in request.votes if v.delegate}:
        return f"{person.name!r} already voted on call {request.call_id!r} for another: a quorum needs distinct people"
    if any(same_name(v.approver, person.name) for v in request.votes):
        missing = request.policy.quorum - len(request.votes)
        return f"{person.name!r} already approved call {request.call_id!r}; {missing} more approval(s) needed"
    return None


def add_vote(
    request: ToolApprovalRequest,
    person: Person,
    now: datetime,
    grant_id: str | None = None,
    delegate: str | None = None,
) -> bool:
    """Count `person`'s approval; True once the quorum is reached."""
    request.votes.append(Vote.by(person, now, grant_id, delegate))
    return len({name_key(v.approver or "") for v in request.votes}) >= request.policy.quorum


def grant_decider(grant: Grant) -> Decider:
    """A grant decides as the approver who granted it, never as anyone more."""
    return Decider(grant.person(), token=grant.token)


def grant_matches(grant: Grant, request: ToolApprovalRequest, now: datetime, *, signed: bool = True) -> bool:
    """Whether a live grant covers this call: its tool, and (an `arguments` grant) the
    arguments that were approved, which are the edited ones when the approval edited them.
    With `signed`, a verified policy's call takes only a grant a signed decision made."""
    if not grant.live(now) or grant.tool != request.name:
        return False
    if signed and request.policy.verified and grant.token is None:
        return False  # nothing to show the tool activity
    if grant.pattern is not None:
        return covers(grant.pattern, request.name, request.arguments)
    return grant.arguments_digest is None or grant.arguments_digest == request.arguments_digest


def grant_problem(request: ToolApprovalRequest, response: ToolApprovalResponse) -> str | None:
    """Why this approval may not make a grant, or None."""
    call = f"call {request.call_id!r} ({request.name})"
    grant = response.grant
    if grant is not None and not request.policy.grants:
        return f"{call}: its tool takes no grants (its policy says grants = false)"
    if grant is None or grant.match is not GrantMatch.SIMILAR:
        return None
    if response.call_id == "*":
        return f"{call}: a similar grant is made for one call at a time, never by a bulk decision (call_id '*')"
    if response.arguments is not None:
        return f"{call}: a similar grant goes with the call as shown, not with edited arguments"
    if request.similar_pattern is None:
        return f"{call}: its arguments have no similar pattern; grant match 'arguments' or 'tool' instead"
    if grant.pattern is not None and grant.pattern != request.similar_pattern:
        return f"{call}: the grant's pattern {grant.pattern!r} is not the one shown ({request.similar_pattern!r})"
    if grant.pattern is None and request.policy.verified:
        return (
            f"{call}: a signed similar grant names the pattern it approves (grant.pattern {request.similar_pattern!r})"
        )
    return None


def approved_digest(request: ToolApprovalRequest, response: ToolApprovalResponse) -> str:
    """The digest of what an approval lets run: its edited arguments, else the call's."""
    return arguments_digest(response.arguments) if response.arguments is not None else request.arguments_digest


def requester_problem(policies: Mapping[str, ApprovalPolicy], verified: bool, bound: bool) -> str | None:
    """Why the run's requester is not known well enough for its tools' policies, or None.

    `separate_requester` means nothing if the requester is only a claimed name (anyone
    could claim someone else's), so it needs a verified `requester_token`; under a
    verified policy the tool activity checks that token itself, so it must be bound to
    this run's workflow id (`signoff.approval.signatures.RequesterClaim`), or a token copied from
    another run's history could name someone else as the requester."""
    separate = sorted(name for name, policy in policies.items() if policy.separate_requester)
    if separate and not verified:
        return (
            f"separate_requester ({', '.join(separate)}) needs a verified requester_token naming who asks for "
            "the run (a requested_by alone is only a claimed name)"
        )
    signed = sorted(name for name in separate if policies[name].verified)
    if signed and not bound:
        return (
            f"separate_requester under a verified policy ({', '.join(signed)}) needs a requester_token bound to "
            'this workflow id (claim "signoff": {"workflow_id": ..., "requester": true}): start the run with '
            "`signoff run` and SIGNOFF_APPROVER_KEY_FILE"
        )
    return None


def decision_kind(response: ToolApprovalResponse) -> DecisionKind:
    """What kind of answer a decision is (`ApprovalPolicy.decisions`)."""
    if response.respond is not None:
        return "respond"
    if not response.approved:
        return "deny"
    return "edit" if response.arguments is not None else "approve"


def kind_problem(request: ToolApprovalRequest, response: ToolApprovalResponse) -> str | None:
    """Why the call's policy takes no answer of this kind, or None."""
    kind = decision_kind(response)
    if request.policy.allows(kind):
        return None
    call = f"call {request.call_id!r} ({request.name})"
    if kind == "respond" and request.policy.decisions is None:
        return f"{call}: its policy does not let a person answer it instead of running it (respond = false)"
    taken = ", ".join(k for k in ("approve", "deny", "edit", "respond") if request.policy.allows(k))
    return f"{call}: its policy takes no {kind!r} answer (decisions: {taken or 'none'})"


def respond_problem(request: ToolApprovalRequest, response: ToolApprovalResponse) -> str | None:
    """Why this decision may not answer the call instead of running it (`respond`), or None."""
    if response.respond is None:
        return None
    call = f"call {request.call_id!r} ({request.name})"
    if request.policy.quorum > 1:
        return f"{call} needs {request.policy.quorum} approvers: one person cannot answer it instead"
    return None


def edit_problem(request: ToolApprovalRequest, response: ToolApprovalResponse) -> str | None:
    """Edited arguments change what others approved: only for a single approver's call."""
    if response.arguments is not None and request.policy.quorum > 1:
        return f"call {request.call_id!r} needs {request.policy.quorum} approvers: it cannot run edited arguments"
    return None


def review_problem(request: ToolApprovalRequest, person: Person, now: datetime) -> str | None:
    """Why a person's approval comes too soon after the call was asked (`min_review_seconds`),
    or None. Auto mode's evaluator is no person to look again; grants never come here."""
    least = request.policy.min_review_seconds
    if not least or request.requested_at is None or is_auto_name(person.name):
        return None
    took = (now - request.requested_at).total_seconds()
    if took >= least:
        return None
    return (
        f"call {request.call_id!r} ({request.name}) was approved {took:.1f}s after it was asked; its policy asks for "
        f"a second look (min_review_seconds = {least:g}): review it again and send the approval after "
        f"{least - took:.1f}s more"
    )
