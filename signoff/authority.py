"""Who is deciding, and whether a policy lets them: pure rules, no I/O.

A `Decider` is what the run knows of whoever sent a decision: a name that was only
claimed (the plain path: Temporal UI, CLI, JSON), or a subject and groups that a
verified token vouched for. The driver verifies tokens (worker-side, recorded in
history) and hands the loop a `Decider`; the rules here never see a token.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from signoff.approvals import Grant, ToolApprovalRequest, ToolApprovalResponse, Vote
from signoff.policy import GROUP_PREFIX, ApprovalPolicy


@dataclass(frozen=True)
class Decider:
    """Who sent a decision.

    Attributes:
        name: the verified subject, or the claimed `approver` (None if anonymous).
        groups: groups from a verified token (claimed groups are never trusted).
        verified: whether a token vouched for `name`.
    """

    name: str | None = None
    groups: tuple[str, ...] = ()
    verified: bool = False

    @classmethod
    def claimed(cls, approver: str | None) -> Decider:
        return cls(name=approver or None)


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


def refusal(request: ToolApprovalRequest, decider: Decider, requested_by: str | None) -> str | None:
    """Why `decider` may not decide this call under its policy, or None if they may."""
    policy, call = request.policy, f"call {request.call_id!r} ({request.name})"
    if policy.verified and not decider.verified:
        return f"{call} needs a verified approver: send a valid token (SIGNOFF_APPROVER_TOKEN or --token)"
    if policy.separate_requester and requested_by and decider.name == requested_by:
        return f"{call}: {requested_by!r} requested this run and may not decide its calls (separate_requester)"
    approvers = allowed_approvers(policy, request.escalated)
    if approvers and not _listed(decider, approvers):
        who = repr(decider.name) if decider.name else "an anonymous approver"
        return f"{call}: {who} is not among its approvers ({', '.join(approvers)})"
    return None


def _listed(decider: Decider, approvers: tuple[str, ...]) -> bool:
    if decider.name is not None and decider.name in approvers:
        return True
    return decider.verified and any(GROUP_PREFIX + group in approvers for group in decider.groups)


def vote_problem(request: ToolApprovalRequest, decider: Decider) -> str | None:
    """Why this approval cannot count towards the quorum, or None."""
    if request.policy.quorum <= 1:
        return None
    if decider.name is None:
        return f"call {request.call_id!r} needs {request.policy.quorum} distinct approvers: name yourself"
    if any(v.approver == decider.name for v in request.votes):
        missing = request.policy.quorum - len(request.votes)
        return f"{decider.name!r} already approved call {request.call_id!r}; {missing} more approval(s) needed"
    return None


def add_vote(request: ToolApprovalRequest, decider: Decider, now: datetime, grant_id: str | None = None) -> bool:
    """Count an approval; True once the quorum is reached."""
    request.votes.append(Vote(approver=decider.name, verified=decider.verified, at=now, grant_id=grant_id))
    return len({v.approver for v in request.votes}) >= request.policy.quorum


def grant_decider(grant: Grant) -> Decider:
    """A grant decides as the approver who granted it, never as anyone more."""
    return Decider(name=grant.approver, groups=grant.groups, verified=grant.verified)


def grant_matches(grant: Grant, request: ToolApprovalRequest, now: datetime) -> bool:
    if not grant.live(now) or grant.tool != request.name:
        return False
    return grant.arguments_digest is None or grant.arguments_digest == request.arguments_digest


def edit_problem(request: ToolApprovalRequest, response: ToolApprovalResponse) -> str | None:
    """Edited arguments change what others approved: only for a single approver's call."""
    if response.arguments is not None and request.policy.quorum > 1:
        return f"call {request.call_id!r} needs {request.policy.quorum} approvers: it cannot run edited arguments"
    return None
