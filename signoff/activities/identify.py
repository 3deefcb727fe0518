"""Who a token vouches for (`signoff.identify`, a local activity).

Tokens are verified worker-side, against the keys the worker holds, and the answer —
the subject and groups, or why the token was refused — is recorded in the run's
history. A replay reads that answer instead of verifying again, so it reaches the same
outcome after the keys have rotated.
"""

from __future__ import annotations

from signoff.activities.models import IdentifyInput, IdentifyOutput
from signoff.approval.identity import NO_KEYS, Verifier
from signoff.errors import SignoffError


def identify(verifier: Verifier | None, input: IdentifyInput) -> IdentifyOutput:
    if verifier is None:
        return IdentifyOutput(error=NO_KEYS, signed_decisions=True)
    try:
        identity = verifier.verify(input.token)
    except SignoffError as exc:
        return IdentifyOutput(error=str(exc), signed_decisions=True)
    return IdentifyOutput(
        subject=identity.subject, groups=list(identity.groups), claim=identity.claim, signed_decisions=True
    )
