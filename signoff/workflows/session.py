"""A session: a run that, after each answer, waits for the next user message (CONTRACT v4).

A run started with `options.session: true` drives its first turn (its `prompt` or
`messages`, if it has any) as any run does; then, instead of finishing, it waits for the
update `send_message` (`{"text"}`). Each message is the next turn: the loop takes it
(`AgentLoop.next_message`: `max_rounds` counts per turn, the transcript stays within its
budget) and the run drives it like a single run, approvals and all. The update answers when
its turn settles (`TurnAnswer`): `Completed` with the assistant's text, or `AwaitingApproval`
with the calls it waits for; a decision on those continues the turn, whose answer the
`session` query then gives. `end_session` (`{}`) finishes the run between turns with the
usual result.

Waiting between turns is a `wait_condition` without a timeout: no timer, no workflow task
until something arrives. The run continues as new between turns when the server suggests it
(or while a parked turn waits, as any run), never while a `send_message` waits for a turn
still running, and carries `SessionState`. While it moves, `send_message` is refused as
`SessionMoving` (send it again: the next run takes it).

`Session` holds what the handlers and the driver share; the handlers' checks are its
`check_*` methods (update validators: a refusal enters no history).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError
from temporalio import workflow
from temporalio.common import RawValue

from signoff.approval.requests import ToolApprovalRequest
from signoff.contract import (
    SESSION_MOVING,
    STATUS_AWAITING,
    TURN_COMPLETED,
    TURN_ENDED,
    TURN_RUNNING,
    SessionEnd,
    SessionMessage,
    SessionView,
    TurnAnswer,
    unresolvable,
)
from signoff.loop.agent_loop import AgentLoop
from signoff.workflows.refusal import INVALID_INPUT, Refusal
from signoff.workflows.run_input import SessionState, format_validation_error

NOT_A_SESSION = "this run is not a session (start it with options.session: true to send it messages)"


class Session:
    """A session's turns: the message waiting to be taken, and whether the run is between turns."""

    def __init__(self, loop: AgentLoop, enabled: bool, state: SessionState | None = None) -> None:
        self.loop = loop
        self.enabled = enabled
        self.state = state or SessionState()
        self.waiting: Callable[[], list[ToolApprovalRequest]] = loop.pending_requests
        """What the turn waits for: the run's own calls (the workflow adds its sub-agents')."""
        self.inbox: list[str] = []
        self.ended = False
        self.closing = False
        """The run is finishing or failing: a `send_message` waiting for its turn answers now."""
        self.moving = False
        """The run continues as new: messages are refused until the next run takes over."""
        self.answering = 0
        """`send_message` handlers waiting for their turn to settle."""

    @property
    def idle(self) -> bool:
        """Between turns: the loop has settled (its turn finished, or none began) and no message
        waits to be taken. Read from the loop's state, so a handler in the first task of a run
        (as after continue-as-new) sees it before the driver runs."""
        s = self.loop.state
        settled = not s.pending and s.failure is None and (s.finish_reason is not None or not s.messages)
        return settled and not self.inbox

    def carried(self) -> SessionState | None:
        return self.state if self.enabled else None

    # --- where the turn is -------------------------------------------------------------

    def status(self) -> str:
        """`Ended`, `Completed` (between turns), `AwaitingApproval` (a call waits), or `Running`."""
        if self.ended or self.closing:
            return TURN_ENDED
        if self.idle:
            return TURN_COMPLETED
        return STATUS_AWAITING if self.waiting() else TURN_RUNNING

    def may_move(self) -> bool:
        """Whether the run may continue as new now: not while a `send_message` waits for a turn
        still running (it answers first; a turn is at most `max_rounds` rounds)."""
        return not (self.answering and self.status() == TURN_RUNNING)

    def view(self) -> SessionView:
        status = self.status()
        pending = self.waiting() if status == STATUS_AWAITING else []
        return SessionView(status=status, text=self._turn_text(), pending=pending, turn=self.state.turn)

    def answer(self) -> TurnAnswer:
        view = self.view()
        status = view.status if view.status == STATUS_AWAITING else TURN_COMPLETED
        return TurnAnswer(status=status, text=view.text, pending=view.pending)

    def _turn_text(self) -> str | None:
        """The latest assistant text of the turn (since the last user message)."""
        for message in reversed(self.loop.messages):
            if message.role == "user":
                return None
            if message.role == "assistant" and message.content:
                return message.content
        return None

    # --- send_message ----------------------------------------------------------------------

    def check_send(self, payload: RawValue) -> None:
        """The validator of `send_message`."""
        _parsed(SessionMessage, payload)
        self._check_between_turns("send a message")
        if self.loop.tokens_used_up():
            used, most = self.loop.state.usage.total_tokens, self.loop.state.max_total_tokens
            raise Refusal(f"the session has used its max_total_tokens ({used:,} of {most:,}): end it with end_session")

    async def send(self, payload: RawValue) -> TurnAnswer:
        """Take the message as the next turn; answer once that turn settles."""
        self.check_send(payload)  # again: the run may have moved on since the validator ran
        self.inbox.append(_parsed(SessionMessage, payload).text)
        turn = self.state.turn + len(self.inbox)
        self.answering += 1
        try:
            await workflow.wait_condition(lambda: self._settled(turn))
        finally:
            self.answering -= 1
        return self.answer()

    def _settled(self, turn: int) -> bool:
        return self.closing or self.ended or (self.state.turn >= turn and self.status() != TURN_RUNNING)

    def take(self) -> str:
        """The next message, as the next turn (the driver calls this)."""
        self.state.turn += 1
        return self.inbox.pop(0)

    # --- end_session ----------------------------------------------------------------------

    def check_end(self, payload: RawValue) -> None:
        """The validator of `end_session`."""
        _parsed(SessionEnd, payload)
        self._check_between_turns("end the session")

    def end(self, payload: RawValue) -> None:
        self.check_end(payload)
        self.loop.end_session()
        self.ended = True

    def _check_between_turns(self, what: str) -> None:
        if not self.enabled:
            raise Refusal(NOT_A_SESSION)
        if self.ended or self.closing:
            raise Refusal("the session has ended")
        if self.moving:
            raise Refusal("the session is moving to a new run (continue-as-new): send it again", SESSION_MOVING)
        if self.idle:
            return
        waiting = [r.call_id for r in self.waiting()]
        if waiting:
            raise Refusal(
                f"turn {self.state.turn} waits for decisions on {', '.join(waiting)}: decide them "
                f"(submit_tool_approval), then {what} once the turn has answered"
            )
        turn = self.state.turn + len(self.inbox)
        raise Refusal(f"turn {turn} is still running: {what} once it has answered")


def _parsed(model: type[Any], payload: RawValue) -> Any:
    try:
        data = workflow.payload_converter().from_payload(payload.payload)
    except Exception as exc:  # bytes that are not JSON, an unknown encoding
        raise Refusal(f"undecodable payload: {exc}", INVALID_INPUT) from None
    if (problem := unresolvable(data)) is not None:
        raise Refusal(problem, INVALID_INPUT)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise Refusal(format_validation_error(exc), INVALID_INPUT) from None
