"""The pure tool loop: whole-transcript assertions, no I/O."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from signoff.approval.requests import ToolApprovalResponse as Decision
from signoff.errors import DecisionError
from signoff.loop.agent_loop import AgentLoop, AwaitApproval, CallModel, Finish, RunTools
from signoff.messages import ChatMessage, ChatResponse, FinishReason, ToolCall

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
TOOLS = {"run_command": "Run a shell command", "read_file": "Read a file"}
USER = ChatMessage.user("clean up")


def call(call_id: str, name: str = "run_command", **arguments: object) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=json.dumps(arguments))


def turn(*calls: ToolCall, text: str | None = None) -> ChatResponse:
    reason = FinishReason.TOOL_CALLS if calls else FinishReason.STOP
    return ChatResponse(message=ChatMessage.assistant(text, list(calls)), finish_reason=reason)


def run_ready(loop: AgentLoop) -> list[ToolCall]:
    action = loop.next_action()
    assert isinstance(action, RunTools), action
    for c in action.calls:
        loop.apply_tool_result(c.id, f"ran {c.arguments}")
    return action.calls


def start(*calls: ToolCall, gated: tuple[str, ...] = (), **kwargs: object) -> AgentLoop:
    loop = AgentLoop([USER], TOOLS, **kwargs)  # type: ignore[arg-type]
    assert loop.next_action() == CallModel(0)
    loop.apply_model_turn(turn(*calls), gated, NOW)
    return loop


def finish_with_text(loop: AgentLoop, text: str = "done") -> None:
    assert isinstance(loop.next_action(), CallModel)
    loop.apply_model_turn(turn(text=text), (), NOW)
    assert loop.next_action() == Finish(FinishReason.STOP)


def test_approved_call_runs_and_the_model_sees_its_result() -> None:
    c1 = call("c1", command="ls")
    loop = start(c1, gated=("c1",))
    action = loop.next_action()
    assert isinstance(action, AwaitApproval)
    assert [(r.call_id, r.arguments, r.description) for r in action.requests] == [
        ("c1", {"command": "ls"}, "Run a shell command")
    ]
    assert loop.decide([Decision.approve("c1", approver="alice")], NOW) == ["c1"]
    run_ready(loop)
    finish_with_text(loop)
    assert loop.messages == [
        USER,
        ChatMessage.assistant(None, [c1]),
        ChatMessage.tool('ran {"command": "ls"}', "c1"),
        ChatMessage.assistant("done"),
    ]
    assert loop.state.approvals[0].approver == "alice"


def test_denied_call_returns_rejection_with_reason_to_model() -> None:
    loop = start(call("c1", command="rm -rf /tmp/logs"), gated=("c1",))
    loop.decide([Decision.deny("c1", "Back up the logs first")], NOW)
    assert loop.next_action() == CallModel(1)
    assert loop.messages[-1] == ChatMessage.tool("Rejected: Back up the logs first", "c1")


def test_denied_call_without_reason_says_user_denied() -> None:
    loop = start(call("c1", command="rm"), gated=("c1",))
    loop.decide([Decision.deny("c1")], NOW)
    assert loop.messages[-1] == ChatMessage.tool("Rejected: User denied", "c1")


def test_edited_arguments_run_and_audit_keeps_both() -> None:
    loop = start(call("c1", command="rm -rf /"), gated=("c1",))
    loop.decide([Decision.approve("c1", arguments={"command": "ls"})], NOW)
    (ran,) = run_ready(loop)
    assert json.loads(ran.arguments) == {"command": "ls"}
    record = loop.state.approvals[0]
    assert (record.arguments, record.edited_arguments) == ({"command": "rm -rf /"}, {"command": "ls"})
    assert loop.messages[1].tool_calls == [call("c1", command="rm -rf /")]


def test_mixed_batch_runs_auto_call_first_and_keeps_call_order() -> None:
    c1, c2 = call("c1", command="rm x"), call("c2", "read_file", path="a")
    loop = start(c1, c2, gated=("c1",))
    assert [c.id for c in run_ready(loop)] == ["c2"]
    assert isinstance(loop.next_action(), AwaitApproval)
    loop.decide([Decision.approve("c1")], NOW)
    assert [c.id for c in run_ready(loop)] == ["c1"]
    assert [(m.role, m.tool_call_id) for m in loop.messages[1:]] == [
        ("assistant", None),
        ("tool", "c1"),
        ("tool", "c2"),
    ]
    assert loop.next_action() == CallModel(1)


def test_two_gated_calls_decided_one_at_a_time() -> None:
    loop = start(call("c1", command="a"), call("c2", command="b"), gated=("c1", "c2"))
    loop.decide([Decision.deny("c2", "no")], NOW)
    action = loop.next_action()
    assert isinstance(action, AwaitApproval) and [r.call_id for r in action.requests] == ["c1"]
    loop.decide([Decision.approve("c1")], NOW)
    run_ready(loop)
    assert [m.content for m in loop.messages[2:]] == ['ran {"command": "a"}', "Rejected: no"]


def test_star_decides_every_pending_call() -> None:
    loop = start(call("c1", command="a"), call("c2", command="b"), gated=("c1", "c2"))
    assert loop.decide([Decision.deny("*", "not today")], NOW) == ["c1", "c2"]
    assert [m.content for m in loop.messages[2:]] == ["Rejected: not today"] * 2


def test_unknown_tool_answers_error_without_asking() -> None:
    loop = start(call("c1", "format_disk"), gated=("c1",))
    assert loop.next_action() == CallModel(1)
    assert (loop.messages[-1].content or "").startswith("Error: unknown tool 'format_disk'")
    assert loop.state.approvals == []


def test_invalid_json_arguments_answer_error_without_asking() -> None:
    bad = ToolCall(id="c1", name="run_command", arguments='{"command": "ls"')
    loop = start(bad, gated=("c1",))
    assert loop.next_action() == CallModel(1)
    assert (loop.messages[-1].content or "").startswith("Error: invalid JSON arguments for run_command: Expecting ','")


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"command": NaN}', "NaN is not a JSON number"),
        ('{"command": "ls", "timeout_secs": Infinity}', "Infinity is not a JSON number"),
        ('{"timeout_secs": 1e999}', "1e999 is too large for a JSON number"),
        ('{"command": "\\ud800"}', "lone surrogate"),
        ('{"a": ' * 65 + "1" + "}" * 65, "nested deeper than 64 levels"),
        ('{"a": ' * 10_000 + "1" + "}" * 10_000, "nested deeper than 64 levels"),
    ],
)
def test_arguments_that_are_not_strict_json_answer_error_without_asking(text: str, why: str) -> None:
    loop = start(ToolCall(id="c1", name="run_command", arguments=text), gated=("c1",))
    assert loop.next_action() == CallModel(1)
    content = loop.messages[-1].content or ""
    assert content.startswith("Error: invalid JSON arguments for run_command: ") and why in content
    assert loop.state.approvals == [] and loop.pending_requests() == []


def test_json_that_is_not_an_object_answers_error_without_asking() -> None:
    loop = start(ToolCall(id="c1", name="run_command", arguments="[1, 2]"), gated=("c1",))
    assert loop.messages[-1].content == "Error: arguments for run_command are not a JSON object: '[1, 2]'"


def test_max_rounds_finishes_after_the_last_round_tools() -> None:
    loop = AgentLoop([USER], TOOLS, max_rounds=2)
    for round_ in range(2):
        assert loop.next_action() == CallModel(round_)
        loop.apply_model_turn(turn(call(f"c{round_}", "read_file", path="a")), (), NOW)
        run_ready(loop)
    assert loop.next_action() == Finish(FinishReason.MAX_ROUNDS)
    assert loop.messages[-1].role == "tool"


def test_stateless_resume_applies_responses_to_unanswered_calls() -> None:
    c1, c2 = call("c1", command="a"), call("c2", "read_file", path="x")
    transcript = [USER, ChatMessage.assistant(None, [c1, c2]), ChatMessage.tool("contents", "c2")]
    loop = AgentLoop(transcript, TOOLS)
    loop.resume([Decision.deny("c1", "nope")], gated=("c1",), now=NOW)
    assert loop.next_action() == CallModel(0)
    assert loop.messages == [
        USER,
        ChatMessage.assistant(None, [c1, c2]),
        ChatMessage.tool("Rejected: nope", "c1"),
        ChatMessage.tool("contents", "c2"),
    ]


def test_stateless_resume_asks_for_calls_left_without_decision() -> None:
    transcript = [USER, ChatMessage.assistant(None, [call("c1", command="a"), call("c2", command="b")])]
    loop = AgentLoop(transcript, TOOLS)
    loop.resume([Decision.approve("c1")], gated=("c1", "c2"), now=NOW)
    assert [c.id for c in run_ready(loop)] == ["c1"]
    action = loop.next_action()
    assert isinstance(action, AwaitApproval) and [r.call_id for r in action.requests] == ["c2"]


def test_decision_for_unknown_id_names_pending_ids() -> None:
    loop = start(call("c1", command="a"), call("c2", command="b"), gated=("c1", "c2"))
    with pytest.raises(DecisionError, match=r"no pending call with id 'zz' \(pending call ids: c1, c2\)"):
        loop.decide([Decision.approve("zz")], NOW)
    assert len(loop.pending_requests()) == 2


def test_decision_for_decided_call_is_rejected_and_first_wins() -> None:
    loop = start(call("c1", command="a"), call("c2", command="b"), gated=("c1", "c2"))
    loop.decide([Decision.deny("c1")], NOW)
    with pytest.raises(DecisionError, match=r"'c1' is already decided.*pending call ids: c2"):
        loop.decide([Decision.approve("c1")], NOW)
    assert loop.state.approvals[0].approved is False


def test_decision_batch_is_all_or_nothing() -> None:
    loop = start(call("c1", command="a"), gated=("c1",))
    with pytest.raises(DecisionError):
        loop.decide([Decision.approve("c1"), Decision.approve("c9")], NOW)
    assert loop.state.approvals == []


def test_decision_when_nothing_pending_is_rejected() -> None:
    loop = AgentLoop([USER], TOOLS)
    with pytest.raises(DecisionError, match="no tool call is awaiting approval"):
        loop.decide([Decision.approve("c1")], NOW)


def test_deadline_denies_undecided_calls_as_timed_out() -> None:
    loop = start(call("c1", command="a"), gated=("c1",), approval_timeout_seconds=5)
    assert loop.next_wakeup() == NOW + timedelta(seconds=5)
    loop.due(NOW + timedelta(seconds=4))
    assert [r.call_id for r in loop.pending_requests()] == ["c1"]
    loop.due(NOW + timedelta(seconds=5))
    assert loop.pending_requests() == []
    assert loop.messages[-1].content == "Rejected: No decision within 5s"
    assert loop.state.approvals[0].timed_out is True


def test_cancel_denies_pending_and_finishes_cancelled() -> None:
    loop = start(call("c1", command="a"), call("c2", "read_file", path="x"), gated=("c1",))
    loop.cancel(NOW)
    assert loop.next_action() == Finish(FinishReason.CANCELLED)
    assert [m.content for m in loop.messages[2:]] == ["Rejected: Run cancelled"] * 2


def test_length_finish_without_calls_ends_the_run() -> None:
    loop = AgentLoop([USER], TOOLS)
    loop.apply_model_turn(ChatResponse(message=ChatMessage.assistant("cut"), finish_reason="length"), (), NOW)
    assert loop.next_action() == Finish(FinishReason.LENGTH)


def test_events_tell_the_story_in_order() -> None:
    loop = start(call("c1", command="a"), gated=("c1",))
    loop.decide([Decision.approve("c1")], NOW)
    run_ready(loop)
    finish_with_text(loop, "ok")
    kinds = [e.type for e in loop.drain_events()]
    assert kinds == ["tool_call", "approval_request", "approval_decision", "tool_result", "text", "finish"]


def test_state_round_trips_through_json() -> None:
    loop = start(call("c1", command="a"), gated=("c1",), approval_timeout_seconds=60)
    copy = AgentLoop.from_state(type(loop.state).model_validate_json(loop.state.model_dump_json()))
    copy.decide([Decision.approve("c1")], NOW)
    assert [c.id for c in run_ready(copy)] == ["c1"]
