"""The loop's shape: one class composed of parts over one state, no mixins, no stubs; and the
parts a reader opens one at a time do what `AgentLoop` says they do."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import BaseModel

import signoff.loop.agent_loop
from signoff.approval.requests import ToolApprovalResponse
from signoff.errors import DecisionError
from signoff.loop.agent_loop import AgentLoop
from signoff.loop.resume import reopen, unanswered_calls
from signoff.loop.rounds import Rounds
from signoff.loop.state import CallStatus, LoopState
from signoff.messages import ChatMessage, ToolCall

LOOP = Path(signoff.loop.agent_loop.__file__).parent
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def test_agent_loop_is_one_class_in_one_file() -> None:
    assert AgentLoop.__mro__ == (AgentLoop, object)
    source = inspect.getsourcefile(AgentLoop)
    for name, member in vars(AgentLoop).items():
        function = getattr(member, "fget", member)
        if inspect.isfunction(function):
            assert inspect.getsourcefile(function) == source, name


@pytest.mark.parametrize("path", sorted(LOOP.glob("*.py")), ids=lambda p: p.name)
def test_no_part_of_the_loop_is_a_stub_or_a_mixin(path: Path) -> None:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Raise) and node.exc is not None:
            assert "NotImplementedError" not in ast.unparse(node.exc), f"{path.name}:{node.lineno}"
    module = importlib.import_module(f"signoff.loop.{path.stem}")
    for cls in vars(module).values():
        if not inspect.isclass(cls) or cls.__module__ != module.__name__:
            continue
        for base in cls.__bases__:  # one loop class derives from another only as data (an event, a model)
            assert not base.__module__.startswith("signoff.loop") or issubclass(base, BaseModel), (cls, base)


def test_a_round_closes_only_once_every_call_has_its_tool_message() -> None:
    calls = [ToolCall(id=c, name="t", arguments="{}") for c in ("c1", "c2")]
    state = LoopState(messages=[ChatMessage.user("go"), ChatMessage.assistant(None, calls)], tools={"t": ""})
    rounds = Rounds(state)
    first, second = rounds.open(calls, answered={})
    rounds.answer(second, "two")
    assert state.pending and rounds.messages[-1] == ChatMessage.tool("two", "c2")
    rounds.answer(first, "one")
    assert not state.pending
    assert state.messages[-2:] == [ChatMessage.tool("one", "c1"), ChatMessage.tool("two", "c2")]  # call order
    assert [e.type for e in rounds.events] == ["tool_call", "tool_call", "tool_result", "tool_result"]


def test_reopen_takes_up_the_open_calls_and_the_answers_already_given() -> None:
    calls = [ToolCall(id="c1", name="t", arguments="{}"), ToolCall(id="c2", name="t", arguments="{}")]
    transcript = [ChatMessage.user("go"), ChatMessage.assistant(None, calls), ChatMessage.tool("done", "c2")]
    reopened = reopen(transcript, [ToolApprovalResponse.approve("c1")])
    assert reopened is not None
    assert reopened.messages == transcript[:2] and reopened.answers == {"c2": "done"}
    assert reopened.decided == {"c1"}
    assert [c.id for c in unanswered_calls(transcript)] == ["c1"]
    with pytest.raises(DecisionError, match=r"name calls that are not open: \['c2'\]"):
        reopen(transcript, [ToolApprovalResponse.approve("c2")])
    assert reopen(transcript[:1], []) is None


def test_a_loop_continued_from_its_state_is_the_same_loop() -> None:
    call = ToolCall(id="c1", name="t", arguments=json.dumps({"x": 1}))
    loop = AgentLoop([ChatMessage.user("go"), ChatMessage.assistant(None, [call])], {"t": ""})
    loop.resume([], gated=["c1"], now=NOW)
    again = AgentLoop.from_state(LoopState.model_validate_json(loop.state.model_dump_json()))
    assert again.state == loop.state and again.next_action() == loop.next_action()
    again.decide([ToolApprovalResponse.approve("c1", approver="alice")], NOW)
    assert again.state.pending[0].status is CallStatus.READY
    assert [e.type for e in again.drain_events()] == ["approval_decision"] and again.drain_events() == []
