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
imports nothing that does.

`AgentLoop` is composed of small parts over one `LoopState` (signoff/loop/state.py), each
a file of its own: `Rounds` (rounds.py) opens, answers and closes a round and holds the
events; `Decisions` (decisions.py) settles waiting calls (decisions, grants, audit
records); `Timers` (timers.py) fires deadlines, reminders and escalations; resume.py says
which calls a resumed transcript reopens. This class owns the round's rules (which call
is asked about, settled at once, or run) and is the one face drivers see. Who may decide
is `signoff.approval.authority` (over a `signoff.approval.people.Person`), the audit
chain `signoff.approval.audit`, the transcript budget `signoff.loop.budget`.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any

from signoff.approval.authority import Decider, Decision
from signoff.approval.people import Person
from signoff.approval.policy import ApprovalPolicy
from signoff.approval.requests import ApprovalRecord, Grant, InputAsked, ToolApprovalRequest, ToolApprovalResponse
from signoff.errors import DecisionError
from signoff.loop.actions import Action, AwaitApproval, CallModel, Fail, Finish, RunTools
from signoff.loop.budget import elide_to_budget, elide_turns
from signoff.loop.decisions import DENIED_WITHOUT_REASON, Decisions
from signoff.loop.limits import Limits, cap_text
from signoff.loop.resume import reopen, starter, unanswered_calls
from signoff.loop.rounds import Rounds
from signoff.loop.state import DEFAULT_MAX_ROUNDS, CallStatus, LoopState, PendingCall
from signoff.loop.timers import Timers
from signoff.messages import (
    AgentEvent,
    ChatMessage,
    ChatResponse,
    DecisionIgnoredEvent,
    FinishReason,
    TextEvent,
    ToolCall,
)

CANCELLED_REASON = "Run cancelled"
__all__ = [
    "CANCELLED_REASON",
    "DENIED_WITHOUT_REASON",
    "EDIT_NOTE_CHARS",
    "Action",
    "AgentLoop",
    "AwaitApproval",
    "CallModel",
    "Fail",
    "Finish",
    "RunTools",
    "answer_note",
    "edit_note",
    "unanswered_calls",
]


