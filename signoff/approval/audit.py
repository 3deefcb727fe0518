"""The tamper-evident audit trail: each record is hashed and chained to the one before.

A record's `hash` is SHA-256 over the previous record's hash and the record's canonical
content (its digests, not the raw arguments, so old records may shed their arguments
to stay within the run's payload budget and still verify). The chain is carried across
continue-as-new; `verify_chain` recomputes it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from signoff.approval.digest import arguments_digest, call_digest, canonical_json, sha256_hex
from signoff.approval.requests import ApprovalRecord

GENESIS = "0" * 64
"""The `prev` of a run's first record."""

_CHAINED = (
    "call_id",
    "name",
    "approved",
    "reason",
    "approver",
    "requested_at",
    "decided_at",
    "timed_out",
    "outcome",
    "verified",
    "grant_id",
    "arguments_digest",
    "call_digest",
    "policy_digest",
)


def chained_content(record: ApprovalRecord) -> dict[str, Any]:
    """The fields the hash covers, as JSON values."""
    data = record.model_dump(mode="json", include=set(_CHAINED))
    data["votes"] = [vote.approver for vote in record.votes]
    for name in (
        "respond_digest",
        "delegate",
        "answer_digest",
        "state_digest",
    ):  # only when set: records from before keep their hashes
        if getattr(record, name) is not None:
            data[name] = getattr(record, name)
    return data


def record_hash(prev: str, record: ApprovalRecord) -> str:
    return sha256_hex(prev + canonical_json(chained_content(record)))


def chain_record(record: ApprovalRecord, prev: str) -> ApprovalRecord:
    """The record with its digests and chain hash filled in."""
    ran = record.edited_arguments if record.edited_arguments is not None else record.arguments
    record.arguments_digest = record.arguments_digest or arguments_digest(record.arguments)
    record.call_digest = call_digest(record.name, ran)
    record.hash = record_hash(prev, record)
    return record


def verify_chain(records: Sequence[ApprovalRecord], prev: str = GENESIS) -> list[str]:
    """Problems found (empty: the chain holds). Each record's digests are recomputed
    from its arguments when it still carries them, and every hash from its content."""
    problems = []
    for index, record in enumerate(records):
        where = f"record {index} ({record.call_id})"
        if not is_elided(record.arguments):
            if arguments_digest(record.arguments) != record.arguments_digest:
                problems.append(f"{where}: arguments do not match arguments_digest")
            ran = record.edited_arguments if record.edited_arguments is not None else record.arguments
            if call_digest(record.name, ran) != record.call_digest:
                problems.append(f"{where}: tool and arguments do not match call_digest")
        if record_hash(prev, record) != record.hash:
            problems.append(f"{where}: hash does not match its content and the record before")
        prev = record.hash
    return problems


def elide_old_arguments(records: list[ApprovalRecord], budget: int) -> None:
    """Drop the arguments of the oldest records (their digests stay) until the trail's
    arguments fit in `budget` bytes of JSON; the newest record always keeps them."""
    sizes = [_size(r) for r in records]
    total = sum(sizes)
    for index, record in enumerate(records[:-1]):
        if total <= budget:
            return
        if sizes[index] and not is_elided(record.arguments):
            record.arguments = {"elided": f"{sizes[index]} bytes", "digest": record.arguments_digest}
            record.edited_arguments = None if record.edited_arguments is None else {"elided": True}
            total -= sizes[index]


def _size(record: ApprovalRecord) -> int:
    return len(json.dumps(record.arguments, default=str)) + len(json.dumps(record.edited_arguments, default=str))


def is_elided(arguments: Any) -> bool:
    """Whether a record's arguments (or edited arguments) were dropped by `elide_old_arguments`."""
    return isinstance(arguments, dict) and (set(arguments) == {"elided", "digest"} or arguments == {"elided": True})
