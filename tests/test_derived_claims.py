"""What a signer signs is derived (signoff.signing.derived), and where a signature is spent
(signoff.approval.spent): the pure rules, without a server. The attacks themselves, against a
real server, are tests/test_signing_what_is_shown.py and tests/test_spent_signatures.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from signoff.approval.digest import arguments_digest
from signoff.approval.evidence import Counted
from signoff.approval.identity import Identity
from signoff.approval.requests import Binding, GrantSpec, ToolApprovalRequest, ToolApprovalResponse
from signoff.approval.signatures import DecisionClaim, decision_claim, mismatch
from signoff.approval.spent import effective_max_age, grant_slot_id, record_id
from signoff.errors import SigningRefused
from signoff.signing.derived import RunFacts, ServedRuns, decision_claim_for, derived_binding

ARGS = {"command": "rm -rf /tmp/logs"}
RUN = RunFacts(workflow_id="cleanup-1", chain_id="chain-1", workflow_type="AgentRun", task_queue="signoff")
BINDING = Binding(
    workflow_id="cleanup-1",
    chain_id="chain-1",
    call_id="call_1",
    tool="run_command",
    arguments_digest=arguments_digest(ARGS),
    request="r-1",
)


def request(**changes: Any) -> ToolApprovalRequest:
    """The request as the run reports it; `binding=` fields change what its binding says."""
    binding = BINDING.model_copy(update=changes.pop("binding", {}))
    fields: dict[str, Any] = {
        "call_id": "call_1",
        "name": "run_command",
        "arguments": ARGS,
        "arguments_digest": arguments_digest(ARGS),
        "binding": binding,
    }
    return ToolApprovalRequest(**(fields | changes))


def test_a_genuine_request_is_signed_as_it_reports_itself() -> None:
    assert derived_binding(RUN, request()) == BINDING


@pytest.mark.parametrize(
    ("lie", "said"),
    [
        ({"binding": {"workflow_id": "victim-1"}}, "its binding names workflow 'victim-1', and it is run 'cleanup-1'"),
        ({"binding": {"chain_id": "chain-9"}}, "its binding names chain 'chain-9', the server says 'chain-1'"),
        ({"binding": {"call_id": "call_9"}}, "its binding names call 'call_9', it shows call 'call_1'"),
        ({"binding": {"tool": "write_file"}}, "its binding names tool 'write_file', it shows 'run_command'"),
        ({"binding": {"arguments_digest": "0" * 64}}, f"its binding names arguments digest {'0' * 64!r}"),
        ({"arguments_digest": "0" * 64}, f"its arguments_digest is {'0' * 64!r}, the arguments it shows digest to"),
        ({"arguments": {"command": "echo harmless"}}, "the arguments it shows digest to"),
    ],
)
def test_a_request_whose_binding_is_not_what_it_shows_is_refused_saying_which_fact_differs(
    lie: dict[str, Any], said: str
) -> None:
    with pytest.raises(SigningRefused) as refused:
        derived_binding(RUN, request(**lie))
    assert str(refused.value).startswith("this run's request does not match what it shows: ")
    assert said in str(refused.value) and str(refused.value).endswith("Nothing signed")


@pytest.mark.parametrize(
    ("run", "served", "said"),
    [
        (RunFacts("cleanup-1", "chain-1", "Attacker", "signoff"), ServedRuns(), "is a 'Attacker', not an AgentRun"),
        (
            RunFacts("cleanup-1", "chain-1", "AgentRun", "attacker-q"),
            ServedRuns(("signoff", "ops")),
            "is on task queue 'attacker-q', which is not one your workers serve ('signoff', 'ops'; ",
        ),
        (RunFacts("cleanup-1", "chain-1", "Attacker", "x"), ServedRuns(("*",)), "not an AgentRun"),
    ],
)
def test_a_signer_signs_only_for_agent_runs_on_the_queues_it_serves(
    run: RunFacts, served: ServedRuns, said: str
) -> None:
    with pytest.raises(SigningRefused, match="nothing signed") as refused:
        derived_binding(run, request(), served)
    assert said in str(refused.value)


def test_any_queue_is_served_with_a_star() -> None:
    elsewhere = RunFacts("cleanup-1", "chain-1", "AgentRun", "ops-eu")
    assert derived_binding(elsewhere, request(), ServedRuns(("*",))) == BINDING


def test_a_decision_on_arguments_other_than_shown_is_not_signed() -> None:
    stale = ToolApprovalResponse(call_id="call_1", approved=True, arguments_digest="1" * 64)
    with pytest.raises(SigningRefused, match="is not what you were shown"):
        decision_claim_for(RUN, request(), stale)


def test_a_request_asked_before_request_instances_is_signed_without_one() -> None:
    """A run parked by v3 code: its binding has no `request`, and neither has its claim."""
    old = request(binding={"request": None})
    claim = decision_claim_for(RUN, old, ToolApprovalResponse(call_id="call_1", approved=True))
    assert claim.request is None and "request" not in claim.model_dump(mode="json")


def test_a_claim_naming_a_request_fits_no_call_asked_without_one() -> None:
    approved = ToolApprovalResponse(call_id="call_1", approved=True)
    signed = decision_claim(BINDING, approved)
    wanted = decision_claim(BINDING.model_copy(update={"request": None}), approved)
    assert mismatch(signed, wanted) == "the token is signed for another decision: its request is 'r-1', not None"
    assert mismatch(wanted, signed) == "the token is signed for another decision: its request is None, not 'r-1'"


# --- where a signature is spent ------------------------------------------------------------


def counted(subject: str = "alice", grant_use: bool = False, **claim: Any) -> Counted:
    signed = DecisionClaim(**(BINDING.model_dump() | claim), approved=True)
    return Counted(Identity(subject=subject, claim=signed, issued_at=datetime.now(UTC)), signed, grant_use)


def test_a_signature_is_spent_per_person_and_request_not_per_token_or_answer() -> None:
    """Two tokens of one person for one request (re-signed, re-encoded, edited or not) spend one
    record; another person, or another request instance of the call, another."""
    once = record_id(counted())
    assert record_id(counted("Alice")) == once  # names compare as the policy compares them
    assert record_id(counted(edited_arguments_digest="2" * 64)) == once
    assert record_id(counted("bob")) != once
    assert record_id(counted(request="r-2")) != once
    assert once.startswith("signoff-spent-") and len(once) == len("signoff-spent-") + 64


def test_a_grants_uses_are_slots_of_their_own() -> None:
    grant = counted(grant_use=True, grant=GrantSpec(match="tool", max_uses=3))
    slots = {grant_slot_id(grant, n) for n in (1, 2, 3)}
    assert len(slots) == 3 and record_id(grant) not in slots


@pytest.mark.parametrize(
    ("configured", "retention", "honoured"),
    [
        (timedelta(hours=24), timedelta(days=1), timedelta(hours=23)),  # the dev server's retention
        (timedelta(hours=24), timedelta(days=30), timedelta(hours=24)),
        (timedelta(hours=2), None, timedelta(hours=2)),  # not allowed to ask
    ],
)
def test_a_signature_is_honoured_within_the_namespaces_retention(
    configured: timedelta, retention: timedelta | None, honoured: timedelta
) -> None:
    """A record someone terminated is deleted `retention` after: a signature must be too old by then."""
    assert effective_max_age(configured, retention) == honoured
