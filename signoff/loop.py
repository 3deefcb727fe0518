"""The tool loop with an approval gate, as a pure synchronous state machine.

This is the only place that knows the algorithm (the original
`FunctionInvokingChatClient`). Drivers — the in-process agent and the Temporal
workflow — ask `next_action()` and turn its answer into effects:

    CallModel      send `loop.messages` to the model, then `apply_model_turn(...)`
    RunTools       run these calls, then `apply_tool_result(...)` for each
    AwaitApproval  wait until `decide(...)` (or `expire_due` / `cancel`) settles them
    Finish         the run is over, for this reason

Rules: every tool call of an assistant message gets exactly one tool message, in
call order, before the next model request. Calls that need no approval run at
once; the rest wait until each is decided. Approved calls run (optionally with
edited arguments); denied ones answer `Rejected: <reason>`. An unknown tool or
arguments that are not a JSON object answer `Error: ...` without asking anyone.

Which calls need approval is an *input* (`gated`): the caller asks its registry,
so this module stays pure. It reads no clock (callers pass `now`), does no I/O
and imports nothing that does.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum

from pydantic import BaseModel, Field

from signoff.approvals import ApprovalRecord, ToolApprovalRequest, ToolApprovalResponse, parse_arguments
from signoff.messages import (
    AgentEvent,
    ApprovalDecisionEvent,
    ApprovalRequestEvent,
    ChatMessage,
    ChatResponse,
    FinishEvent,
    FinishReason,
    TextEvent,
    ToolCall,
    ToolCallEvent,
    ToolResultEvent,
    Usage,
)

DEFAULT_MAX_ROUNDS = 10
DENIED_WITHOUT_REASON = "User denied"
CANCELLED_REASON = "Run cancelled"


# --- next actions ------------------------------------------------------------------


@dataclass(frozen=True)
class CallModel:
    round: int


@dataclass(frozen=True)
class RunTools:
    calls: list[ToolCall]
    """Calls to run now, with the arguments to run them with (edited ones included)."""


@dataclass(frozen=True)
class AwaitApproval:
    requests: list[ToolApprovalRequest]


@dataclass(frozen=True)
class Finish:
    reason: FinishReason


Action = CallModel | RunTools | AwaitApproval | Finish


class DecisionError(ValueError):
    """A decision that cannot be applied; the message names the pending call ids."""

    def __init__(self, problem: str, pending: list[str]) -> None:
        self.problem = problem
        self.pending = pending
        shown = ", ".join(pending) if pending else "none"
        super().__init__(f"{problem} (pending call ids: {shown})")


# --- state -------------------------------------------------------------------------


class CallStatus(str, Enum):
    READY = "ready"  # runs without approval, or approved
    AWAITING = "awaiting"  # waits for a human
    DONE = "done"  # has its tool message


class PendingCall(BaseModel):
    call: ToolCall
    status: CallStatus
    request: ToolApprovalRequest | None = None
    run_arguments: str | None = None
    result: str | None = None


class LoopState(BaseModel):
    """Everything the loop knows; serialisable, so a run can continue as new."""

    messages: list[ChatMessage]
    tools: dict[str, str] = Field(default_factory=dict)
    max_rounds: int = DEFAULT_MAX_ROUNDS
    approval_timeout_seconds: float | None = None
    round: int = 0
    usage: Usage = Field(default_factory=Usage)
    pending: list[PendingCall] = Field(default_factory=list)
    approvals: list[ApprovalRecord] = Field(default_factory=list)
    finish_reason: FinishReason | None = None


# --- the machine -------------------------------------------------------------------


class AgentLoop:
    """The tool loop. Drive it with `next_action()` and the `apply_*`/`decide` methods.

    Args:
        messages: the transcript so far (without the agent's instructions).
        tools: known tool names and their descriptions.
        max_rounds: most model requests in this run.
        approval_timeout_seconds: None waits forever; else undecided calls are
            denied once `expire_due(now)` passes their deadline.
    """

    def __init__(
        self,
        messages: list[ChatMessage],
        tools: Mapping[str, str],
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        approval_timeout_seconds: float | None = None,
    ) -> None:
        if max_rounds < 1:
            raise ValueError("max_rounds must be at least 1")
        self.state = LoopState(
            messages=list(messages),
            tools=dict(tools),
            max_rounds=max_rounds,
            approval_timeout_seconds=approval_timeout_seconds,
        )
        self._events: list[AgentEvent] = []

    @classmethod
    def from_state(cls, state: LoopState) -> AgentLoop:
        loop = cls.__new__(cls)
        loop.state = state
        loop._events = []
        return loop

    # --- reading ---------------------------------------------------------------

    @property
    def messages(self) -> list[ChatMessage]:
        """The transcript: answered tool messages of the open round, in call order."""
        answered = [p for p in self.state.pending if p.status is CallStatus.DONE]
        return self.state.messages + [ChatMessage.tool(p.result or "", p.call.id) for p in answered]

    def pending_requests(self) -> list[ToolApprovalRequest]:
        return [p.request for p in self.state.pending if p.status is CallStatus.AWAITING and p.request]

    def drain_events(self) -> list[AgentEvent]:
        events, self._events = self._events, []
        return events

    def next_action(self) -> Action:
        s = self.state
        if s.finish_reason is not None:
            return Finish(s.finish_reason)
        ready = [p for p in s.pending if p.status is CallStatus.READY]
        if ready:
            return RunTools([p.call.model_copy(update={"arguments": p.run_arguments}) for p in ready])
        waiting = self.pending_requests()
        if waiting:
            return AwaitApproval(waiting)
        return CallModel(s.round)

    # --- applying effects --------------------------------------------------------

    def apply_model_turn(
        self, response: ChatResponse, gated: Collection[str], now: datetime, *, text_streamed: bool = False
    ) -> None:
        """Record one model turn. `gated`: ids of the calls whose tool needs approval."""
        s = self.state
        self._expect(isinstance(self.next_action(), CallModel), "apply_model_turn")
        s.round += 1
        s.usage = s.usage + response.usage
        message = response.message.model_copy(update={"role": "assistant"})
        s.messages.append(message)
        if message.content and not text_streamed:
            self._emit(TextEvent(text=message.content))
        if not message.tool_calls:
            reason = response.finish_reason
            self._finish(FinishReason.STOP if reason is FinishReason.TOOL_CALLS else reason)
            return
        self._open_round(message.tool_calls, set(gated), now)

    def apply_tool_result(self, call_id: str, content: str) -> None:
        """Record a tool's message text (`Error: ...` for a failed tool)."""
        entry = self._entry(call_id)
        self._expect(entry is not None and entry.status is CallStatus.READY, f"result for {call_id!r}")
        assert entry is not None
        self._answer(entry, content)

    def decide(self, responses: list[ToolApprovalResponse], now: datetime) -> list[str]:
        """Apply human decisions; returns the call ids decided.

        Raises:
            DecisionError: nothing is pending, an id is unknown or already decided,
                or one call is decided twice in `responses`. Nothing is applied then.
        """
        targets = self.check_decisions(responses)
        for entry_id, response in targets:
            entry = self._entry(entry_id)
            assert entry is not None
            self._apply_decision(entry, response, now, timed_out=False)
        return [entry_id for entry_id, _ in targets]

    def check_decisions(self, responses: list[ToolApprovalResponse]) -> list[tuple[str, ToolApprovalResponse]]:
        """Validate decisions without applying them; returns (call id, response) pairs."""
        waiting = [r.call_id for r in self.pending_requests()]
        if not waiting:
            raise DecisionError("no tool call is awaiting approval", waiting)
        if not responses:
            raise DecisionError("no decision given", waiting)
        targets: list[tuple[str, ToolApprovalResponse]] = []
        for response in responses:
            ids = waiting if response.call_id == "*" else [response.call_id]
            for call_id in ids:
                if any(call_id == seen for seen, _ in targets):
                    if response.call_id == "*":
                        continue
                    raise DecisionError(f"call {call_id!r} is decided twice in one request", waiting)
                if call_id not in waiting:
                    raise DecisionError(self._why_not_pending(call_id), waiting)
                targets.append((call_id, response))
        return targets

    def expire_due(self, now: datetime) -> list[str]:
        """Deny undecided calls whose deadline has passed; returns their ids."""
        expired = []
        for entry in self.state.pending:
            req = entry.request
            if entry.status is CallStatus.AWAITING and req and req.expires_at and req.expires_at <= now:
                reason = f"No decision within {_seconds(self.state.approval_timeout_seconds)}s"
                self._apply_decision(entry, ToolApprovalResponse.deny(entry.call.id, reason), now, timed_out=True)
                expired.append(entry.call.id)
        return expired

    def next_deadline(self) -> datetime | None:
        deadlines = [r.expires_at for r in self.pending_requests() if r.expires_at]
        return min(deadlines) if deadlines else None

    def cancel(self, now: datetime) -> None:
        """Deny what waits, answer what has not run, and finish `cancelled`."""
        for entry in self.state.pending:
            if entry.status is CallStatus.AWAITING:
                denial = ToolApprovalResponse.deny(entry.call.id, CANCELLED_REASON)
                self._apply_decision(entry, denial, now, timed_out=False)
            if entry.status is CallStatus.READY:
                self._answer(entry, f"Rejected: {CANCELLED_REASON}")
        self._finish(FinishReason.CANCELLED)

    def resume(self, responses: list[ToolApprovalResponse], gated: Collection[str], now: datetime) -> None:
        """Stateless resume: reopen the unanswered calls of the last assistant message.

        Tool messages already after that message count as answers. `responses`
        decide calls among the rest; undecided gated calls are asked for as usual.

        Raises:
            DecisionError: a response names a call that is not open.
        """
        s = self.state
        index = _last_assistant_with_calls(s.messages)
        if index is None:
            if responses:
                raise DecisionError("tool_approval_responses given but no tool call awaits an answer", [])
            return
        calls = s.messages[index].tool_calls or []
        answers = {m.tool_call_id: m.content or "" for m in s.messages[index + 1 :] if m.role == "tool"}
        if all(c.id in answers for c in calls):
            if responses:
                raise DecisionError("tool_approval_responses given but every tool call is answered", [])
            return
        s.messages = s.messages[: index + 1]
        # A decision for an open call counts, even where the registry would not ask.
        decided = {r.call_id for r in responses} & {c.id for c in calls if c.id not in answers}
        self._open_round(calls, set(gated) | decided, now, answered=answers)
        if responses:
            self.decide(responses, now)

    # --- internals ---------------------------------------------------------------

    def _open_round(
        self, calls: list[ToolCall], gated: set[str], now: datetime, answered: Mapping[str | None, str] | None = None
    ) -> None:
        answered = answered or {}
        entries = [PendingCall(call=c, status=CallStatus.READY, run_arguments=c.arguments) for c in calls]
        self.state.pending = entries
        for call in calls:
            if call.id not in answered:
                self._emit(ToolCallEvent(call=call))
        for entry in entries:
            call = entry.call
            problem = None if call.id in answered else self._invalid_call(call)
            if call.id in answered:
                self._settle(entry, answered[call.id], emit=False)
            elif problem:
                self._settle(entry, f"Error: {problem}")
            elif call.id in gated:
                entry.status = CallStatus.AWAITING
                entry.request = self._request(call, now)
                self._emit(ApprovalRequestEvent(request=entry.request))
        self._close_round_if_answered()

    def _request(self, call: ToolCall, now: datetime) -> ToolApprovalRequest:
        timeout = self.state.approval_timeout_seconds
        return ToolApprovalRequest(
            call_id=call.id,
            name=call.name,
            arguments=parse_arguments(call.arguments),
            description=self.state.tools.get(call.name, ""),
            round=max(self.state.round - 1, 0),
            requested_at=now,
            expires_at=now + timedelta(seconds=timeout) if timeout is not None else None,
        )

    def _invalid_call(self, call: ToolCall) -> str | None:
        if call.name not in self.state.tools:
            known = ", ".join(sorted(self.state.tools)) or "none"
            return f"unknown tool {call.name!r} (available tools: {known})"
        parsed = parse_arguments(call.arguments)
        if not isinstance(parsed, dict):
            return f"arguments for {call.name} are not a JSON object: {call.arguments!r}"
        return None

    def _apply_decision(
        self, entry: PendingCall, response: ToolApprovalResponse, now: datetime, *, timed_out: bool
    ) -> None:
        request = entry.request
        assert request is not None
        edited = response.arguments if response.approved else None
        record = ApprovalRecord(
            call_id=entry.call.id,
            name=entry.call.name,
            arguments=request.arguments,
            approved=response.approved,
            reason=response.reason,
            approver=response.approver,
            edited_arguments=edited,
            requested_at=request.requested_at,
            decided_at=now,
            timed_out=timed_out,
        )
        self.state.approvals.append(record)
        self._emit(ApprovalDecisionEvent(record=record))
        if response.approved:
            entry.status = CallStatus.READY
            if edited is not None:
                entry.run_arguments = json.dumps(edited)
        else:
            self._answer(entry, f"Rejected: {response.reason or DENIED_WITHOUT_REASON}")

    def _answer(self, entry: PendingCall, content: str) -> None:
        self._settle(entry, content)
        self._close_round_if_answered()

    def _settle(self, entry: PendingCall, content: str, emit: bool = True) -> None:
        entry.status = CallStatus.DONE
        entry.result = content
        if emit:
            self._emit(ToolResultEvent(call_id=entry.call.id, name=entry.call.name, content=content))

    def _close_round_if_answered(self) -> None:
        s = self.state
        if not s.pending or any(p.status is not CallStatus.DONE for p in s.pending):
            return
        s.messages = self.messages
        s.pending = []
        if s.round >= s.max_rounds and s.finish_reason is None:
            self._finish(FinishReason.MAX_ROUNDS)

    def _finish(self, reason: FinishReason) -> None:
        if self.state.finish_reason is None:
            self.state.finish_reason = reason
            self._emit(FinishEvent(reason=reason, usage=self.state.usage))

    def _entry(self, call_id: str) -> PendingCall | None:
        return next((p for p in self.state.pending if p.call.id == call_id), None)

    def _why_not_pending(self, call_id: str) -> str:
        if any(r.call_id == call_id for r in self.state.approvals):
            return f"call {call_id!r} is already decided"
        return f"no pending call with id {call_id!r}"

    def _emit(self, event: AgentEvent) -> None:
        self._events.append(event)

    @staticmethod
    def _expect(ok: bool, what: str) -> None:
        if not ok:
            raise RuntimeError(f"{what} does not fit the loop's next action")


def unanswered_calls(messages: list[ChatMessage]) -> list[ToolCall]:
    """The calls of a trailing assistant message that have no tool message yet.

    These are what a stateless resume reopens; drivers ask their registry which of
    them need approval before calling `resume`.
    """
    index = _last_assistant_with_calls(messages)
    if index is None:
        return []
    answered = {m.tool_call_id for m in messages[index + 1 :] if m.role == "tool"}
    return [c for c in messages[index].tool_calls or [] if c.id not in answered]


def _last_assistant_with_calls(messages: list[ChatMessage]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "assistant":
            return index if message.tool_calls else None
        if message.role != "tool":
            return None
    return None


def _seconds(value: float | None) -> str:
    if value is None:
        return "?"
    return str(int(value)) if float(value).is_integer() else str(value)
