"""Who decides, and who asked for the run: names claimed, or vouched for by a token.

A decision without a token names who sent it (`approver`), trusted only as far as its
call's policy lets an unverified name decide. A token is verified worker-side by the
`signoff.identify` local activity, whose answer (who, their groups, what the token signs)
is recorded in history, so a replay after the keys rotated reaches the same outcome.
A signed decision that an update's validator already verified (`runtime/tokens.py`) is
read from the token itself, which is deterministic: a replay reads the same. Whether a
token signs *this* decision is the loop's to check.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ApplicationError

from signoff.activities import AgentActivities
from signoff.activities.models import IdentifyInput, IdentifyOutput, Requester
from signoff.approval.authority import Decider
from signoff.approval.identity import is_bound, read_verified
from signoff.approval.names import same_name
from signoff.approval.signatures import DelegationClaim, RequesterClaim, mismatch, requester_claim
from signoff.loop.agent_loop import AgentLoop
from signoff.workflows.refusal import INVALID_INPUT, Refusal, token_rejected, unverified

IDENTIFY_TIMEOUT = timedelta(seconds=10)


async def decider(
    loop: AgentLoop, token: str | None, claimed: str | None, validated: bool = False, delegation: str | None = None
) -> Decider:
    """Who decides: a claimed name, a signed decision an update's validator verified
    (`validated`, read from the token), or a token verified now (`signoff.identify`); with
    a `delegation`, the delegator, for whom the token's subject decides.

    Raises:
        ApplicationError: `Unverified`, the token was refused or names someone else, or
            the delegation was refused or is not to the token's subject.
    """
    if token is None:
        return Decider.claimed(claimed)
    if validated and is_bound(token):
        sender = _signed_by(loop, token, claimed)
    else:
        sender = await verify_token(loop, token, claimed, "approver")
    if isinstance(sender.claim, DelegationClaim):
        raise unverified("a delegation token vouches for nobody's decision: send it as 'delegation'")
    return sender if delegation is None else await _delegated(loop, sender, delegation)


async def _delegated(loop: AgentLoop, sender: Decider, delegation: str) -> Decider:
    """The delegator, for whom `sender` decides under `delegation` (verified now, recorded)."""
    grantor = await verify_token(loop, delegation, None, "delegation")
    scope = grantor.claim
    if not isinstance(scope, DelegationClaim):
        raise unverified("the delegation token signs no delegation (make one with `signoff delegate`)")
    if not same_name(scope.delegate, sender.person.name):
        raise unverified(f"the delegation is to {scope.delegate!r}, not to {sender.person.name!r}")
    if same_name(grantor.person.name, sender.person.name):
        raise unverified("a delegation to oneself counts for nothing")
    person = grantor.person
    return Decider(person, sender.claim, sender.token, sender.person.name, scope, delegation)


async def requester(loop: AgentLoop, token: str, claimed: str | None) -> Requester:
    """Who asked for the run, from their token; one signed for anything but asking for
    this workflow id fails the start (a `Refusal`). Records the name in the loop's state."""
    try:
        who = await verify_token(loop, token, claimed, "requester")
    except ApplicationError as exc:
        raise Refusal(f"invalid input: {exc.message}", INVALID_INPUT) from None
    wanted = requester_claim(workflow.info().workflow_id)
    if who.claim is not None and (problem := mismatch(who.claim, wanted)) is not None:
        raise Refusal(f"invalid input: requester_token: {problem}", INVALID_INPUT)
    bound = isinstance(who.claim, RequesterClaim)
    loop.state.requested_by = who.person.name
    return Requester.of(who.person, bound=bound)


async def verify_token(loop: AgentLoop, token: str, claimed: str | None, purpose: str) -> Decider:
    """Verify a token worker-side (recorded in history); ApplicationError says why it failed.

    The answer also says whether verified decisions must be signed: always, from a v3
    worker; a history v2 recorded says nothing of it, so its run replays as it ran (and
    its tool calls still run only with signatures)."""
    out: IdentifyOutput = await workflow.execute_local_activity_method(
        AgentActivities.identify,
        IdentifyInput(token=token),
        start_to_close_timeout=IDENTIFY_TIMEOUT,
        summary=f"verify {purpose} token",
    )
    loop.state.signed_decisions |= out.signed_decisions
    person = out.person()
    if person is None:
        raise token_rejected(purpose, out.error)
    if claimed and not same_name(claimed, person.name):
        raise unverified(f"{purpose} {claimed!r} does not match the token's subject {person.name!r}")
    return Decider(person, out.claim, token)


def _signed_by(loop: AgentLoop, token: str, claimed: str | None) -> Decider:
    """Who signed a decision the update's validator verified, read from the token itself."""
    identity = read_verified(token)
    if claimed and not same_name(claimed, identity.subject):
        raise unverified(f"approver {claimed!r} does not match the token's subject {identity.subject!r}")
    loop.state.signed_decisions = True
    return Decider(identity.person(), identity.claim, token)
