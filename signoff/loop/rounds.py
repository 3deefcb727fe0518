"""A round of tool calls: opening it, answering its calls, closing it. A part of `AgentLoop`.

The round's invariant: every tool call of an assistant message gets exactly one tool
message, in call order, before the next model request. `Rounds` holds the loop's state
and the events not yet drained; the other parts (`signoff.loop.decisions`,
`signoff.loop.timers`) answer calls and emit events through it, and `AgentLoop` decides
which of its calls are asked about, settled at once, or left to run.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

from signoff.approval.digest import arguments_digest, sha256_hex
from signoff.approval.policy import DEFAULT_POLICY
from signoff.approval.requests import Binding, InputAsked, ToolApprovalRequest, arguments_problem, parse_arguments
from signoff.approval.similar import similar_pattern
from signoff.loop.budget import elide_to_budget
from signoff.loop.state import CallStatus, LoopState, PendingCall
from signoff.messages import (
    AgentEvent,
    ApprovalRequestEvent,
    ChatMessage,
    ErrorEvent,
    FinishEvent,
    FinishReason,
    ToolCall,
    ToolCallEvent,
    ToolResultEvent,
)


class Rounds:
    """The open round over the loop's state, and the events it and the other parts emit."""

    def __init__(self, state: LoopState) -> None:
        self.state = state
        self.events: list[AgentEvent] = []

    def emit(self, event: AgentEvent) -> None:
        self.events.append(event)

    @property
    def messages(self) -> list[ChatMessage]:
        """The transcript: answered tool messages of the open round, in call order."""
        answered = [p for p in self.state.pending if p.status is CallStatus.DONE]
        return self.state.messages + [ChatMessage.tool(p.result or "", p.call.id) for p in answered]

    def open(self, calls: list[ToolCall], answered: Mapping[str | None, str]) -> list[PendingCall]:
        """Open a round for the calls within the per-turn limit, all ready to run; returns
        them. Those past the limit are only counted (`state.cut`) and answered when the
        round closes: no work per call, however many the model sent. `answered`: calls
        that already have their tool message (a resumed transcript's), by call id."""
        s = self.state
        limit = s.limits.max_calls_per_turn
        entries = [PendingCall(call=c, status=CallStatus.READY, run_arguments=c.arguments) for c in calls[:limit]]
        s.pending, s.cut = entries, max(len(calls) - limit, 0)
        if s.cut:
            self.emit(
                ErrorEvent(
                    message=f"the model asked for {len(calls):,} tool calls in one turn: the "
                    f"{s.cut:,} past the limit of {limit} are answered {_too_many(limit)!r}"
                )
            )
        for entry in entries:
            if entry.call.id not in answered:
                self.emit(ToolCallEvent(call=entry.call))
        return entries

    def invalid(self, call: ToolCall) -> str | None:
        """Why a call cannot run whoever approves it (an unknown tool, arguments that are
        not a JSON object), or None."""
        tools = self.state.tools
        if call.name not in tools:
            known = ", ".join(sorted(tools)) or "none"
            return f"unknown tool {call.name[:200]!r} (available tools: {known})"
        return arguments_problem(call.name, call.arguments)

    def ask(self, entry: PendingCall, now: datetime, preview: str | None, drawn: str | None = None) -> None:
        """Make a call wait for a person, under its tool's policy. `drawn`: what the driver
        drew for this turn's requests (`request_instance`)."""
        entry.status = CallStatus.AWAITING
        entry.request = self._request(entry.call, now, preview, drawn)
        self.emit(ApprovalRequestEvent(request=entry.request.model_copy(deep=True)))

    def ask_input(self, entry: PendingCall, asked: InputAsked, now: datetime, drawn: str | None = None) -> None:
        """Make a call that ran wait for a person's answer to its MCP server's question: a
        request of kind `input`, under the tool's policy (deadlines, reminders, who may answer),
        bound to the server's state as well as to the call."""
        entry.status, entry.asked = CallStatus.AWAITING, asked
        entry.answered, entry.answer, entry.answer_tokens = None, None, []
        request = self._request(entry.call, now, None, drawn)
        binding = request.binding.model_copy(update={"state_digest": asked.state_digest()}) if request.binding else None
        entry.request = request.model_copy(
            update={
                "kind": "input",
                "message": asked.message,
                "input_schema": asked.requested_schema,
                "url": asked.url,
                "url_host": asked.url_host(),
                "binding": binding,
                "similar_pattern": None,
            }
        )
        self.emit(ApprovalRequestEvent(request=entry.request.model_copy(deep=True)))

    def answer(self, entry: PendingCall, content: str) -> None:
        """Give a call its tool message, and close the round once every call has one."""
        self.settle(entry, content)
        self.close_if_answered()

    def settle(self, entry: PendingCall, content: str, emit: bool = True) -> None:
        """Give a call its tool message (`emit=False`: one it had already, not news)."""
        entry.status = CallStatus.DONE
        entry.result = content
        if emit:
            self.emit(ToolResultEvent(call_id=entry.call.id, name=entry.call.name, content=content))

    def close_if_answered(self) -> None:
        """Once every call of the open round is answered: append the answers (those past the
        per-turn limit included), keep the transcript within budget, and finish if the
        run's tokens or rounds are used up."""
        s = self.state
        if not s.pending or any(p.status is not CallStatus.DONE for p in s.pending):
            return
        s.messages = self.messages + self._cut_answers()
        s.pending, s.cut = [], 0
        if elide_to_budget(s.messages, s.limits.transcript_budget):
            s.transcript_epoch += 1
        if s.max_total_tokens is not None and s.usage.total_tokens >= s.max_total_tokens:
            self.finish(FinishReason.LENGTH)
        elif s.round >= s.max_rounds:
            self.finish(FinishReason.MAX_ROUNDS)

    def finish(self, reason: FinishReason) -> None:
        """End the run for `reason` (the first reason given stands)."""
        if self.state.finish_reason is None:
            self.state.finish_reason = reason
            self.emit(FinishEvent(reason=reason, usage=self.state.usage))

    def _cut_answers(self) -> list[ChatMessage]:
        """The tool messages of the calls past the per-turn limit (the last `state.cut` of the open round)."""
        s = self.state
        if not s.cut:
            return []
        calls = s.messages[-1].tool_calls or []
        text = _too_many(s.limits.max_calls_per_turn)
        return [ChatMessage.tool(text, call.id) for call in calls[-s.cut :]]

    def _request(self, call: ToolCall, now: datetime, preview: str | None, drawn: str | None) -> ToolApprovalRequest:
        s = self.state
        policy = s.policies.get(call.name, DEFAULT_POLICY)
        timeout = policy.timeout_seconds or s.approval_timeout_seconds
        arguments = parse_arguments(call.arguments)
        digest = arguments_digest(arguments)
        binding = (
            Binding(
                workflow_id=s.workflow_id,
                chain_id=s.chain_id,
                call_id=call.id,
                tool=call.name,
                arguments_digest=digest,
                request=request_instance(drawn, call.id) if drawn else None,
            )
            if s.workflow_id and s.chain_id
            else None
        )
        return ToolApprovalRequest(
            call_id=call.id,
            name=call.name,
            arguments=arguments,
            arguments_digest=digest,
            description=s.tools.get(call.name, ""),
            round=max(s.round - 1, 0),
            requested_at=now,
            expires_at=now + timedelta(seconds=timeout) if timeout is not None else None,
            policy=policy,
            preview=preview,
            binding=binding,
            similar_pattern=similar_pattern(call.name, arguments) if policy.grants else None,
        )


def request_instance(drawn: str, call_id: str) -> str:
    """The `binding.request` of call `call_id` asked in a turn for which the driver drew
    `drawn`: distinct for every call of every turn the driver draws distinctly for."""
    return sha256_hex(f"signoff-request\0{drawn}\0{call_id}")[:32]


def _too_many(limit: int) -> str:
    return f"Error: too many tool calls in one turn (limit {limit})"
