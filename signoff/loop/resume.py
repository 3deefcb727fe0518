"""The stateless resume of the original design: which calls a new run reopens, and who decides them.

`AgentLoop.resume` (signoff/loop/agent_loop.py) opens the unanswered calls of the
transcript's last assistant message as a round (`reopen` says which, with the answers the
tool messages after it already give); the start's `tool_approval_responses` decide among
them as the requester (`starter`), under each call's policy like any decision. Pure
functions of the transcript: no state of their own.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from signoff.approval.authority import Decider
from signoff.approval.names import same_name
from signoff.approval.people import Person
from signoff.approval.requests import ToolApprovalResponse
from signoff.errors import DecisionError
from signoff.loop.answer import with_call_ids
from signoff.messages import ChatMessage, ToolCall


@dataclass(frozen=True)
class Reopened:
    """The open calls of a transcript, as a resumed run takes them up.

    Attributes:
        messages: the transcript up to its last assistant message, whose calls are `calls`
            (the tool messages after it are in `answers`).
        calls: that message's calls, each id unique and well formed.
        answers: the tool messages already given, by call id.
        decided: the open calls the start's decisions name (asked about, whatever the
            snapshot says: a decision for an open call counts).
    """

    messages: list[ChatMessage]
    calls: list[ToolCall]
    answers: dict[str | None, str]
    decided: set[str]


def reopen(messages: list[ChatMessage], responses: Sequence[ToolApprovalResponse]) -> Reopened | None:
    """The calls a resumed run reopens, or None when the transcript leaves none open.

    Raises:
        DecisionError: a response names a call that is not open.
    """
    index, calls, answers = _open_message(messages)
    open_ids = [c.id for c in calls if c.id not in answers]
    strangers = [r.call_id for r in responses if r.call_id not in open_ids and r.call_id != "*"]
    if responses and (not open_ids or strangers):
        raise DecisionError(f"tool_approval_responses name calls that are not open: {strangers or '*'}", open_ids)
    if not open_ids:
        return None
    assert index is not None
    return Reopened(
        messages=[*messages[:index], messages[index].model_copy(update={"tool_calls": calls})],
        calls=calls,
        answers=answers,
        decided={r.call_id for r in responses} & set(open_ids),
    )


def misplaced_answer(messages: Sequence[ChatMessage]) -> str | None:
    """Why a tool message of a client's transcript answers no call, or None.

    The providers' rule (OpenAI's, and those that follow it): a tool message answers a call
    of the assistant message before it, once. A transcript that breaks it is refused at start,
    not by the provider after the first model request."""
    expected: set[str | None] = set()
    for index, message in enumerate(messages):
        if message.role != "tool":
            expected = {c.id for c in message.tool_calls or []}
        elif message.tool_call_id in expected:
            expected.discard(message.tool_call_id)
        else:
            return (
                f"messages[{index}] is a tool message for {message.tool_call_id!r}, a call the assistant "
                "message before it does not make or that an earlier tool message already answers"
            )
    return None


def starter(response: ToolApprovalResponse, requester: Person | None, requested_by: str | None) -> Decider:
    """Who decides through the start input: the requester, whatever the response claims.

    Raises:
        DecisionError: the response names someone other than the run's requester.
    """
    if requested_by is None:
        return Decider(requester) if requester is not None else Decider.claimed(response.approver)
    if response.approver and not same_name(response.approver, requested_by):
        raise DecisionError(f"{response.approver!r} is not the requester {requested_by!r}", [])
    return Decider(requester) if requester is not None else Decider.claimed(requested_by)


def unanswered_calls(messages: list[ChatMessage]) -> list[ToolCall]:
    """The calls of a trailing assistant message that have no tool message yet.

    These are what a stateless resume reopens; drivers ask the run's snapshot which
    of them need approval before calling `resume`.
    """
    _, calls, answers = _open_message(messages)
    return [c for c in calls if c.id not in answers]


def _open_message(messages: list[ChatMessage]) -> tuple[int | None, list[ToolCall], dict[str | None, str]]:
    """The trailing assistant message with calls: its index, its calls (each id unique and
    well formed, `signoff.loop.answer`: a transcript from a client is as untrusted as a model's
    answer) and the answers the tool messages after it give, by call id.

    A tool message answers the first call not yet answered that it names, by signoff's id
    or by the id the model gave."""
    index = _last_assistant_with_calls(messages)
    if index is None:
        return None, [], {}
    calls = with_call_ids(messages[index].tool_calls or [], index)
    given: dict[str | None, deque[str]] = {}
    for message in messages[index + 1 :]:
        if message.role == "tool":
            given.setdefault(message.tool_call_id, deque()).append(message.content or "")
    answers: dict[str | None, str] = {}
    for call in calls:
        for name in dict.fromkeys((call.id, call.model_id)):
            if given.get(name):
                answers[call.id] = given[name].popleft()
                break
    return index, calls, answers


def _last_assistant_with_calls(messages: list[ChatMessage]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "assistant":
            return index if message.tool_calls else None
        if message.role != "tool":
            return None
    return None