class AgentLoop:
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
        state = LoopState(
            messages=list(messages),
            tools=dict(tools),
            policies=dict(policies or {}),
            limits=limits or Limits(),
            max_rounds=max_rounds,
            approval_timeout_seconds=approval_timeout_seconds,
            max_total_tokens=max_total_tokens,
            requested_by=requested_by,
        )
        self._compose(state)

    @classmethod
    def from_state(cls, state: LoopState) -> AgentLoop:
        """The loop a carried state describes (a run continued as new)."""
        loop = cls.__new__(cls)
        loop._compose(state)
        return loop

    def _compose(self, state: LoopState) -> None:
        """The parts, over one state: each sees the others only through what it is given."""
        self._rounds = Rounds(state)
        self._decisions = Decisions(self._rounds)
        self._timers = Timers(self._rounds, self._decisions)

    def adopt_agent(self, tools: Mapping[str, str], policies: Mapping[str, ApprovalPolicy], limits: Limits) -> None:
        """Take the run's snapshot of the agent: its tools, their policies, its limits."""
        self.state.tools, self.state.policies, self.state.limits = dict(tools), dict(policies), limits

    # --- reading ---------------------------------------------------------------

    @property
    def state(self) -> LoopState:
        """Everything the loop knows (serialisable: a run continues as new with it)."""
        return self._rounds.state

    @property
    def messages(self) -> list[ChatMessage]:
        """The transcript: answered tool messages of the open round, in call order."""
        return self._rounds.messages

    def pending_requests(self) -> list[ToolApprovalRequest]:
        return self.state.requests()

    def live_grants(self, now: datetime) -> list[Grant]:
        return [g for g in self.state.grants if g.live(now)]

    def drain_events(self) -> list[AgentEvent]:
        events, self._rounds.events = self._rounds.events, []
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
        entry = self.state.entry(call_id)
        return entry.approval if entry else None

    def evidence_of(self, call_id: str) -> list[str]:
        """The signed decisions that approved a ready call (empty: none were signed)."""
        entry = self.state.entry(call_id)
        return list(entry.tokens) if entry else []

    def delegations_of(self, call_id: str) -> list[str | None]:
        """The delegation each of `evidence_of(call_id)` was sent under (by position; None: none)."""
        entry = self.state.entry(call_id)
        return list(entry.delegations) if entry else []

    def request_of(self, call_id: str) -> str | None:
        """The request instance a ready call was asked as (`binding.request`; None: none)."""
        entry = self.state.entry(call_id)
        binding = entry.request.binding if entry and entry.request else None
        return binding.request if binding else None

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
        drawn: str | None = None,
    ) -> None:
        """Record one model turn. `gated`: ids of the calls whose tool needs approval;
        `previews`: what those calls would do, by call id; `drawn`: a value the driver drew
        for this turn (as it gives `now`), from which each request's `binding.request` is
        derived: a durable driver draws a new one for every turn, so no two requests share
        it (None: requests carry none)."""
        s = self.state
        _expect(isinstance(self.next_action(), CallModel), "apply_model_turn")
        s.round += 1
        s.usage = s.usage + response.usage
        message = response.assistant_message()
        s.messages.append(message)
        if message.content and not text_streamed:
            self._rounds.emit(TextEvent(text=message.content))
        if not message.tool_calls:
            reason = response.finish_reason
            self._rounds.finish(FinishReason.STOP if reason is FinishReason.TOOL_CALLS else reason)
            return
        self._open_round(message.tool_calls, set(gated), now, previews=previews or {}, drawn=drawn)

    def apply_tool_result(self, call_id: str, content: str) -> None:
        """Record a tool's message text (`Error: ...` for a failed tool)."""
        entry = self.state.entry(call_id)
        _expect(entry is not None and entry.status is CallStatus.READY, f"result for {call_id!r}")
        assert entry is not None
        limit = self.state.limits.max_tool_output
        self._rounds.answer(entry, cap_text(content, limit) + edit_note(entry.approval) + answer_note(entry))

    def apply_input_request(self, call_id: str, asked: InputAsked, now: datetime, drawn: str | None = None) -> None:
        """Record that a ready call's MCP server asked a question instead of answering
        (`input_required`): the call waits for a person's answer (a request of kind `input`).
        `drawn`: as for `apply_model_turn`, a value the driver drew for this request."""
        entry = self.state.entry(call_id)
        _expect(entry is not None and entry.status is CallStatus.READY, f"input request for {call_id!r}")
        assert entry is not None
        self._rounds.ask_input(entry, asked, now, drawn)

    def answer_of(self, call_id: str) -> tuple[InputAsked, dict[str, Any], list[str]] | None:
        """For a ready call whose server's question a person answered: the question (with the
        server's state), the MCP `ElicitResult` to send back, and the signed answer (tokens)."""
        entry = self.state.entry(call_id)
        if entry is None or entry.asked is None or entry.answer is None:
            return None
        return entry.asked, dict(entry.answer), list(entry.answer_tokens)

    def answer_record_of(self, call_id: str) -> ApprovalRecord | None:
        """The audit record of the answer a ready call goes back to its server with (None: none)."""
        entry = self.state.entry(call_id)
        return entry.answered if entry else None

    def cancel(self, now: datetime) -> None:
        """Deny what waits, answer what has not run, and finish `cancelled`."""
        for entry in self.state.pending:
            if entry.status in (CallStatus.AWAITING, CallStatus.EXPIRED):
                self._decisions.settle(entry, ToolApprovalResponse.deny(entry.call.id, CANCELLED_REASON), now)
            if entry.status is CallStatus.READY:
                self._rounds.answer(entry, f"Rejected: {CANCELLED_REASON}")
        self._rounds.finish(FinishReason.CANCELLED)

    def _open_round(
        self,
        calls: list[ToolCall],
        gated: set[str],
        now: datetime,
        *,
        previews: Mapping[str, str],
        answered: Mapping[str | None, str] | None = None,
        drawn: str | None = None,
    ) -> None:
        """Open a round: calls already answered keep their answer, invalid ones answer
        `Error: ...`, gated ones wait (unless a live grant settles them), the rest are
        ready to run."""
        answered = answered or {}
        for entry in self._rounds.open(calls, answered):
            call = entry.call
            if call.id in answered:
                self._rounds.settle(entry, answered[call.id], emit=False)
            elif problem := self._rounds.invalid(call):
                self._rounds.settle(entry, f"Error: {problem}")
            elif call.id in gated:
                self._rounds.ask(entry, now, previews.get(call.id), drawn)
                self._decisions.apply_grants(entry, now)
        self._rounds.close_if_answered()

    # --- sessions ----------------------------------------------------------------

    def next_message(self, text: str, max_rounds: int) -> None:
        """A session's next turn: the user's `text` ends the transcript and the model is asked
        again, for at most `max_rounds` more rounds. The transcript is kept within its budget
        (`signoff.loop.budget`: old tool results, then old turns' texts, are elided).

        Raises:
            RuntimeError: the loop has not settled (a call is open, or the run must fail).
        """
        s = self.state
        _expect(not s.pending and s.failure is None and (s.finish_reason is not None or not s.messages), "next_message")
        s.messages.append(ChatMessage.user(text))
        s.finish_reason = None
        s.max_rounds = s.round + max_rounds
        budget = s.limits.transcript_budget
        if elide_to_budget(s.messages, budget) + elide_turns(s.messages, budget):
            s.transcript_epoch += 1

    def end_session(self) -> None:
        """End a session between turns: it finishes as its last turn did (`stop` if it had none)."""
        _expect(not self.state.pending and self.state.failure is None, "end_session")
        self._rounds.finish(FinishReason.STOP)

    def tokens_used_up(self) -> bool:
        """The run has used its `max_total_tokens`."""
        s = self.state
        return s.max_total_tokens is not None and s.usage.total_tokens >= s.max_total_tokens

    # --- decisions and timers ----------------------------------------------------

    def decide(self, decisions: Sequence[ToolApprovalResponse | Decision], now: datetime) -> list[str]:
        """Apply decisions; returns the call ids they decided (or voted on).

        Raises:
            DecisionError: nothing is pending, an id is unknown or already decided, one
                call is decided twice, a digest does not match, or a decider may not
                decide a call under its policy. Nothing is applied then.
        """
        return self._decisions.decide(decisions, now)

    def check_decisions(
        self,
        decisions: Sequence[ToolApprovalResponse | Decision],
        *,
        authority: bool = True,
        now: datetime | None = None,
    ) -> list[tuple[str, Decision]]:
        """Validate decisions without applying them; returns (call id, decision) pairs.

        With `authority=False` only what needs no identity is checked (ids, digests): an
        update validator does that for a decision whose token is verified later. `now`:
        when they arrive (for `min_review_seconds`)."""
        return self._decisions.check(decisions, authority=authority, now=now)

    def revoke_grant(self, grant_id: str) -> Grant:
        """End a grant at once; returns it.

        Raises:
            DecisionError: no grant has that id.
        """
        return self._decisions.revoke_grant(grant_id)

    def unknown_grant(self, grant_id: str) -> str | None:
        """Why `grant_id` names no grant of this run (with the ids it has), or None."""
        return self._decisions.unknown_grant(grant_id)

    def due(self, now: datetime) -> None:
        """Fire what is due by `now`: reminders, escalations, and deadlines (with each
        call's `on_timeout` outcome)."""
        self._timers.due(now)

    def next_wakeup(self) -> datetime | None:
        """The earliest deadline, reminder or escalation of the waiting calls."""
        return self._timers.next_wakeup()

    def check_extension(self, call_id: str, seconds: float, decider: Decider) -> ToolApprovalRequest:
        """Validate an `extend_deadline`; returns the request it would move."""
        return self._timers.check_extension(call_id, seconds, decider)

    def check_rearm(self, call_id: str, seconds: float | None, decider: Decider) -> ToolApprovalRequest:
        """Validate a `rearm_tool_call`; returns the expired request it would re-open."""
        return self._timers.check_rearm(call_id, seconds, decider)

    def rearm(
        self, call_id: str, seconds: float | None, decider: Decider, now: datetime, drawn: str | None = None
    ) -> ToolApprovalRequest:
        """Re-open an expired call (`on_timeout = "hold"`) as a new request, with a new
        deadline (`seconds`, else its policy's) and binding (`drawn`: as for
        `apply_model_turn`); returns it.

        Raises:
            DecisionError: the call is not expired, `seconds` is out of range, or the decider
                may not decide it.
        """
        return self._timers.rearm(call_id, seconds, decider, now, drawn)

    def extend_deadline(self, call_id: str, seconds: float, decider: Decider) -> datetime:
        """Move a waiting call's deadline `seconds` later; returns the new deadline."""
        return self._timers.extend_deadline(call_id, seconds, decider)

    # --- resuming a transcript -------------------------------------------------

    def resume(
        self,
        responses: Sequence[ToolApprovalResponse],
        gated: Collection[str],
        now: datetime,
        requester: Person | None = None,
        previews: Mapping[str, str] | None = None,
        drawn: str | None = None,
    ) -> None:
        """Stateless resume: reopen the unanswered calls of the last assistant message.

        Tool messages already after that message count as answers. `responses` are the
        requester's decisions on calls among the rest; each obeys the call's policy like
        any decision, and one the policy does not allow is recorded as ignored and the
        call asked for as usual. `requester`: who asked for the run, as verified (None:
        only the name `requested_by` claims); `drawn`: as for `apply_model_turn`.

        Raises:
            DecisionError: a response names a call that is not open.
        """
        reopened = reopen(self.state.messages, responses)
        if reopened is None:
            return
        self.state.messages = reopened.messages
        gated = set(gated) | reopened.decided
        self._open_round(reopened.calls, gated, now, previews=previews or {}, answered=reopened.answers, drawn=drawn)
        for response in responses:
            try:
                self.decide([Decision(response, starter(response, requester, self.state.requested_by))], now)
            except DecisionError as exc:
                self._rounds.emit(DecisionIgnoredEvent(reason=f"tool_approval_responses: {exc}"))


