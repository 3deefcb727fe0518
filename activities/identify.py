"""Who a token vouches for (`signoff.identify`, a local activity).

Tokens are verified worker-side, against the keys the worker holds, and the answer —
the subject and groups, or why the token was refused — is recorded in the run's
history. A replay reads that answer instead of verifying again, so it reaches the same
outcome after the keys have rotated.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from signoff.activities.models import IdentifyInput, IdentifyOutput
from signoff.errors import SignoffError


class Identified(Protocol):
    subject: str
    groups: Sequence[str]


class Verifier(Protocol):
    def verify(self, token: str) -> Identified: ...


def identify(verifier: Verifier | None, input: IdentifyInput) -> IdentifyOutput:
    if verifier is None:
        return IdentifyOutput(error="this worker has no approver keys to verify tokens (set SIGNOFF_APPROVER_KEYS)")
    try:
        identity = verifier.verify(input.token)
    except SignoffError as exc:
        return IdentifyOutput(error=str(exc))
    return IdentifyOutput(subject=identity.subject, groups=list(identity.groups))
