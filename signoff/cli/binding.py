"""Which calls an `approve`/`deny` decides, each bound to the digest the operator saw.

Pure: given the run's pending calls, what this operator was shown, and the command's
CALL / `--all` / `--digest`, `plan` says which calls to decide with which digest, and
which the operator has not seen yet (the command prints those whole, then asks, decides
or refuses). A decision never goes out without a digest, and never as `"*"`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from signoff.approval.requests import ToolApprovalRequest

MIN_PREFIX = 16
"""64 bits: a model steered to find other arguments with the prefix an operator was given
would need ~2^64 hashes (8 characters, 32 bits, take minutes on one core)."""
DIGEST_TEXT = re.compile(rf"[0-9a-f]{{{MIN_PREFIX},64}}")
Source = Literal["shown", "given", "now"]
Mode = Literal["named", "only", "all"]
"""How calls not shown before are handled: a named call (decided once printed, or asked
on a terminal), the run's only call (asked on a terminal, refused otherwise), `--all`
(asked on a terminal, left undecided otherwise)."""


@dataclass(frozen=True)
class CallToDecide:
    """One call to decide, with the digest to send and where that digest comes from."""

    call_id: str
    digest: str
    request: ToolApprovalRequest | None
    source: Source


@dataclass(frozen=True)
class Plan:
    targets: list[CallToDecide] = field(default_factory=list)
    unseen: list[ToolApprovalRequest] = field(default_factory=list)
    mode: Mode = "named"


class CannotDecide(Exception):
    """Nothing can be decided as asked: why, the exit code, and the calls to show whole."""

    def __init__(self, message: str, code: int = 1, show: Sequence[ToolApprovalRequest] = ()) -> None:
        super().__init__(message)
        self.code = code
        self.show = list(show)


def digest_text(text: str) -> str:
    """A `--digest` value: lowercase hex, the whole digest or a prefix of at least 16.

    Raises:
        ValueError: anything else.
    """
    value = text.strip().lower()
    if not DIGEST_TEXT.fullmatch(value):
        raise ValueError(f"--digest takes a call's arguments_digest or its first {MIN_PREFIX}+ hex characters")
    return value


def plan(
    workflow_id: str,
    pending: Sequence[ToolApprovalRequest],
    shown: Mapping[str, str],
    call: str | None = None,
    every: bool = False,
    digest: str | None = None,
) -> Plan:
    """The calls to decide. Raises CannotDecide when none can be, saying why and what to do."""
    if call is not None:
        return _named(workflow_id, pending, shown, call, digest)
    if not pending:
        raise CannotDecide(f"no tool call is awaiting approval in run {workflow_id}")
    if every:
        targets = [CallToDecide(r.call_id, shown[r.call_id], r, "shown") for r in pending if r.call_id in shown]
        return Plan(targets, [r for r in pending if r.call_id not in shown], "all")
    if digest is not None:
        return Plan([_by_digest(pending, digest)])
    if len(pending) > 1:
        ids = ", ".join(r.call_id for r in pending)
        raise CannotDecide(
            f"{len(pending)} calls are pending in run {workflow_id} ({ids}). Name one, or pass --all.", 2, pending
        )
    only = pending[0]
    if only.call_id in shown:
        return Plan([CallToDecide(only.call_id, shown[only.call_id], only, "shown")])
    return Plan(unseen=[only], mode="only")


def _named(
    workflow_id: str, pending: Sequence[ToolApprovalRequest], shown: Mapping[str, str], call: str, digest: str | None
) -> Plan:
    request = next((r for r in pending if r.call_id == call), None)
    if digest is not None:
        if request is not None and request.arguments_digest.startswith(digest):
            return Plan([CallToDecide(call, request.arguments_digest, request, "given")])
        if len(digest) == 64:  # bound in full: the run itself says why it cannot be decided
            return Plan([CallToDecide(call, digest, request, "given")])
        now = f"its arguments_digest is {request.arguments_digest}" if request else "it is not pending"
        raise CannotDecide(
            f"call {call!r} is not the call you named by --digest {digest}: {now}", 1, [request] if request else []
        )
    if call in shown:  # what the operator saw; if the call changed since, the run refuses it
        return Plan([CallToDecide(call, shown[call], request, "shown")])
    if request is None:
        ids = ", ".join(r.call_id for r in pending) or "none"
        raise CannotDecide(f"no pending call with id {call!r} in run {workflow_id} (pending call ids: {ids})")
    return Plan(unseen=[request], mode="named")


def _by_digest(pending: Sequence[ToolApprovalRequest], digest: str) -> CallToDecide:
    matches = [r for r in pending if r.arguments_digest.startswith(digest)]
    if not matches:
        raise CannotDecide(
            f"no pending call has an arguments_digest starting {digest}; the pending calls are:", 1, pending
        )
    if len(matches) > 1:
        raise CannotDecide(f"{len(matches)} pending calls have these arguments; name the call as well", 2, matches)
    return CallToDecide(matches[0].call_id, matches[0].arguments_digest, matches[0], "given")