EDIT_NOTE_CHARS = 2_000
"""The most of a call's edited arguments its tool message shows (the audit keeps them whole)."""


def edit_note(record: ApprovalRecord | None) -> str:
    """What the model is told of a call a person approved with edited arguments: that they
    were edited, by whom, and what ran (empty for a call that ran as the model asked)."""
    if record is None or record.edited_arguments is None:
        return ""
    shown = cap_text(json.dumps(record.edited_arguments, ensure_ascii=False), EDIT_NOTE_CHARS, "edited arguments")
    who = record.approver or "the approver"
    return f"\n[signoff: {who} edited this call's arguments before it ran; it ran with {shown}]"


def answer_note(entry: PendingCall) -> str:
    """What the model is told of a call whose MCP server asked a person a question: who answered
    and how (the server's own result, before it, says what it made of that)."""
    record = entry.answered
    if record is None:
        return ""
    did = {"declined": "declined to answer", "cancelled": "dismissed it without answering"}.get(
        record.outcome or "", "answered it"
    )
    asked = cap_text(entry.asked.message if entry.asked else "", EDIT_NOTE_CHARS, "question")
    return f"\n[signoff: the MCP server asked {asked!r}; {record.approver or 'a person'} {did}]"


def _expect(ok: bool, what: str) -> None:
    if not ok:
        raise RuntimeError(f"{what} does not fit the loop's next action")
