"""Answers to an MCP server's question, without a run: which decision answers which request, the
claim that signs an answer, the inbox's form of a schema, and URL mode from a real server."""

from __future__ import annotations

from pathlib import Path

import pytest

from signoff.approval.answers import answer_problem, elicit_result
from signoff.approval.requests import Binding, ToolApprovalRequest, ToolApprovalResponse
from signoff.approval.signatures import answer_digest, decision_claim
from signoff.inbox.app import form_answer, question_fields
from signoff.tools.mcp.sessions import MCPSessions
from tests.mcp_helpers import stdio

SCHEMA = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean"}, "size": {"type": "integer"}, "mode": {"enum": ["a", "b"]}},
    "required": ["confirm"],
}
QUESTION = ToolApprovalRequest(
    call_id="c1", name="mcp__notes__erase_note", kind="input", message="Sure?", input_schema=SCHEMA
)
APPROVAL = ToolApprovalRequest(call_id="c1", name="run_command")
BINDING = Binding(workflow_id="w", chain_id="c", call_id="c1", tool="t", arguments_digest="0" * 64)


def test_a_question_takes_an_answer_and_an_approval_takes_none() -> None:
    assert answer_problem(QUESTION, ToolApprovalResponse.answering("c1", {"confirm": True})) is None
    assert answer_problem(QUESTION, ToolApprovalResponse.declining("c1")) is None
    assert "waits for an answer" in (answer_problem(QUESTION, ToolApprovalResponse.approve("c1")) or "")
    assert "waits for approval" in (answer_problem(APPROVAL, ToolApprovalResponse.answering("c1", {})) or "")
    assert answer_problem(APPROVAL, ToolApprovalResponse.approve("c1")) is None


def test_an_answer_that_does_not_fit_the_schema_is_refused_with_its_message() -> None:
    wrong = answer_problem(QUESTION, ToolApprovalResponse.answering("c1", {"size": "big"}))
    assert wrong is not None
    assert "(the answer): 'confirm' is a required property" in wrong and "size: 'big' is not of type 'integer'" in wrong
    assert "must be a JSON object" in (answer_problem(QUESTION, ToolApprovalResponse.answering("c1", [1])) or "")


def test_a_url_question_takes_only_consent() -> None:
    url = QUESTION.model_copy(
        update={"input_schema": None, "url": "https://login.example.com/x", "url_host": "login.example.com"}
    )
    assert answer_problem(url, ToolApprovalResponse.answering("c1", True)) is None
    assert "login.example.com" in (answer_problem(url, ToolApprovalResponse.answering("c1", {"password": "x"})) or "")


def test_an_answer_is_one_of_answer_decline_cancel_and_no_approval() -> None:
    with pytest.raises(ValueError, match="not several"):
        ToolApprovalResponse(call_id="c1", approved=False, answer={}, decline=True)
    with pytest.raises(ValueError, match="no 'approved'"):
        ToolApprovalResponse(call_id="c1", approved=True, answer={})
    assert elicit_result(ToolApprovalResponse.answering("c1", {"confirm": True})) == {
        "action": "accept",
        "content": {"confirm": True},
    }
    assert elicit_result(ToolApprovalResponse(call_id="c1", approved=False, cancel=True)) == {"action": "cancel"}


def test_the_claim_of_an_answer_names_it_and_an_approvals_claim_keeps_its_shape() -> None:
    bound = BINDING.model_copy(update={"state_digest": "1" * 64})
    claim = decision_claim(bound, ToolApprovalResponse.answering("c1", {"confirm": True})).model_dump(mode="json")
    assert (claim["state_digest"], claim["answer_action"]) == ("1" * 64, "accept")
    assert claim["answer_digest"] == answer_digest({"confirm": True})
    approval = decision_claim(BINDING, ToolApprovalResponse.approve("c1")).model_dump(mode="json")
    assert not {"state_digest", "answer_action", "answer_digest"} & set(approval)


def test_the_inbox_makes_a_form_of_simple_schemas_and_reads_it_back() -> None:
    fields = question_fields(SCHEMA)
    assert fields is not None
    assert [(f["name"], f["type"], f["required"], f["enum"]) for f in fields] == [
        ("confirm", "boolean", True, None),
        ("size", "integer", False, None),
        ("mode", "string", False, ["a", "b"]),
    ]
    assert question_fields({"type": "object", "properties": {"tags": {"type": "array"}}}) is None  # a JSON textarea
    form = {"type.confirm": ["boolean"], "field.confirm": ["false"], "type.size": ["integer"], "field.size": ["3"]}
    assert form_answer({**form, "type.mode": ["string"], "field.mode": [""]}) == {"confirm": False, "size": 3}
    assert form_answer({"answer_json": ['{"confirm": true}']}) == {"confirm": True}
    with pytest.raises(ValueError, match="is not an integer"):
        form_answer({"type.size": ["integer"], "field.size": ["many"]})


async def test_a_url_mode_question_of_a_real_server_names_its_host(tmp_path: Path) -> None:
    sessions = MCPSessions()
    try:
        result = await sessions.call(stdio(tmp_path), "sign_in", {})
    finally:
        await sessions.aclose()
    assert result.input is not None
    assert (result.input.mode, result.input.url_host(), result.input.requested_schema) == (
        "url",
        "login.example.com",
        None,
    )


def test_a_question_held_at_its_deadline_is_rearmed_as_the_same_question() -> None:
    from datetime import UTC, datetime, timedelta

    from signoff.approval.authority import Decider
    from signoff.approval.policy import ApprovalPolicy
    from signoff.approval.requests import InputAsked
    from signoff.loop.agent_loop import AgentLoop
    from signoff.messages import ChatMessage, ChatResponse, ToolCall

    now = datetime(2026, 1, 1, tzinfo=UTC)
    policy = ApprovalPolicy(timeout_seconds=60, on_timeout="hold")
    loop = AgentLoop([ChatMessage.user("go")], {"t": "a tool"}, policies={"t": policy})
    turn = ChatMessage(role="assistant", tool_calls=[ToolCall(id="c1", name="t", arguments="{}")])
    loop.apply_model_turn(ChatResponse(message=turn), [], now)
    loop.apply_input_request("c1", InputAsked(key="k", message="Sure?", requested_schema=SCHEMA, state="s"), now)
    loop.due(now + timedelta(seconds=61))
    (expired,) = loop.pending_requests()
    assert (expired.status, expired.kind) == ("expired", "input")
    again = loop.rearm("c1", None, Decider.claimed("alice"), now + timedelta(seconds=70))
    assert (again.kind, again.message, again.input_schema, again.status) == ("input", "Sure?", SCHEMA, "waiting")
    loop.decide(
        [ToolApprovalResponse.answering("c1", {"confirm": True}, approver="alice")], now + timedelta(seconds=80)
    )
    assert loop.answer_of("c1") is not None


def test_notices_say_a_question_needs_an_answer_and_who_answered_it() -> None:
    from signoff.views.notices import notice_text

    request = QUESTION.model_dump(mode="json")
    asked = notice_text("approval_requested", "run-1", request, None)
    assert asked.startswith(
        'signoff: an answer needed for mcp__notes__erase_note in run run-1 (call c1): its MCP server asks "Sure?"'
    )
    record = {
        "call_id": "c1",
        "name": "mcp__notes__erase_note",
        "approved": False,
        "outcome": "answered",
        "approver": "alice",
    }
    assert notice_text("approval_decided", "run-1", None, record).startswith(
        "signoff: mcp__notes__erase_note in run run-1 (call c1) answered by alice"
    )
