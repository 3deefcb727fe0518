"""A session's turns in the pure loop: the next message, rounds per turn, the transcript budget."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from signoff.contract import AgentRunInput, RunOptions
from signoff.loop.agent_loop import AgentLoop, CallModel, Finish
from signoff.loop.budget import ELIDED_PREFIX, elide_turns, message_size
from signoff.loop.limits import Limits
from signoff.messages import ChatMessage, ChatResponse, FinishReason


def answered(loop: AgentLoop, text: str) -> None:
    assert isinstance(loop.next_action(), CallModel)
    loop.apply_model_turn(ChatResponse(message=ChatMessage.assistant(text)), [], now=_now())


def _now() -> datetime:
    return datetime(2026, 1, 1, tzinfo=UTC)


def test_the_next_message_opens_a_turn_with_its_own_rounds() -> None:
    loop = AgentLoop([ChatMessage.user("one")], {}, max_rounds=1)
    answered(loop, "first")
    assert isinstance(loop.next_action(), Finish)
    loop.next_message("two", max_rounds=1)
    assert isinstance(loop.next_action(), CallModel)  # a new turn, though one round is spent
    answered(loop, "second")
    assert loop.state.finish_reason is FinishReason.STOP
    assert [m.content for m in loop.messages] == ["one", "first", "two", "second"]


def test_a_session_may_start_empty_and_end_with_no_turn() -> None:
    loop = AgentLoop([], {})
    loop.end_session()
    assert loop.state.finish_reason is FinishReason.STOP and loop.messages == []


def test_the_next_message_is_refused_while_a_turn_runs() -> None:
    loop = AgentLoop([ChatMessage.user("one")], {})
    with pytest.raises(RuntimeError):
        loop.next_message("two", max_rounds=3)


def test_old_turns_are_elided_to_the_budget_but_never_the_message_to_answer() -> None:
    messages = [ChatMessage.user("u" * 400), ChatMessage.assistant("a" * 400), ChatMessage.user("q" * 400)]
    assert elide_turns(messages, 1_000) == 2  # down to three quarters of the budget
    assert [(m.content or "").startswith(ELIDED_PREFIX) for m in messages] == [True, True, False]
    assert sum(message_size(m) for m in messages) <= 750 and messages[-1].content == "q" * 400
    huge = [ChatMessage.user("x" * 5_000)]
    assert elide_turns(huge, 1_000) == 0 and huge[0].content == "x" * 5_000


def test_a_long_session_stays_within_its_transcript_budget() -> None:
    loop = AgentLoop([ChatMessage.user("start")], {}, limits=Limits(transcript_budget=10_000))
    for turn in range(20):
        answered(loop, "a" * 1_500)
        loop.next_message(f"message {turn} " + "m" * 1_500, max_rounds=3)
    assert sum(message_size(m) for m in loop.messages) <= 10_000
    assert loop.messages[-1].content.startswith("message 19")  # type: ignore[union-attr]
    assert loop.state.transcript_epoch > 0  # by-reference copies of the transcript are refreshed


def test_only_a_session_may_start_without_a_prompt() -> None:
    assert AgentRunInput(options=RunOptions(session=True)).transcript() == []
    with pytest.raises(ValueError, match="only a session may start without either"):
        AgentRunInput()
