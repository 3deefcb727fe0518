"""The stateless resume of the original design: a new run reopens a transcript's open calls.

A mixin of `AgentLoop` (signoff/loop/agent_loop.py). The unanswered calls of the transcript's last
assistant message are opened as a round; the start's `tool_approval_responses` decide
among them as the requester, under each call's policy like any decision.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime

from signoff.approval.authority import Decider, Decision
from signoff.approval.names import same_name
from signoff.approval.requests import ToolApprovalResponse
from signoff.loop.actions import DecisionError
from signoff.loop.answer import with_call_ids
from signoff.loop.messages import ChatMessage, DecisionIgnoredEvent, ToolCall
from signoff.loop.parts import LoopParts


class Resume(LoopParts):
    """Reopening a transcript's open calls (a mixin of `AgentLoop`)."""

    def resume(
        self,
        responses: Sequence[ToolApprovalResponse],
        gated: Collection[str],
        now: datetime,
        requester: Decider | None = None,
        previews: Mapping[str, str] | None = None,
    ) -> None:
        """Stateless resume: reopen the unanswered calls of the last assistant message.

        Tool messages already after that message count as answers. `responses` are the
        requester's decisions on calls among the rest; each obeys the call's policy like
        any decision, and one the policy does not allow is recorded as ignored and the
        call asked for as usual.

        Raises:
            DecisionError: a response names a call that is not open.
        """
        s = self.state
        index, calls, answers = _open_message(s.messages)
        open_ids = [c.id for c in calls if c.id not in answers]
        strangers = [r.call_id for r in responses if r.call_id not in open_ids and r.call_id != "*"]
        if responses and (not open_ids or strangers):
            raise DecisionError(f"tool_approval_responses name calls that are not open: {strangers or '*'}", open_ids)
        if not open_ids:
            return
        assert index is not None
        s.messages = [*s.messages[:index], s.messages[index].model_copy(update={"tool_calls": calls})]
        # A decision for an open call counts, even where the snapshot would not ask.
        decided = {r.call_id for r in responses} & set(open_ids)
        self._open_round(calls, set(gated) | decided, now, previews=previews or {}, answered=answers)
        for response in responses:
            try:
                self.decide([Decision(response, self._starter(response, requester))], now)
            except DecisionError as exc:
                self._emit(DecisionIgnoredEvent(reason=f"tool_approval_responses: {exc}"))

    def _starter(self, response: ToolApprovalResponse, requester: Decider | None) -> Decider:
        """Who decides through the start input: the requester, whatever the response claims."""
        requested_by = self.state.requested_by
        if requested_by is None:
            return requester or Decider.claimed(response.approver)
        if response.approver and not same_name(response.approver, requested_by):
            raise DecisionError(f"{response.approver!r} is not the requester {requested_by!r}", [])
        return requester or Decider.claimed(requested_by)


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
