"""The `AgentRun` workflow: drives `signoff.loop` with activities and human decisions.

It does not know the algorithm; it turns the loop's next action into effects:
`CallModel` → the chat activity, `RunTools` → one tool activity per call,
`AwaitApproval` → a durable wait that the signal or the update satisfies.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RawValue, RetryPolicy, SearchAttributeKey
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutError

with workflow.unsafe.imports_passed_through():
    from pydantic import ValidationError

    from signoff.activities.agent_activities import AgentActivities
    from signoff.activities.models import ChatInput, ChatTurn, PrepareInput, PrepareOutput, ToolInput, ToolOutput
    from signoff.contract import (
        QUERY_EVENTS,
        QUERY_MESSAGES,
        QUERY_PENDING,
        QUERY_SNAPSHOT,
        QUERY_STATUS,
        SIGNAL_APPROVAL,
        STATUS_AWAITING,
        STATUS_FINISHED,
        STATUS_RUNNING,
        UPDATE_APPROVAL,
        WORKFLOW_TYPE,
        AgentRunInput,
        AgentRunResult,
        AgentSnapshotModel,
        ContinuedState,
        DecisionAck,
        RunStatus,
        parse_responses,
    )
    from signoff.loop import AgentLoop, AwaitApproval, DecisionError, Finish, RunTools, unanswered_calls
    from signoff.messages import AgentEvent, ChatMessage, DecisionIgnoredEvent, ToolCall, Usage
    from signoff.workflows.presentation import describe_pending, format_validation_error

SIGNOFF_STATUS = SearchAttributeKey.for_keyword("SignoffStatus")
SIGNOFF_AGENT = SearchAttributeKey.for_keyword("SignoffAgent")
SIGNOFF_PENDING_TOOLS = SearchAttributeKey.for_keyword_list("SignoffPendingTools")
SEARCH_ATTRIBUTE_KEYS = (SIGNOFF_STATUS, SIGNOFF_AGENT, SIGNOFF_PENDING_TOOLS)

# About six minutes of retries (timeouts, 408/409/429/5xx, cut streams), then the run fails
# with the provider's message; Retry-After overrides the interval.
MODEL_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=60), maximum_attempts=10
)
IDEMPOTENT_TOOL_RETRY = RetryPolicy(maximum_attempts=3)
RUN_ONCE = RetryPolicy(maximum_attempts=1)
EVENTS_KEPT = 500


@workflow.defn(name=WORKFLOW_TYPE)
class AgentRun:
    @workflow.init
    def __init__(self, raw_input: Any) -> None:
        # Built here, not in run(), so a decision arriving with the first task (as after
        # continue-as-new) finds the loop. Bad input is reported by run(), as a failed run.
        self._status = STATUS_RUNNING
        self._events: list[dict[str, Any]] = []
        self._sent = 0  # transcript messages the chat activity's worker already holds
        self._input_error: str | None = None
        self._agent, self._event_seq = "", 0
        self._loop: AgentLoop | None = None
        self._state: ContinuedState | None = None
        try:
            self._input = AgentRunInput.model_validate(raw_input)
        except ValidationError as exc:
            self._input_error = format_validation_error(exc)
            return
        self._agent = self._input.agent
        opts = self._input.options
        fresh = AgentLoop(self._input.transcript(), {}, opts.max_rounds, opts.approval_timeout_seconds)
        self._state = self._input.continued or ContinuedState(loop=fresh.state)
        self._loop = AgentLoop.from_state(self._state.loop)
        self._event_seq = self._state.event_seq

    @workflow.run
    async def run(self, raw_input: Any) -> AgentRunResult:
        if self._input_error is not None:  # a failed run, never a workflow task retried forever
            raise ApplicationError(self._input_error, type="InvalidInput", non_retryable=True)
        loop, run_input = self._loop, self._input
        assert loop is not None
        workflow.upsert_search_attributes([SIGNOFF_AGENT.value_set(self._agent)])
        if run_input.continued is None:
            await self._start(run_input)
        try:
            while not isinstance(action := self._next(), Finish):
                if isinstance(action, RunTools):
                    await self._run_tools(action.calls)
                elif self._should_continue_as_new():
                    await self._continue_as_new(run_input)
                elif isinstance(action, AwaitApproval):
                    await self._await_decisions()
                else:
                    turn = await self._chat(run_input)
                    loop.apply_model_turn(turn.response, turn.gated, workflow.now())
        except asyncio.CancelledError:
            loop.cancel(workflow.now())
            self._next()
        self._set_status(STATUS_FINISHED, [])
        await workflow.wait_condition(workflow.all_handlers_finished)
        return self._result()

    # --- start and steps ---------------------------------------------------------

    async def _start(self, run_input: AgentRunInput) -> None:
        """Reopen a resumed transcript's unanswered calls, applying the input's decisions.

        The agent is snapshotted by the first model turn, or here, by the prepare
        activity, when there are open calls to gate."""
        assert self._loop is not None and self._state is not None
        open_calls = unanswered_calls(self._loop.messages)
        gated: list[str] = []
        if open_calls:
            prepared: PrepareOutput = await self._activity(
                workflow.execute_local_activity_method,
                AgentActivities.prepare,
                PrepareInput(agent=run_input.agent, open_calls=open_calls),
                start_to_close_timeout=timedelta(seconds=30),
            )
            self._adopt_snapshot(self._state, prepared.snapshot, prepared.snapshot_digest)
            gated = prepared.gated
        try:
            self._loop.resume(run_input.options.tool_approval_responses, gated, workflow.now())
        except DecisionError as exc:
            raise ApplicationError(f"invalid tool_approval_responses: {exc}", type="InvalidInput", non_retryable=True)

    def _adopt_snapshot(self, state: ContinuedState, snapshot: AgentSnapshotModel, digest: str) -> None:
        state.snapshot, state.snapshot_digest = snapshot, digest
        state.loop.tools = snapshot.descriptions

    async def _chat(self, run_input: AgentRunInput) -> ChatTurn:
        assert self._loop is not None and self._state is not None
        transcript = self._loop.messages
        chat_input = ChatInput(
            agent=self._agent,
            snapshot_digest=self._state.snapshot_digest or None,
            base=self._sent,
            messages=transcript[self._sent :],
            model=run_input.options.model,
            temperature=run_input.options.temperature,
        )
        turn: ChatTurn = await self._activity(
            workflow.execute_activity_method,
            AgentActivities.chat,
            chat_input,
            start_to_close_timeout=timedelta(minutes=10),
            heartbeat_timeout=timedelta(seconds=30),
            retry_policy=MODEL_RETRY,
        )
        if turn.snapshot is not None and turn.snapshot_digest:
            self._adopt_snapshot(self._state, turn.snapshot, turn.snapshot_digest)
        self._sent = len(transcript) + 1  # the worker keeps the model's answer as well
        return turn

    async def _run_tools(self, calls: list[ToolCall]) -> None:
        assert self._loop is not None
        results = await asyncio.gather(*(self._tool(call) for call in calls))
        for call, content in zip(calls, results):
            self._loop.apply_tool_result(call.id, content)

    async def _tool(self, call: ToolCall) -> str:
        snapshot = self._state.snapshot if self._state else None
        idempotent = snapshot.idempotent.get(call.name, False) if snapshot else False
        try:
            output: ToolOutput = await workflow.execute_activity_method(
                AgentActivities.tool,
                ToolInput(agent=self._agent, call=call),
                start_to_close_timeout=timedelta(minutes=30),
                heartbeat_timeout=timedelta(seconds=10),
                retry_policy=IDEMPOTENT_TOOL_RETRY if idempotent else RUN_ONCE,
            )
        except ActivityError as exc:
            if not idempotent and isinstance(exc.cause, TimeoutError):
                return (
                    "Error: outcome unknown: the worker running this tool stopped before it reported. "
                    "It was not run again; check its effects before retrying."
                )
            return f"Error: {_root_message(exc)}"
        return output.content

    async def _activity(self, start: Any, fn: Any, arg: Any, **kwargs: Any) -> Any:
        """Run an activity; a non-retryable failure fails the run with the cause's message."""
        try:
            return await start(fn, arg, **kwargs)
        except ActivityError as exc:
            cause = exc.cause
            if isinstance(cause, ApplicationError):
                raise ApplicationError(cause.message, *cause.details, type=cause.type, non_retryable=True) from exc
            raise ApplicationError(_root_message(exc), non_retryable=True) from exc

    # --- waiting for people ------------------------------------------------------

    async def _await_decisions(self) -> None:
        loop = self._loop
        assert loop is not None
        self._set_status(STATUS_AWAITING, loop.pending_requests())
        while loop.pending_requests() and not self._should_continue_as_new():
            deadline = loop.next_deadline()
            timeout = max(deadline - workflow.now(), timedelta(0)) if deadline else None
            try:
                await workflow.wait_condition(
                    lambda: not loop.pending_requests() or self._should_continue_as_new(), timeout=timeout
                )
            except asyncio.TimeoutError:
                assert deadline is not None
                loop.expire_due(max(workflow.now(), deadline))
            self._publish()
        self._set_status(STATUS_RUNNING, [])

    @workflow.signal(name=SIGNAL_APPROVAL)
    def tool_approval(self, payload: RawValue) -> None:
        """Record decisions; what cannot be applied is recorded as an event, never lost."""
        try:
            data = workflow.payload_converter().from_payload(payload.payload, None)
        except Exception as exc:  # undecodable bytes: still say so in the events
            self._record(DecisionIgnoredEvent(reason=f"undecodable payload: {exc}"))
            return
        try:
            responses = parse_responses(data)
        except ValidationError as exc:
            self._record(DecisionIgnoredEvent(reason=format_validation_error(exc), payload=data))
            return
        for response in responses:
            try:
                self._decide([response])
            except DecisionError as exc:
                self._record(DecisionIgnoredEvent(reason=str(exc), payload=response.model_dump()))

    @workflow.update(name=UPDATE_APPROVAL)
    def submit_tool_approval(self, payload: Any) -> DecisionAck:
        """Apply decisions that the validator accepted; say what is still pending."""
        accepted = self._decide(parse_responses(payload))
        assert self._loop is not None
        return DecisionAck(accepted=accepted, pending=[r.call_id for r in self._loop.pending_requests()])

    @submit_tool_approval.validator
    def _validate_tool_approval(self, payload: Any) -> None:
        pending = [r.call_id for r in self._loop.pending_requests()] if self._loop else []
        try:
            responses = parse_responses(payload)
        except ValidationError as exc:
            raise ValueError(f"{format_validation_error(exc)} (pending call ids: {', '.join(pending) or 'none'})")
        if self._loop is None:
            raise DecisionError("the run has not started yet", [])
        self._loop.check_decisions(responses)

    def _decide(self, responses: list) -> list[str]:
        if self._loop is None:
            raise DecisionError("the run has not started yet", [])
        accepted = self._loop.decide(responses, workflow.now())
        self._publish()
        return accepted

    # --- queries -----------------------------------------------------------------

    @workflow.query(name=QUERY_PENDING)
    def pending_approvals(self) -> list[dict[str, Any]]:
        return [r.model_dump(mode="json") for r in self._loop.pending_requests()] if self._loop else []

    @workflow.query(name=QUERY_STATUS)
    def status(self) -> RunStatus:
        loop = self._loop
        return RunStatus(
            status=self._status,
            agent=self._agent,
            round=loop.state.round if loop else 0,
            pending=loop.pending_requests() if loop else [],
            finish_reason=loop.state.finish_reason if loop else None,
            usage=loop.state.usage if loop else Usage(),
            event_seq=self._event_seq,
        )

    @workflow.query(name=QUERY_EVENTS)
    def events(self, since: int = 0) -> list[dict[str, Any]]:
        return [e for e in self._events if e["seq"] >= since]

    @workflow.query(name=QUERY_MESSAGES)
    def messages(self) -> list[ChatMessage]:
        return self._loop.messages if self._loop else []

    @workflow.query(name=QUERY_SNAPSHOT)
    def agent_snapshot(self) -> AgentSnapshotModel | None:
        """The agent as this run started with it (instructions, tool specs)."""
        return self._state.snapshot if self._state else None

    # --- bookkeeping ---------------------------------------------------------------

    def _next(self) -> Any:
        assert self._loop is not None
        self._publish()
        return self._loop.next_action()

    def _publish(self) -> None:
        if self._loop is not None:
            for event in self._loop.drain_events():
                self._record(event)

    def _record(self, event: AgentEvent) -> None:
        self._events.append({"seq": self._event_seq, **event.model_dump(mode="json")})
        self._event_seq += 1
        del self._events[:-EVENTS_KEPT]

    def _set_status(self, status: str, pending: list) -> None:
        """Record the status; advertise a wait in search attributes, and only a wait.

        `SignoffStatus`/`SignoffPendingTools` are set while the run waits for people and
        removed when it stops waiting: each upsert is a visibility write, the largest cost
        of a run at scale (bench/README.md), and a closed run's state is its ExecutionStatus.
        The `status` query reports every state.
        """
        waiting = status == STATUS_AWAITING
        if waiting or self._status == STATUS_AWAITING:
            tools = sorted({r.name for r in pending})
            workflow.upsert_search_attributes(
                [SIGNOFF_STATUS.value_set(status), SIGNOFF_PENDING_TOOLS.value_set(tools)]
                if waiting
                else [SIGNOFF_STATUS.value_unset(), SIGNOFF_PENDING_TOOLS.value_unset()]
            )
            workflow.set_current_details(describe_pending(workflow.info().workflow_id, pending))
        self._status = status

    def _should_continue_as_new(self) -> bool:
        return workflow.info().is_continue_as_new_suggested()

    async def _continue_as_new(self, run_input: AgentRunInput) -> None:
        await workflow.wait_condition(workflow.all_handlers_finished)
        assert self._loop is not None and self._state is not None
        self._publish()
        carried = self._state.model_copy(update={"loop": self._loop.state, "event_seq": self._event_seq})
        workflow.continue_as_new(run_input.model_copy(update={"continued": carried}))

    def _result(self) -> AgentRunResult:
        assert self._loop is not None
        s = self._loop.state
        text = next((m.content for m in reversed(s.messages) if m.role == "assistant" and m.content), None)
        assert s.finish_reason is not None
        return AgentRunResult(
            finish_reason=s.finish_reason,
            text=text,
            messages=s.messages,
            rounds=s.round,
            usage=s.usage,
            approvals=s.approvals,
        )


def _root_message(exc: BaseException) -> str:
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return getattr(exc, "message", None) or str(exc)
