"""Does an audit trail hold? Its own hash chain, and agreement with the workflow history.

Pure: `check_chain` recomputes the trail's digests and hashes (`signoff.audit`);
`check_against_history` holds the trail up to what the history recorded as it went
(`cli.history`): every approved call that ran must have a record with the hash its
approval proof names, of that call, whose `call_digest` is the tool and arguments that
ran; and the trail's records must equal those the history states (the result's, the
ones carried across continue-as-new). A trail edited and re-hashed still verifies as
a chain, but no longer agrees with the history.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from signoff.approvals import ApprovalRecord, parse_arguments
from signoff.audit import GENESIS, chained_content, is_elided, verify_chain
from signoff.cli.history import RunEvidence
from signoff.digest import call_digest


def check_chain(records: Sequence[ApprovalRecord], head: str | None) -> list[str]:
    """Problems of the chain itself (empty: it holds)."""
    problems = verify_chain(records)
    expected = records[-1].hash if records else GENESIS
    if head and head != expected:
        problems.append(f"the trail's head {head} is not its last record's hash {expected}")
    return problems


def check_against_history(records: Sequence[ApprovalRecord], chain: Sequence[RunEvidence]) -> tuple[list[str], int]:
    """Problems found, and how many approved tool calls of the history were checked."""
    problems: list[str] = []
    by_hash = {record.hash: (index, record) for index, record in reversed(list(enumerate(records)))}
    checked = 0
    for run in chain:
        for ran in run.ran:
            if ran.approval is not None:
                checked += 1
                problems += _proof_problems(ran.call.id, ran.call.name, ran.call.arguments, ran.approval, by_hash,
                                            run.run_id)  # fmt: skip
    problems += _stated_problems(records, chain)
    return problems, checked


def _proof_problems(call_id: str, tool: str, arguments: str, proof: Any,
                    by_hash: dict[str, tuple[int, ApprovalRecord]], run_id: str) -> list[str]:
    where = f"call {call_id!r} ({tool}) ran in run {run_id}"
    found = by_hash.get(proof.record_hash)
    if found is None:
        return [f"{where} under audit record {proof.record_hash}, which the trail does not have"]
    index, record = found
    problems = []
    if record.call_id != call_id or proof.call_id != call_id:
        problems.append(f"{where}, but its audit record {index} is of call {record.call_id!r}")
    if not record.approved:
        problems.append(f"{where}, but its audit record {index} says it was not approved")
    if record.arguments_digest != proof.arguments_digest:
        problems.append(f"{where}, but its audit record {index} names other arguments than were approved")
    if record.call_digest != call_digest(tool, parse_arguments(arguments)):
        problems.append(f"{where}, but its audit record {index} does not match the tool and arguments that ran")
    return problems


def _stated_problems(records: Sequence[ApprovalRecord], chain: Sequence[RunEvidence]) -> list[str]:
    stated = max((run.records for run in chain if run.records is not None), key=len, default=[])
    problems = []
    for index, (mine, theirs) in enumerate(zip(records, stated, strict=False)):  # lengths checked below
        if differing := differences(mine, theirs):
            problems.append(f"record {index} ({mine.call_id}) differs from the history in: {', '.join(differing)}")
    completed = bool(chain) and chain[-1].records is not None
    if len(records) < len(stated) or (completed and len(records) != len(stated)):
        problems.append(f"the trail has {len(records)} record(s); the history has {len(stated)}")
    return problems


def differences(mine: ApprovalRecord, theirs: ApprovalRecord) -> list[str]:
    """Fields in which two records of the same place in the chain differ (arguments only
    when both still carry them: old records may have shed theirs)."""
    a, b = chained_content(mine), chained_content(theirs)
    fields = [key for key in a if a[key] != b.get(key)] + (["hash"] if mine.hash != theirs.hash else [])
    for key in ("arguments", "edited_arguments"):
        left, right = getattr(mine, key), getattr(theirs, key)
        if not (is_elided(left) or is_elided(right)) and left != right:
            fields.append(key)
    return fields

