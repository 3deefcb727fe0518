"""A signature is spent once: where a verified approval is recorded as honoured, and by whom.

A signed approval authorises one execution of one request instance (CONTRACT v4). The tool
activity cannot tell from the run whether it ran before: a reset run replays the same
decision, a forged history can schedule the call twice with the same tokens. So before a
gated call runs under a `verified` policy, the activity spends each signature that counts
for it in a record the server keeps, whose *workflow id* is derived from the signature
(`record_id`): starting a workflow with an id the namespace already holds fails, and no
worker, history or reset can change which execution claimed it first. The record holds
who honoured it (`Honouring`: the activity execution), so a retry of that same execution
goes on and anything else is refused.

A record is per subject and per *request* (the claim's binding: workflow, chain, call, tool,
arguments digest, request instance), never per token string: two tokens of one person for
one request (signed twice, or a JWS re-encoded) spend the same record. A grant with
`max_uses` spends one of `max_uses` records per call it approves (`grant_slot_id`), so at
most that many distinct executions run under it; a grant without `max_uses` needs none.

Records are bounded in time: a signature is honoured at most `max_age` after it was signed
(its `iat`), and its record outlives that (`record_timeout`), so a token that could still be
honoured always meets its record. Pure: ids, identities, messages; the server side is
`signoff.activities.spent`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta

from signoff.approval.digest import canonical_json, sha256_hex
from signoff.approval.evidence import Counted
from signoff.approval.names import name_key
from signoff.approval.requests import Binding

RECORD_PREFIX = "signoff-spent-"
RECORD_TYPE = "SignoffSpentSignature"
"""The workflow type of the records (filter them out in the Web UI: `WorkflowType != "..."`)."""
RECORD_QUEUE = "signoff-spent-signatures"
"""A task queue no worker serves: a record never runs (its first task is delayed past its end)."""
DEFAULT_MAX_AGE = timedelta(hours=24)
"""How long after it was signed a signature is honoured (`SIGNOFF_SIGNATURE_MAX_AGE`)."""
RETENTION_MARGIN = timedelta(hours=1)
"""A signature's honoured life stays this much inside the namespace's retention: a record
someone terminated is kept that long after it closed, and so outlives every token it spends."""


@dataclass(frozen=True)
class Honouring:
    """The activity execution that honours a signature: its run and activity id, and when the
    server scheduled it (the same for every retry of that execution; an activity id scheduled
    again later in the same run is another execution)."""

    workflow_id: str
    run_id: str
    activity_id: str
    scheduled_time: str

    def text(self) -> str:
        """The record's input: this identity as JSON."""
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))

    @classmethod
    def read(cls, text: bytes | str) -> Honouring | None:
        """The identity a record holds (None: it holds something else, so it is nobody's)."""
        try:
            data = json.loads(text)
            return cls(**{k: str(data[k]) for k in ("workflow_id", "run_id", "activity_id", "scheduled_time")})
        except (ValueError, TypeError, KeyError):
            return None

    def describe(self) -> str:
        return f"activity {self.activity_id} of run {self.workflow_id}/{self.run_id}, scheduled {self.scheduled_time}"


def _request_key(kind: str, counted: Counted) -> str:
    """The digest that names what `counted` spends: its subject and the request it signs."""
    binding = Binding.model_validate(counted.claim.model_dump(include=set(Binding.model_fields)))
    named = {"kind": kind, "subject": name_key(counted.identity.subject), "binding": binding.model_dump(mode="json")}
    return sha256_hex(canonical_json(named))


def record_id(counted: Counted) -> str:
    """The id of the record that spends a signature on the call it signs (one execution)."""
    return RECORD_PREFIX + _request_key("approval", counted)


def grant_slot_id(counted: Counted, slot: int) -> str:
    """The id of use `slot` (1 to `max_uses`) of a grant, under which one execution runs."""
    return f"{RECORD_PREFIX}{_request_key('grant', counted)}-{slot}"


def needs_record(counted: Counted) -> bool:
    """Whether honouring `counted` spends a record: a signed call does, a grant use only when
    the grant has `max_uses` (one without authorises any number within its TTL)."""
    grant = counted.claim.grant
    return not counted.grant_use or (grant is not None and grant.max_uses is not None)


def age_problem(counted: Counted, now: datetime, max_age: timedelta) -> str | None:
    """Why `counted` is too old to be honoured at `now` (None: it is not)."""
    who, issued = counted.identity.subject, counted.identity.issued_at
    if issued is None:
        return f"{who}'s signed approval does not say when it was signed (iat), so it cannot be spent once"
    if now > issued + max_age:
        return (
            f"{who}'s signed approval was signed at {issued.isoformat()}, more than {_hours(max_age)} ago: "
            "a signature is honoured only that long after it was signed (SIGNOFF_SIGNATURE_MAX_AGE); "
            "ask for the call again"
        )
    return None


def record_timeout(max_age: timedelta) -> timedelta:
    """How long a record runs: past the last moment any signature it spends could be honoured."""
    return max_age + RETENTION_MARGIN


def effective_max_age(configured: timedelta, retention: timedelta | None) -> timedelta:
    """`configured`, kept within the namespace's retention (less a margin): a record that was
    closed early (terminated) is deleted `retention` after it closed, and must outlive every
    signature it spends."""
    if retention is None or retention <= timedelta(0):
        return configured
    return min(configured, max(retention - RETENTION_MARGIN, timedelta(minutes=1)))


def spent_elsewhere(counted: Counted, other: Honouring | None, slots: int | None = None) -> str:
    """The refusal for a signature already honoured by another execution."""
    who = counted.identity.subject
    if slots is not None:
        return f"{who}'s grant (max_uses {slots}) is used up: {slots} call(s) already ran under it"
    by = other.describe() if other else "a record signoff did not write"
    return f"{who}'s signed approval of this call was already honoured ({by}): a signature runs a call once"


def _hours(duration: timedelta) -> str:
    seconds = duration.total_seconds()
    return f"{seconds / 3600:g} h" if seconds >= 3600 else f"{seconds:g} s"


__all__ = [
    "DEFAULT_MAX_AGE",
    "RECORD_PREFIX",
    "RECORD_QUEUE",
    "RECORD_TYPE",
    "RETENTION_MARGIN",
    "Honouring",
    "age_problem",
    "effective_max_age",
    "grant_slot_id",
    "needs_record",
    "record_id",
    "record_timeout",
    "spent_elsewhere",
]
