"""Does an audit trail hold? Its own hash chain, agreement with the workflow history, signatures.

`check_chain` recomputes the trail's digests and hashes (`signoff.approval.audit`);
`check_against_history` holds the trail up to what the history recorded as it went
(`cli.history`): every approved call that ran must have a record with the hash its
approval proof names, of that call, whose `call_digest` is the tool and arguments that
ran; and the trail's records must equal those the history states (the result's, the
ones carried across continue-as-new). A trail edited and re-hashed still verifies as
a chain, but no longer agrees with the history.

None of that is evidence: whoever writes the history (a forged workflow) can write records
that agree with it, hashes and all. `check_signatures` is what vouches for a person: every
record (or vote) that says its approver was verified must be backed by a token sent with a
decision in this chain's history that verifies with the workers' keys and signs exactly that
decision (or the grant it used); and the chain must have begun as an `AgentRun`, not as a
workflow that continued into one. What it cannot prove (no keys, v2's plain tokens) it says
is not verifiable, never that it holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from signoff.approval.audit import GENESIS, chained_content, is_elided, verify_chain
from signoff.approval.digest import arguments_digest, call_digest
from signoff.approval.identity import ApproverKeys, Identity
from signoff.approval.names import same_name
from signoff.approval.requests import ApprovalRecord, GrantMatch, parse_arguments
from signoff.approval.signatures import DecisionClaim
from signoff.cli.history import RunEvidence, SentToken
from signoff.contract import WORKFLOW_TYPE
from signoff.errors import TokenError


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
                problems += _proof_problems(
                    ran.call.id, ran.call.name, ran.call.arguments, ran.approval, by_hash, run.run_id
                )
    problems += _stated_problems(records, chain)
    return problems, checked


def _proof_problems(
    call_id: str, tool: str, arguments: str, proof: Any, by_hash: dict[str, tuple[int, ApprovalRecord]], run_id: str
) -> list[str]:
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


@dataclass
class Signatures:
    """What the signatures in the history prove about the trail."""

    problems: list[str] = field(default_factory=list)
    unverifiable: list[str] = field(default_factory=list)
    proven: int = 0
    """Verified records and votes a signed decision in the history backs."""
    attributed: int = 0
    """Records decided without a verified approver: names as sent, proving nothing."""


def check_signatures(
    records: Sequence[ApprovalRecord], chain: Sequence[RunEvidence], workflow_id: str, keys: ApproverKeys | None
) -> Signatures:
    """Which verified records the history's signed decisions prove, which they refute, and
    what cannot be told (see the module's docstring)."""
    out = Signatures()
    if chain and chain[0].workflow_type != WORKFLOW_TYPE:
        out.problems.append(
            f"the run's chain began as a {chain[0].workflow_type!r} workflow that continued into "
            f"{WORKFLOW_TYPE}, not as an {WORKFLOW_TYPE} a client started: its state came from outside"
        )
    chain_id = chain[0].run_id if chain else ""
    sent = [token for run in chain for token in run.tokens]
    signed = _verified(sent, keys) if keys else []
    for index, record in enumerate(records):
        claims = _claims(record)
        if not claims:
            out.attributed += 1
        for approver, grant_id in claims:
            where = f"record {index} ({record.call_id}): says {approver or 'nobody'} (verified)"
            if keys is None:
                out.unverifiable.append(
                    f"{where}: not verifiable without the workers' keys (set SIGNOFF_APPROVER_KEYS)"
                )
            elif any(_backs(i, record, approver, grant_id, workflow_id, chain_id) for i in signed):
                out.proven += 1
            elif any(_plain(i, approver) for i in signed):
                out.unverifiable.append(
                    f"{where}: only a plain identity token backs it (a run begun before signed "
                    "decisions): not verifiable"
                )
            else:
                out.problems.append(f"{where}, but no token in this run's history signs that decision")
    return out


def _claims(record: ApprovalRecord) -> list[tuple[str | None, str | None]]:
    """(approver, grant id) of each verified approval the record states: its votes under a
    quorum, else the record's own."""
    if record.votes:
        return [(v.approver, v.grant_id) for v in record.votes if v.verified]
    return [(record.approver, record.grant_id)] if record.verified else []


def _verified(sent: Sequence[SentToken], keys: ApproverKeys) -> list[Identity]:
    """The tokens that verify with `keys`, each as of when it was sent."""
    found, seen = [], set()
    for item in sent:
        if item.token in seen:
            continue
        seen.add(item.token)
        try:
            found.append(keys.verify(item.token, item.at))
        except TokenError:
            continue
    return found


def _plain(identity: Identity, approver: str | None) -> bool:
    return identity.claim is None and same_name(identity.subject, approver)


def _backs(
    identity: Identity,
    record: ApprovalRecord,
    approver: str | None,
    grant_id: str | None,
    workflow_id: str,
    chain_id: str,
) -> bool:
    """Whether `identity`'s token signs this record's decision by `approver` (or the grant it used)."""
    claim = identity.claim
    if not isinstance(claim, DecisionClaim) or not same_name(identity.subject, approver):
        return False
    if (claim.workflow_id, claim.chain_id, claim.tool) != (workflow_id, chain_id, record.name):
        return False
    if grant_id is not None:
        granted = claim.edited_arguments_digest or claim.arguments_digest
        if claim.grant is None or not claim.approved:
            return False
        return claim.grant.match is GrantMatch.TOOL or granted == record.arguments_digest
    edited = record.edited_arguments
    if edited is None and claim.edited_arguments_digest is not None:
        return False  # signed for other arguments than the record says ran
    if edited is not None and not is_elided(edited) and claim.edited_arguments_digest != arguments_digest(edited):
        return False
    return (claim.call_id, claim.arguments_digest, claim.approved) == (
        record.call_id,
        record.arguments_digest,
        record.approved,
    )
