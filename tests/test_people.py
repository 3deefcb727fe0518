"""One `Person` for requesters, deciders and voters: what each wire type produces, and that the
wire shapes are the ones committed histories and audit records hold."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from signoff.activities.models import IdentifyOutput, Requester
from signoff.approval.authority import Decider, Decision, refusal, vote_problem
from signoff.approval.identity import Identity
from signoff.approval.people import Person
from signoff.approval.policy import ApprovalPolicy
from signoff.approval.requests import GrantSpec, ToolApprovalRequest, ToolApprovalResponse, Vote
from signoff.loop.agent_loop import AgentLoop, RunTools
from signoff.messages import ChatMessage, ChatResponse, FinishReason, ToolCall

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
ALICE = Person(name="alice", groups=("sre",), verified=True)


def test_a_claimed_name_is_an_unverified_person_without_groups() -> None:
    assert Person.claimed("alice") == Person(name="alice", groups=(), verified=False)
    assert Person.claimed("") == Person.claimed(None) == Person()
    assert Decider.claimed("bob") == Decider(Person(name="bob"))


def test_a_requester_is_a_person_with_the_same_wire_fields_as_before() -> None:
    requester = Requester.of(ALICE, bound=True)
    dumped = requester.model_dump(mode="json")
    assert list(dumped) == ["name", "groups", "verified", "bound"]
    assert dumped == {"name": "alice", "groups": ["sre"], "verified": True, "bound": True}
    assert Requester.model_validate_json(json.dumps(dumped)) == requester
    assert (requester.name, requester.groups, requester.verified) == (ALICE.name, ALICE.groups, ALICE.verified)


def test_the_identify_answer_names_a_verified_person_or_none_when_refused() -> None:
    assert IdentifyOutput(subject="alice", groups=["sre"]).person() == ALICE
    assert IdentifyOutput(error="expired").person() is None


def test_a_verified_token_vouches_for_its_subject_and_groups() -> None:
    assert Identity(subject="alice", groups=("sre",), issuer="team").person() == ALICE


def test_a_vote_records_the_voter_without_groups() -> None:
    vote = Vote.by(ALICE, NOW, grant_id="grant_1")
    assert vote.model_dump() == {"approver": "alice", "verified": True, "at": NOW, "grant_id": "grant_1"}


def test_who_may_decide_is_a_rule_over_the_person_alone() -> None:
    request = ToolApprovalRequest(call_id="c1", name="deploy", policy=ApprovalPolicy(approvers=("group:sre",)))
    assert refusal(request, ALICE, requested_by=None) is None
    claimed = Person(name="alice", groups=("sre",))  # groups nobody vouched for
    assert refusal(request, claimed, requested_by=None) == (
        "call 'c1' (deploy): 'alice' is not among its approvers (group:sre)"
    )
    quorum = request.model_copy(update={"policy": ApprovalPolicy(quorum=2), "votes": [Vote.by(ALICE, NOW)]})
    assert vote_problem(quorum, Person.claimed("ALICE")) == (
        "'ALICE' already approved call 'c1'; 1 more approval(s) needed"
    )


def test_a_grant_decides_later_calls_as_the_person_who_made_it() -> None:
    calls = [ToolCall(id=f"c{n}", name="deploy", arguments="{}") for n in (1, 2)]
    loop = AgentLoop([ChatMessage.user("ship")], {"deploy": "Deploy"}, policies={"deploy": ApprovalPolicy()})
    first = ChatResponse(message=ChatMessage.assistant(None, calls[:1]), finish_reason=FinishReason.TOOL_CALLS)
    loop.apply_model_turn(first, ["c1"], NOW)
    grant = GrantSpec(match="tool")
    loop.decide([Decision(ToolApprovalResponse.approve("c1", grant=grant), Decider(ALICE, token="t"))], NOW)
    loop.apply_tool_result("c1", "deployed")
    (made,) = loop.state.grants
    assert made.person() == ALICE and made.token == "t"
    second = ChatResponse(message=ChatMessage.assistant(None, calls[1:]), finish_reason=FinishReason.TOOL_CALLS)
    loop.apply_model_turn(second, ["c2"], NOW)
    assert loop.next_action() == RunTools([calls[1]])
    record = loop.approval_of("c2")
    assert record is not None
    assert (record.approver, record.verified, record.grant_id) == ("alice", True, "grant_1")
    assert loop.evidence_of("c2") == ["t"]
