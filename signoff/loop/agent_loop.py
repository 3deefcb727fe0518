"""The tool loop with an approval gate, as a pure synchronous state machine.

This is the only place that knows the algorithm (the original `FunctionInvokingChatClient`).
Drivers — the in-process agent and the Temporal workflow — ask `next_action()` and turn
its answer into effects:

    CallModel      send `loop.messages` to the model, then `apply_model_turn(...)`
    RunTools       run these calls, then `apply_tool_result(...)` for each
    AwaitApproval  wait until `decide(...)` (or `due` at `next_wakeup()`, or `cancel`) settles them
    Finish         the run is over, for this reason
    Fail           the run must fail with this message (a policy said `fail_run` on timeout)

Rules: every tool call of an assistant message gets exactly one tool message, in call
order, before the next model request. Calls past the per-turn limit, to an unknown tool,
or with arguments that are not a JSON object answer `Error: ...` without asking anyone.
Calls that need no approval run at once; the rest wait, each under its tool's policy
(who may decide, quorum, deadline, reminders, escalation), unless a live grant settles
them. Approved calls run (optionally with edited arguments); denied ones answer
`Rejected: <reason>`. Each decision is an audit record chained to the one before.

Which calls need approval is an *input* (`gated`): the caller asks the run's snapshot,
so this module stays pure. It reads no clock (callers pass `now`), does no I/O and
imports nothing that does. `AgentLoop` owns the rounds; how a waiting call is settled
(decisions, grants, audit records) is its mixin in `signoff.loop.decisions`, its timers
in `signoff.loop.timers`; the rules of who may decide are `signoff.approval.authority`, the audit
chain `signoff.approval.audit`, the transcript budget `signoff.loop.budget`.

Why over 300 lines: the round's rules above are one algorithm with one invariant (a tool
message per call, in order); split further, each half would have to restate it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime, timedelta

from signoff.approval.digest import arguments_digest
from signoff.approval.policy import DEFAULT_POLICY, ApprovalPolicy
from signoff.approval.requests import (
    ApprovalRecord,
    Binding,
    Grant,
    ToolApprovalRequest,
    ToolApprovalResponse,
    arguments_problem,
    parse_arguments,
)
from signoff.loop.actions import Action, AwaitApproval, CallModel, DecisionError, Fail, Finish, RunTools
from signoff.loop.budget import elide_to_budget
from signoff.loop.decisions import DENIED_WITHOUT_REASON, Decisions
from signoff.loop.limits import Limits, cap_text
from signoff.loop.messages import (
    AgentEvent,
    ApprovalRequestEvent,
    ChatMessage,
    ChatResponse,
    ErrorEvent,
    FinishEvent,
    FinishReason,
    TextEvent,
    ToolCall,
    ToolCallEvent,
    ToolResultEvent,
)
from signoff.loop.resume import Resume, unanswered_calls
from signoff.loop.state import DEFAULT_MAX_ROUNDS, CallStatus, LoopState, PendingCall
from signoff.loop.timers import Timers

CANCELLED_REASON = "Run cancelled"
__all__ = [
    "CANCELLED_REASON",
    "DENIED_WITHOUT_REASON",
    "Action",
    "AgentLoop",
    "AwaitApproval",
    "CallModel",
    "DecisionError",
    "Fail",
    "Finish",
    "RunTools",
    "unanswered_calls",
]


# --- the machine -------------------------------------------------------------------


class AgentLoop(Decisions, Timers, Resume):
    """The tool loop. Drive it with `next_action()` and the `apply_*`/`decide` methods.

    Args:
        messages: the transcript so far (without the agent's instructions).
        tools: known tool names and their descriptions.
        max_rounds: most model requests in this run.
        approval_timeout_seconds: a call's deadline when its policy sets none (None
            waits forever); undecided calls are then denied.
        policies: approval policy by tool name; others: anyone may decide.
        limits: per-turn calls, tool output, transcript and audit budgets.
        max_total_tokens: finish `length` once the run has used this many tokens.
        requested_by: who asked for the run (for `separate_requester`).
    """

    def __init__(
        self,
        messages: list[ChatMessage],
        tools: Mapping[str, str],
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        approval_timeout_seconds: float | None = None,
        *,
        policies: Mapping[str, ApprovalPolicy] | None = None,
        limits: Limits | None = None,
        max_total_tokens: int | None = None,
        requested_by: str | None = None,
    ) -> None:
        if max_rounds < 1:
            raise ValueError("max_rounds must be at least 1")
        self.state = LoopState(
            messages=list(messages),
            tools=dict(tools),
            policies=dict(policies or {}),
            limits=limits or Limits(),
            max_rounds=max_rounds,
            approval_timeout_seconds=approval_timeout_seconds,
            max_total_tokens=max_total_tokens,
            requested_by=requested_by,
        )
        self._events: list[AgentEvent] = []

    @classmethod
    def from_state(cls, state: LoopState) -> AgentLoop:
        loop = cls.__new__(cls)
        loop.state = state
        loop._events = []
        return loop

    def adopt_agent(self, tools: Mapping[str, str], policies: Mapping[str, ApprovalPolicy], limits: Limits) -> None:
        """Take the run's snapshot of the agent: its tools, their policies, its limits."""
        self.state.tools, self.state.policies, self.state.limits = dict(tools), dict(policies), limits

    # --- reading ---------------------------------------------------------------

    @property
    def messages(self) -> list[ChatMessage]:
        """The transcript: answered tool messages of the open round, in call order."""
        answered = [p for p in self.state.pending if p.status is CallStatus.DONE]
        return self.state.messages + [ChatMessage.tool(p.result or "", p.call.id) for p in answered]

    def _cut_answers(self) -> list[ChatMessage]:
        """The tool messages of the calls past the per-turn limit (the last `state.cut` of the open round)."""
        s = self.state
        if not s.cut:
            return []
        calls = s.messages[-1].tool_calls or []
        text = _too_many(s.limits.max_calls_per_turn)
        return [ChatMessage.tool(text, call.id) for call in calls[-s.cut :]]

    def pending_requests(self) -> list[ToolApprovalRequest]:
        return [p.request for p in self._waiting() if p.request]

    def live_grants(self, now: datetime) -> list[Grant]:
        return [g for g in self.state.grants if g.live(now)]

    def drain_events(self) -> list[AgentEvent]:
        events, self._events = self._events, []
        return events

    def next_action(self) -> Action:
        """What the driver must do now: fail, finish, run the ready calls, wait for
        decisions on the waiting ones, or call the model — in that order of precedence."""
        s = self.state
        if s.failure is not None:
            return Fail(s.failure)
        if s.finish_reason is not None:
            return Finish(s.finish_reason)
        ready = [p for p in s.pending if p.status is CallStatus.READY]
        if ready:
            return RunTools([p.call.model_copy(update={"arguments": p.run_arguments}) for p in ready])
        waiting = self.pending_requests()
        if waiting:
            return AwaitApproval(waiting)
        return CallModel(s.round)

    def approval_of(self, call_id: str) -> ApprovalRecord | None:
        """The record that approved a ready call (None if it needs no approval)."""
        entry = self._entry(call_id)
        return entry.approval if entry else None

    def evidence_of(self, call_id: str) -> list[str]:
        """The signed decisions that approved a ready call (empty: none were signed)."""
        entry = self._entry(call_id)
        return list(entry.tokens) if entry else []

    def bind_to(self, workflow_id: str, chain_id: str) -> None:
        """Name the durable run requests are bound to (`ToolApprovalRequest.binding`)."""
        self.state.workflow_id, self.state.chain_id = workflow_id, chain_id

    # --- model turns and tool results ------------------------------------------

    def apply_model_turn(
        self,
        response: ChatResponse,
        gated: Collection[str],
        now: datetime,
        *,
        text_streamed: bool = False,
        previews: Mapping[str, str] | None = None,
    ) -> None:
        """Record one model turn. `gated`: ids of the calls whose tool needs approval;
        `previews`: what those calls would do, by call id."""
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
        self._open_round(message.tool_calls, set(gated), now, previews=previews or {})

    def apply_tool_result(self, call_id: str, content: str) -> None:
        """Record a tool's message text (`Error: ...` for a failed tool)."""
        entry = self._entry(call_id)
        self._expect(entry is not None and entry.status is CallStatus.READY, f"result for {call_id!r}")
        assert entry is not None
        self._answer(entry, cap_text(content, self.state.limits.max_tool_output))

    def cancel(self, now: datetime) -> None:
        """Deny what waits, answer what has not run, and finish `cancelled`."""
        for entry in self.state.pending:
            if entry.status is CallStatus.AWAITING:
                self._settle_decision(entry, ToolApprovalResponse.deny(entry.call.id, CANCELLED_REASON), now)
            if entry.status is CallStatus.READY:
                self._answer(entry, f"Rejected: {CANCELLED_REASON}")
        self._finish(FinishReason.CANCELLED)

    def _open_round(
        self,
        calls: list[ToolCall],
        gated: set[str],
        now: datetime,
        *,
        previews: Mapping[str, str],
        answered: Mapping[str | None, str] | None = None,
    ) -> None:
        """Open a round for the calls within the per-turn limit; those past it are only
        counted (`state.cut`), answered when the round closes: no work per call, however
        many the model sent."""
        answered = answered or {}
        limit = self.state.limits.max_calls_per_turn
        entries = [PendingCall(call=c, status=CallStatus.READY, run_arguments=c.arguments) for c in calls[:limit]]
        self.state.pending, self.state.cut = entries, max(len(calls) - limit, 0)
        if self.state.cut:
            self._emit(
                ErrorEvent(
                    message=f"the model asked for {len(calls):,} tool calls in one turn: the "
                    f"{self.state.cut:,} past the limit of {limit} are answered "
                    f"{_too_many(limit)!r}"
                )
            )
        for entry in entries:
            if entry.call.id not in answered:
                self._emit(ToolCallEvent(call=entry.call))
        for entry in entries:
            call = entry.call
            if call.id in answered:
                self._settle(entry, answered[call.id], emit=False)
            elif problem := self._invalid_call(call):
                self._settle(entry, f"Error: {problem}")
            elif call.id in gated:
                entry.status = CallStatus.AWAITING
                entry.request = self._request(call, now, previews.get(call.id))
                self._emit(ApprovalRequestEvent(request=entry.request.model_copy(deep=True)))
                self._apply_grants(entry, now)
        self._close_round_if_answered()

    def _request(self, call: ToolCall, now: datetime, preview: str | None) -> ToolApprovalRequest:
        policy = self.state.policies.get(call.name, DEFAULT_POLICY)
        timeout = policy.timeout_seconds or self.state.approval_timeout_seconds
        arguments = parse_arguments(call.arguments)
        digest = arguments_digest(arguments)
        s = self.state
        binding = (
            Binding(
                workflow_id=s.workflow_id, chain_id=s.chain_id, call_id=call.id, tool=call.name, arguments_digest=digest
            )
            if s.workflow_id and s.chain_id
            else None
        )
        return ToolApprovalRequest(
            call_id=call.id,
            name=call.name,
            arguments=arguments,
            arguments_digest=digest,
            description=self.state.tools.get(call.name, ""),
            round=max(self.state.round - 1, 0),
            requested_at=now,
            expires_at=now + _secs(timeout) if timeout is not None else None,
            policy=policy,
            preview=preview,
            binding=binding,
        )

    def _invalid_call(self, call: ToolCall) -> str | None:
        if call.name not in self.state.tools:
            known = ", ".join(sorted(self.state.tools)) or "none"
            return f"unknown tool {call.name[:200]!r} (available tools: {known})"
        return arguments_problem(call.name, call.arguments)

    # --- answering and closing ---------------------------------------------------

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
        s.messages = self.messages + self._cut_answers()
        s.pending, s.cut = [], 0
        if elide_to_budget(s.messages, s.limits.transcript_budget):
            s.transcript_epoch += 1
        if s.max_total_tokens is not None and s.usage.total_tokens >= s.max_total_tokens:
            self._finish(FinishReason.LENGTH)
        elif s.round >= s.max_rounds:
            self._finish(FinishReason.MAX_ROUNDS)

    def _finish(self, reason: FinishReason) -> None:
        if self.state.finish_reason is None:
            self.state.finish_reason = reason
            self._emit(FinishEvent(reason=reason, usage=self.state.usage))

    def _waiting(self) -> list[PendingCall]:
        return [p for p in self.state.pending if p.status is CallStatus.AWAITING]

    def _entry(self, call_id: str) -> PendingCall | None:
        return next((p for p in self.state.pending if p.call.id == call_id), None)

    def _emit(self, event: AgentEvent) -> None:
        self._events.append(event)

    @staticmethod
    def _expect(ok: bool, what: str) -> None:
        if not ok:
            raise RuntimeError(f"{what} does not fit the loop's next action")


def _secs(seconds: float) -> timedelta:
    return timedelta(seconds=seconds)


def _too_many(limit: int) -> str:
    return f"Error: too many tool calls in one turn (limit {limit})"
