"""The `AgentRun` workflow: drives `signoff.loop.agent_loop` with activities and human decisions.

It does not know the algorithm; it turns the loop's next action into effects:
`CallModel` → the chat activity, `RunTools` → one tool activity per call (at most the
run's `max_parallel_tools` at once), `AwaitApproval` → a durable wait that decisions
and the calls' own timers end, `Finish` → the result, `Fail` → a failed run. Long runs
continue as new when the server suggests it, carrying their state.

Its handlers are thin: what people send goes to the decision intake (intake.py, with
tokens verified by verify.py), what the queries answer are views (queries.py). What
the run carries across continue-as-new, and its seal, is run_input.py. Notices
(notifications.py) go out beside all this; the run waits a little for them before it
finishes, continues as new, or fails on an approval deadline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import Any, TypeVar, assert_never

from pydantic import BaseModel
from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.exceptions import TimeoutError as ActivityTimeout

with workflow.unsafe.imports_passed_through():
    from signoff.activities import AgentActivities
    from signoff.activities.models import (
        ApprovalProof,
        ChatInput,
        ChatTurn,
        PrepareInput,
        PrepareOutput,
        Requester,
        ToolAnswerInput,
        ToolInput,
        ToolOutput,
    )
    from signoff.agent.snapshot import RunSnapshot
    from signoff.approval.people import Person
    from signoff.approval.requests import Grant, ToolApprovalRequest
    from signoff.contract import (
        QUERY_AUDIT,
        QUERY_EVENTS,
        QUERY_GRANTS,
        QUERY_MESSAGES,
        QUERY_PENDING,
        QUERY_SESSION,
        QUERY_SNAPSHOT,
        QUERY_STATUS,
        SIGNAL_APPROVAL,
        STATUS_AWAITING,
        STATUS_AWAITING_MESSAGE,
        STATUS_FINISHED,
        STATUS_RUNNING,
        UPDATE_APPROVAL,
        UPDATE_END_SESSION,
        UPDATE_EXTEND_DEADLINE,
        UPDATE_REARM,
        UPDATE_REVOKE_GRANT,
        UPDATE_SEND_MESSAGE,
        WORKFLOW_TYPE,
        AgentRunInput,
        AgentRunResult,
        DeadlineAck,
        DecisionAck,
        RunStatus,
        SessionView,
        TurnAnswer,
    )
    from signoff.errors import DecisionError
    from signoff.loop.actions import Action, AwaitApproval, CallModel, Fail, Finish, RunTools
    from signoff.loop.agent_loop import AgentLoop, unanswered_calls
    from signoff.loop.limits import DEFAULT_PAYLOAD_BUDGET, Limits, size_over, too_large
    from signoff.loop.resume import misplaced_answer
    from signoff.loop.transcript import Sender
    from signoff.messages import AgentEvent, AutoEvaluationEvent, ChatMessage, ToolCall
    from signoff.workflows import activity_options, instances, upgrade, verify  # #20: upgrade = moving to a new version
    from signoff.workflows.auto import AutoEvaluations
    from signoff.workflows.children import SIGNAL_CHILD_PENDING, ChildPending, Children, Reporter, own_view
    from signoff.workflows.feed import RunRecord, advertise_agent
    from signoff.workflows.intake import DecisionIntake, Router
    from signoff.workflows.metrics import RunMetrics
    from signoff.workflows.notifications import Notifier, notice_for
    from signoff.workflows.queries import AuditTrail, run_result, run_status, trail_of
    from signoff.workflows.refusal import INVALID_INPUT, Refusal
    from signoff.workflows.run_input import ContinuedRun, InvalidInput, SessionState, check_seal, decode, worker_seal
    from signoff.workflows.session import Session
    from signoff.workflows.streams import RunStream


T = TypeVar("T", bound=BaseModel)
CHECKS_ANSWERS = "signoff-checks-answers-at-start"
"""Patch: a start transcript whose tool message answers no call fails the run at once (before,
the provider refused it after the first model request)."""
SEALS_STATE = "signoff-seals-continued-state"
CHECKS_STATE = "signoff-checks-continued-state"
"""Patches: runs before v3 continued as new unsealed and adopted state unchecked; their
histories replay without these steps (`workflow.patched`)."""


@workflow.defn(name=WORKFLOW_TYPE)
class AgentRun:
    """One agent run, durable: the loop's state, what it is waiting for, and who may end the wait."""

    @workflow.init
    def __init__(self, raw: RawValue) -> None:
        """The run's state, built before any handler runs, so a decision arriving with the first
        task (as after continue-as-new) finds the loop; bad input is kept for `run` to fail."""
        self._input_error: str | None = None
        self._continued: ContinuedRun | None = None
        self._revision = 0  # bumped by every handler that changes what waits
        self._notifier, self._metrics, self._sender = Notifier(), RunMetrics(), Sender()
        self._snapshot: RunSnapshot | None = None
        self._digest: str | None = None
        self._requester = Requester()
        try:
            given = decode(raw)
        except InvalidInput as exc:
            self._input_error = str(exc)
            self._input, self._loop, self._record = AgentRunInput(prompt=""), AgentLoop([], {}), RunRecord()
            self._session = Session(self._loop, False)
        else:
            self._begin(given)
        self._stream = RunStream(self._continued.stream if self._continued else None)  # streams.py
        self._record.published = self._stream.event
        self._children = Children(self._tree_changed, lambda event: self._on_event(event, self._record.add(event)))
        router = Router(self._split, self._children.waiting_in, self._children.send)
        self._intake = DecisionIntake(self._loop, self._record, self._changed, router)
        self._session.waiting = self._tree_pending  # a turn waits for its sub-agents' calls too
        self._awaiting = False  # in _await_decisions: it keeps the advertised status itself
        self._reporter: asyncio.Task[None] | None = None
        self._auto = AutoEvaluations(self._loop, self._emit, self._changed)

    def _begin(self, given: AgentRunInput | ContinuedRun) -> None:
        """Start from a client's input, or take up the state a continued run carried."""
        if isinstance(given, ContinuedRun):
            self._continued = given
            self._input, self._loop = given.input, AgentLoop.from_state(given.loop)
            self._requester, self._snapshot, self._digest = given.requester, given.snapshot, given.snapshot_digest
            # A new run id (a fresh `Sender`): the model's worker holds nothing of it, so the
            # transcript goes whole once.
            self._record = RunRecord(given.events, given.event_seq)
            self._session = Session(self._loop, given.input.options.session, given.session)
        else:
            options = given.options
            self._input = given
            self._loop = AgentLoop(
                given.transcript(),
                {},
                options.max_rounds,
                options.approval_timeout_seconds,
                max_total_tokens=options.max_total_tokens,
                requested_by=options.requested_by,
            )
            self._requester = Requester(name=options.requested_by)
            self._record = RunRecord()
            self._session = Session(self._loop, options.session, SessionState(turn=1 if self._loop.messages else 0))
        # Requests are bound to this workflow and its chain as the server names them (never as
        # carried state says): what a signed decision must name.
        info = workflow.info()
        self._loop.bind_to(info.workflow_id, info.first_execution_run_id)

    @workflow.run
    async def run(self, raw: RawValue) -> AgentRunResult:
        if self._input_error is not None:  # a failed run, never a workflow task retried forever
            raise Refusal(self._input_error, INVALID_INPUT)
        if self._continued is not None and workflow.patched(CHECKS_STATE):
            await check_seal(self._continued)
        problem = misplaced_answer(self._input.transcript()) if self._continued is None else None
        if problem and workflow.patched(CHECKS_ANSWERS):  # asked only then: no other history gains the marker
            raise Refusal(f"invalid input: {problem}", INVALID_INPUT)
        advertise_agent(self._input.agent, carried=self._continued is not None)
        if self._continued is None:
            await self._start()
        if self._input.sub_agent is not None:  # a child run: what waits in it is listed at the top
            self._reporter = asyncio.create_task(Reporter(self._input.sub_agent, self._tree_pending).run())
        session = self._session
        try:
            if self._loop.messages or not session.enabled:  # a session may start waiting for its first message
                await self._drive()
            if session.enabled:
                await self._converse()
        except asyncio.CancelledError:
            if session.enabled and session.idle:  # cancelled between turns: it finishes `cancelled`
                self._loop.state.finish_reason = None
            self._loop.cancel(workflow.now())
            self._next()
        session.closing = True
        await self._wind_down()
        self._record.set_status(STATUS_FINISHED, [])
        result = run_result(self._loop.state)
        self._checked(result, "the result")
        return result

    async def _drive(self) -> None:
        """Turn the loop's actions into effects until it finishes (history grown long: continue as new)."""
        while True:
            action = self._next()
            match action:
                case Finish():
                    return
                case Fail():
                    self._session.closing = True
                    await self._wind_down()
                    raise ApplicationError(action.message, type="ApprovalTimeout", non_retryable=True)
                case RunTools():
                    await self._run_tools(action.calls)
                case _ if self._session.may_move() and self._should_move():
                    await self._continue_as_new()
                case AwaitApproval():
                    await self._await_decisions()
                case CallModel():
                    await self._chat()
                case _:
                    assert_never(action)

    def _should_move(self) -> bool:
        """History grew long, or the run should move to its deployment's new version (#20)."""
        return workflow.info().is_continue_as_new_suggested() or upgrade.due(self._loop.state)

    async def _converse(self) -> None:
        """A session between turns: wait for the next message (no timer), drive its turn; end
        when `end_session` says so; continue as new between turns when the server suggests it."""
        session = self._session
        while True:
            self._record.set_status(STATUS_AWAITING_MESSAGE, [])
            await workflow.wait_condition(lambda: bool(session.inbox) or session.ended or self._should_move())
            if session.ended:
                return
            if session.inbox:
                text = session.take()
                self._stream.turn_begins()
                self._record.set_status(STATUS_RUNNING, [])
                self._loop.next_message(text, self._input.options.max_rounds)
                await self._drive()
                continue
            session.moving = True
            await self._continue_as_new()

    # --- how people reach the run (intake.py) -----------------------------------------

    @workflow.signal(name=SIGNAL_APPROVAL)
    async def tool_approval(self, payload: RawValue) -> None:
        """Decisions; what cannot be applied is recorded as a `decision_ignored` event. Never fails."""
        await self._intake.signal(payload)

    @workflow.update(name=UPDATE_APPROVAL)
    async def submit_tool_approval(self, payload: RawValue) -> DecisionAck:
        """Decisions the validator accepted; says what they decided and what still waits."""
        return await self._intake.submit(payload)

    @submit_tool_approval.validator
    def _validate_tool_approval(self, payload: RawValue) -> None:
        self._intake.check_submit(payload)

    @workflow.update(name=UPDATE_EXTEND_DEADLINE)
    async def extend_deadline(self, payload: RawValue) -> DeadlineAck:
        """Move a waiting call's deadline later (allowed approvers only)."""
        return await self._intake.extend(payload)

    @extend_deadline.validator
    def _validate_extend_deadline(self, payload: RawValue) -> None:
        self._intake.check_extend(payload)

    @workflow.update(name=UPDATE_REARM)
    async def rearm_tool_call(self, payload: RawValue) -> ToolApprovalRequest:
        """Re-open an expired call (`on_timeout = "hold"`) with a new deadline and binding."""
        return await self._intake.rearm(payload, lambda call_id: instances.draw([call_id]))

    @rearm_tool_call.validator
    def _validate_rearm(self, payload: RawValue) -> None:
        self._intake.check_rearm(payload)

    @workflow.update(name=UPDATE_REVOKE_GRANT)
    def revoke_grant(self, payload: RawValue) -> Grant:
        """End a grant at once; later calls it would have matched wait for a person again."""
        return self._intake.revoke(payload)

    @revoke_grant.validator
    def _validate_revoke_grant(self, payload: RawValue) -> None:
        self._intake.check_revoke(payload)

    @workflow.signal(name=SIGNAL_CHILD_PENDING)
    def child_pending(self, report: ChildPending) -> None:
        """Internal (sub-agents): what waits in a child run this one is running (children.py)."""
        self._children.receive(report)

    @workflow.update(name=UPDATE_SEND_MESSAGE)
    async def send_message(self, payload: RawValue) -> TurnAnswer:
        """A session's next message; answers when its turn settles (session.py)."""
        return await self._session.send(payload)

    @send_message.validator
    def _validate_send_message(self, payload: RawValue) -> None:
        self._session.check_send(payload)

    @workflow.update(name=UPDATE_END_SESSION)
    def end_session(self, payload: RawValue) -> AgentRunResult:
        """End a session between turns; the run finishes with this result."""
        self._session.end(payload)
        self._publish()
        return run_result(self._loop.state)

    @end_session.validator
    def _validate_end_session(self, payload: RawValue) -> None:
        self._session.check_end(payload)

    # --- what the run answers (queries.py) ---------------------------------------------

    @workflow.query(name=QUERY_PENDING)
    def pending_approvals(self) -> list[ToolApprovalRequest]:
        return self._tree_pending()

    @workflow.query(name=QUERY_STATUS)
    def status(self) -> RunStatus:
        status = run_status(self._loop, self._record, self._input.agent, workflow.now())
        status.pending = self._tree_pending()
        return status

    @workflow.query(name=QUERY_EVENTS)
    def events(self, since: int = 0) -> list[dict[str, Any]]:
        return self._record.since(since)

    @workflow.query(name=QUERY_SESSION)
    def session(self) -> SessionView:
        view = self._session.view()
        return view if self._session.enabled else view.model_copy(update={"session": False})

    @workflow.query(name=QUERY_MESSAGES)
    def messages(self) -> list[ChatMessage]:
        return self._loop.messages

    @workflow.query(name=QUERY_SNAPSHOT)
    def agent_snapshot(self) -> dict[str, Any] | None:
        """The agent as this run started with it (instructions, tools, policies, limits),
        every field written out (its payloads in history leave the defaults out)."""
        return None if self._snapshot is None else self._snapshot.model_dump(mode="json")

    @workflow.query(name=QUERY_GRANTS)
    def grants(self) -> list[Grant]:
        return self._loop.state.grants

    @workflow.query(name=QUERY_AUDIT)
    def audit(self) -> AuditTrail:
        return trail_of(self._loop.state)

    # --- starting --------------------------------------------------------------------

    async def _start(self) -> None:
        """Verify who asked, then reopen a resumed transcript's unanswered calls, applying
        the input's decisions under each call's policy."""
        options = self._input.options
        if options.requester_token:
            self._requester = await verify.requester(self._loop, options.requester_token, options.requested_by)
        open_calls = unanswered_calls(self._loop.messages)
        if not open_calls and not options.tool_approval_responses:
            return
        prepared: PrepareOutput = await self._activity(
            AgentActivities.prepare,
            PrepareInput(
                agent=self._input.agent,
                transcript=self._loop.messages,
                open_calls=open_calls,
                requester=self._requester,
            ),
            summary="snapshot the agent; gate the open calls",
            **activity_options.prepare_options(),
        )
        self._adopt(prepared.snapshot, prepared.snapshot_digest, prepared.unavailable)
        try:
            self._loop.resume(
                options.tool_approval_responses,
                prepared.gated,
                workflow.now(),
                self._requester_decider(),
                prepared.previews,
                drawn=instances.draw(prepared.gated),
            )
        except DecisionError as exc:
            raise Refusal(f"invalid tool_approval_responses: {exc}", INVALID_INPUT) from None

    def _requester_decider(self) -> Person | None:
        return self._requester if self._requester.name else None

    def _adopt(self, snapshot: RunSnapshot, digest: str, unavailable: Sequence[AgentEvent] = ()) -> None:
        """Take the run's snapshot; record what it could not include (MCP servers not reached)."""
        self._snapshot, self._digest = snapshot, digest
        self._loop.adopt_agent(snapshot.descriptions, snapshot.policies, snapshot.limits)
        for event in unavailable:
            self._on_event(event, self._record.add(event))

    # --- the model -------------------------------------------------------------------

    async def _chat(self) -> None:
        loop, options = self._loop, self._input.options
        delta = self._sender.delta(loop.messages, loop.state.transcript_epoch)
        if not self._session.enabled:
            self._stream.turn_begins()
        chat_input = ChatInput(
            agent=self._input.agent,
            snapshot_digest=self._digest,
            transcript=delta,
            model=options.model,
            temperature=options.temperature,
            requester=self._requester if self._digest is None else None,
            inherited=link.inherited if (link := self._input.sub_agent) and self._digest is None else None,
            stream_turn=self._stream.model_turn(),
        )
        turn: ChatTurn = await self._activity(
            AgentActivities.chat,
            self._checked(chat_input, "the model's input"),
            summary=f"model turn {loop.state.round + 1}",
            **activity_options.chat_options(),
        )
        if turn.snapshot is not None and turn.snapshot_digest:
            self._adopt(turn.snapshot, turn.snapshot_digest, turn.unavailable)
        self._sender.sent_with_answer(delta, turn.response.assistant_message())
        drawn = instances.draw(turn.gated)
        loop.apply_model_turn(turn.response, turn.gated, workflow.now(), previews=turn.previews, drawn=drawn)

    # --- tools -----------------------------------------------------------------------

    async def _run_tools(self, calls: list[ToolCall]) -> None:
        """Run the ready calls, at most `max_parallel_tools` at once; results in call order. A
        call whose MCP server asked a question instead waits for a person's answer (kind `input`)."""
        limits = self._snapshot.limits if self._snapshot else Limits()
        gate = asyncio.Semaphore(limits.max_parallel_tools)

        async def one(call: ToolCall) -> ToolOutput:
            async with gate:
                if self._loop.answer_of(call.id) is not None:
                    return await self._answer(call)
                return await self._tool(call)

        results = await asyncio.gather(*(one(call) for call in calls))
        for call, output in zip(calls, results, strict=True):
            if output.input is not None:
                self._loop.apply_input_request(call.id, output.input, workflow.now(), instances.draw([call.id]))
            else:
                self._loop.apply_tool_result(call.id, output.content)

    async def _answer(self, call: ToolCall) -> ToolOutput:
        """Send a person's answer to the question the call's MCP server asked (`signoff.tool_answer`):
        retried only as the call itself is (a trusted server's `idempotentHint`)."""
        answered = self._loop.answer_of(call.id)
        assert answered is not None
        asked, answer, tokens = answered
        record = self._loop.answer_record_of(call.id)
        entry = self._snapshot.tool(call.name) if self._snapshot else None
        idempotent = entry.idempotent if entry else False
        answer_input = ToolAnswerInput(
            agent=self._input.agent,
            snapshot_digest=self._digest,
            call=call,
            asked=asked,
            answer=answer,
            record_hash=record.hash if record else "",
            tokens=tokens,
        )
        return await self._tool_activity(
            AgentActivities.tool_answer,
            self._checked(answer_input, f"the answer sent to {call.name}"),
            call,
            idempotent,
        )

    async def _tool(self, call: ToolCall) -> ToolOutput:
        entry = self._snapshot.tool(call.name) if self._snapshot else None
        if entry is not None and entry.sub_agent is not None:  # a child AgentRun (children.py)
            return ToolOutput(content=await self._children.run(call, entry, self._snapshot, self._input))
        idempotent = entry.idempotent if entry else False
        record = self._loop.approval_of(call.id)
        proof = (
            ApprovalProof(
                call_id=call.id,
                arguments_digest=record.arguments_digest,
                record_hash=record.hash,
                request=self._loop.request_of(call.id),
                grants=record.grant_ids(),
            )
            if (record)
            else None
        )
        tool_input = ToolInput(
            agent=self._input.agent,
            snapshot_digest=self._digest,
            call=call,
            approval=proof,
            tokens=self._loop.evidence_of(call.id) if record else [],
            delegations=self._loop.delegations_of(call.id) if record else [],
            requester_token=self._input.options.requester_token if record else None,
        )
        return await self._tool_activity(
            AgentActivities.tool, self._checked(tool_input, f"the input of {call.name}"), call, idempotent
        )

    async def _tool_activity(
        self, method: Callable[[AgentActivities, T], Awaitable[ToolOutput]], input: T, call: ToolCall, idempotent: bool
    ) -> ToolOutput:
        """Run one of the tool's activities for `call` (`signoff.tool`, `signoff.tool_answer`); a
        failure is the model's `Error: ...`, and a non-idempotent call whose worker went silent is
        the outcome-unknown note (it was not retried: it may have run)."""
        try:
            return await workflow.execute_activity_method(
                method,
                input,
                summary=activity_options.tool_summary(call),
                **activity_options.tool_options(idempotent),
            )
        except ActivityError as exc:
            if not idempotent and isinstance(exc.cause, ActivityTimeout):
                return ToolOutput(content=activity_options.OUTCOME_UNKNOWN)
            return ToolOutput(content=f"Error: {activity_options.root_message(exc)}")

    # --- waiting for people ------------------------------------------------------------

    async def _await_decisions(self) -> None:
        """Wait until the round's calls are decided, firing their timers on time."""
        loop = self._loop
        self._auto.start(self._input.agent, self._digest)  # auto mode judges beside the wait (auto.py)
        self._awaiting = True
        self._record.set_status(STATUS_AWAITING, loop.pending_requests() + self._children.pending())
        while (
            loop.pending_requests()
            and not workflow.info().is_continue_as_new_suggested()
            and not upgrade.due(loop.state)  # #20: a safe point to move to the new version
        ):
            wake = loop.next_wakeup()
            timeout = max(wake - workflow.now(), timedelta(0)) if wake else None
            try:
                await workflow.wait_condition(
                    self._changed_since(self._revision),
                    timeout=timeout,
                    timeout_summary=activity_options.timer_summary(loop, wake),
                )
            except TimeoutError:  # the timer fired: a deadline, reminder or escalation is due
                assert wake is not None
                loop.due(max(workflow.now(), wake))
                self._publish()
            if loop.pending_requests():
                self._record.set_status(STATUS_AWAITING, loop.pending_requests() + self._children.pending())
        self._awaiting = False
        self._record.set_status(STATUS_RUNNING, [])

    def _changed_since(self, revision: int) -> Callable[[], bool]:
        """What ends a wait: a handler changed something after `revision`, history grew long, or
        the run should move to its deployment's new version (#20, upgrade.py)."""
        return lambda: (
            self._revision != revision
            or workflow.info().is_continue_as_new_suggested()
            or upgrade.due(self._loop.state)  # #20: woken by anything once the target version changed
        )

    def _changed(self) -> None:
        """What the intake calls once people changed what the run waits for."""
        self._publish()
        self._revision += 1

    # --- sub-agents (children.py) --------------------------------------------------------

    def _tree_pending(self) -> list[ToolApprovalRequest]:
        """What waits in this run and in the children it runs, each with `workflow_id` and `path`."""
        return own_view(self._loop.pending_requests(), workflow.info().workflow_id) + self._children.pending()

    def _tree_changed(self) -> None:
        """What waits in a child changed: advertise the run's status as waiting while anything does."""
        if not self._awaiting:
            waiting = self._loop.pending_requests() + self._children.pending()
            self._record.set_status(STATUS_AWAITING if waiting else STATUS_RUNNING, waiting)
        self._revision += 1

    def _split(self, items: list[Any]) -> tuple[list[Any], dict[str, list[dict[str, Any]]]]:
        return self._children.route(items, workflow.info().workflow_id)

    # --- the run's events ----------------------------------------------------------------

    def _next(self) -> Action:
        self._publish()
        return self._loop.next_action()

    def _emit(self, event: AgentEvent) -> None:
        """Record an event of the driver's own (auto mode's verdicts) in the run's feed, before the
        loop's events it led to (published by `_changed`)."""
        self._on_event(event, self._record.add(event))

    def _publish(self) -> None:
        """Move the loop's new events into the run's feed."""
        for event in self._loop.drain_events():
            self._on_event(event, self._record.add(event))

    def _on_event(self, event: AgentEvent, kept: dict[str, Any]) -> None:
        """What an event sets off: its metrics; notices, when the run's snapshot names channels."""
        self._metrics.observe(event, self._snapshot.tool_names if self._snapshot else frozenset())
        plan = self._snapshot.notify if self._snapshot else None
        if plan is None or not plan.channels:
            return
        waiting = {r.call_id: r for r in self._loop.pending_requests()}
        kind = notice_for(event, waiting)
        if kind is not None:
            if isinstance(event, AutoEvaluationEvent):  # the request it leaves to a person, as it is now
                kept = {**kept, "request": waiting[event.call_id].model_dump(mode="json")}
            self._notifier.send(plan, kind, self._input.agent, kept, self._record.add)

    # --- ending, or going on as new -----------------------------------------------------

    async def _continue_as_new(self) -> None:
        self._stream.detach()  # its readers' polls answer now, and follow to the next run
        await workflow.wait_condition(workflow.all_handlers_finished)
        self._publish()
        if self._notifier.in_flight:  # notices of this run end with it: give them their chance
            await self._wind_down()
            self._publish()
        carried = ContinuedRun(
            input=self._input,
            loop=self._loop.state,
            snapshot=self._snapshot,
            snapshot_digest=self._digest,
            requester=self._requester,
            event_seq=self._record.seq,
            events=self._record.events,
            session=self._session.carried(),
            stream=self._stream.carried(),
        )
        self._checked(carried, "the state carried across continue-as-new")
        if workflow.patched(SEALS_STATE):
            carried.seal = await worker_seal(carried)
        workflow.continue_as_new(carried, initial_versioning_behavior=upgrade.behaviour(self._loop.state))  # #20

    async def _wind_down(self) -> None:
        """Give notices in flight their time (`notifications.DRAIN`), then let handlers finish."""
        await self._notifier.drain()
        self._stream.detach()  # the readers' polls answer; they read the closed run's rest by query
        await workflow.wait_condition(workflow.all_handlers_finished)

    # --- what every effect goes through --------------------------------------------------

    def _checked(self, payload: T, what: str) -> T:
        """`payload`, unless it cannot be recorded: then the run fails naming the limit,
        rather than its workflow task failing on every retry."""
        budget = self._snapshot.payload_budget if self._snapshot else DEFAULT_PAYLOAD_BUDGET
        size = size_over(payload, budget)
        if size is not None:
            assert budget is not None
            raise ApplicationError(too_large(what, size, budget), type="PayloadTooLarge", non_retryable=True)
        return payload

    async def _activity(self, fn: Any, arg: Any, **kwargs: Any) -> Any:
        """Run an activity; a failure that retrying did not fix fails the run with its message."""
        try:
            return await workflow.execute_activity_method(fn, arg, **kwargs)
        except ActivityError as exc:
            cause = exc.cause
            if isinstance(cause, ApplicationError):
                raise ApplicationError(cause.message, *cause.details, type=cause.type, non_retryable=True) from exc
            raise ApplicationError(activity_options.root_message(exc), non_retryable=True) from exc
