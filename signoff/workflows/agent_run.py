"""The `AgentRun` workflow: drives `signoff.loop.agent_loop` with activities and human decisions.

It does not know the algorithm; it turns the loop's next action into effects:
`CallModel` → the chat activity, `RunTools` → one tool activity per call (at most the
run's `max_parallel_tools` at once), `AwaitApproval` → a durable wait that decisions
(handlers.py) and the calls' own timers end, `Finish` → the result, `Fail` → a failed
run. Long runs continue as new when the server suggests it, carrying their state.
Notices (notifications.py) go out beside all this; the run waits a little for them
before it finishes, continues as new, or fails on an approval deadline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

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
        SealInput,
        SealOutput,
        ToolInput,
        ToolOutput,
        UnsealInput,
        UnsealOutput,
    )
    from signoff.approval.signatures import RequesterClaim, mismatch, requester_claim
    from signoff.contract import STATUS_AWAITING, STATUS_FINISHED, STATUS_RUNNING, WORKFLOW_TYPE, AgentRunResult
    from signoff.loop.agent_loop import AwaitApproval, DecisionError, Fail, Finish, RunTools, unanswered_calls
    from signoff.loop.limits import DEFAULT_PAYLOAD_BUDGET, size_over, too_large
    from signoff.loop.messages import ToolCall
    from signoff.workflows import steps, upgrade  # #20: upgrade = moving to a new version
    from signoff.workflows.handlers import DecisionHandlers
    from signoff.workflows.queries import RunQueries
    from signoff.workflows.record import SIGNOFF_AGENT
    from signoff.workflows.refusal import INVALID_INPUT, Refusal
    from signoff.workflows.run_input import ContinuedRun, InvalidInput, Requester, state_digest


T = TypeVar("T", bound=BaseModel)
SEALS_STATE = "signoff-seals-continued-state"
CHECKS_STATE = "signoff-checks-continued-state"
"""Patches: runs before v3 continued as new unsealed and adopted state unchecked; their
histories replay without these steps (`workflow.patched`)."""


@workflow.defn(name=WORKFLOW_TYPE)
class AgentRun(DecisionHandlers, RunQueries):
    @workflow.init
    def __init__(self, raw: RawValue) -> None:
        super().__init__(raw)

    @workflow.run
    async def run(self, raw: RawValue) -> AgentRunResult:
        if self._input_error is not None:  # a failed run, never a workflow task retried forever
            raise Refusal(self._input_error, INVALID_INPUT)
        if self._continued is not None and workflow.patched(CHECKS_STATE):
            await self._check_continued(self._continued)
        workflow.upsert_search_attributes([SIGNOFF_AGENT.value_set(self._input.agent)])
        if self._continued is None:
            await self._start()
        try:
            while not isinstance(action := self._next(), Finish):
                if isinstance(action, Fail):
                    await self._wind_down()
                    raise ApplicationError(action.message, type="ApprovalTimeout", non_retryable=True)
                if isinstance(action, RunTools):
                    await self._run_tools(action.calls)
                elif workflow.info().is_continue_as_new_suggested() or upgrade.due(self._loop.state):  # #20
                    await self._continue_as_new()
                elif isinstance(action, AwaitApproval):
                    await self._await_decisions()
                else:
                    await self._chat()
        except asyncio.CancelledError:
            self._loop.cancel(workflow.now())
            self._next()
        await self._wind_down()
        self._record.set_status(STATUS_FINISHED, [])
        result = self._result()
        self._checked(result, "the result")
        return result

    # --- starting --------------------------------------------------------------------

    async def _check_continued(self, state: ContinuedRun) -> None:
        """Adopt carried state only if the worker says a run of this chain sealed it; forged
        or copied state fails the run at once (`activities/state.py`)."""
        info = workflow.info()
        try:
            digest = state_digest(state)
        except InvalidInput as exc:
            raise Refusal(f"invalid input: {exc}", INVALID_INPUT) from None
        check = UnsealInput(
            chain_id=info.first_execution_run_id,
            digest=digest,
            seal=state.seal,
            continued_run_id=info.continued_run_id or "",
        )
        out: UnsealOutput = await workflow.execute_local_activity_method(
            AgentActivities.unseal,
            check,
            start_to_close_timeout=timedelta(seconds=30),
            summary="check the continued state's seal",
        )
        if out.error is not None:
            raise Refusal(f"invalid input: {out.error}; nothing of it was adopted", INVALID_INPUT)

    async def _start(self) -> None:
        """Verify who asked, then reopen a resumed transcript's unanswered calls, applying
        the input's decisions under each call's policy."""
        options = self._input.options
        if options.requester_token:
            await self._verify_requester(options.requester_token, options.requested_by)
        open_calls = unanswered_calls(self._loop.messages)
        if not open_calls and not options.tool_approval_responses:
            return
        prepared: PrepareOutput = await self._step(
            AgentActivities.prepare,
            PrepareInput(
                agent=self._input.agent,
                transcript=self._loop.messages,
                open_calls=open_calls,
                requester=self._requester,
            ),
            summary="snapshot the agent; gate the open calls",
            **steps.prepare_options(),
        )
        self._adopt(prepared.snapshot, prepared.snapshot_digest, prepared.unavailable)
        try:
            self._loop.resume(
                options.tool_approval_responses,
                prepared.gated,
                workflow.now(),
                self._requester_decider(),
                prepared.previews,
            )
        except DecisionError as exc:
            raise Refusal(f"invalid tool_approval_responses: {exc}", INVALID_INPUT) from None

    async def _verify_requester(self, token: str, claimed: str | None) -> None:
        """Who asked for the run, from their token; one signed for anything but asking for
        this workflow id fails the start."""
        try:
            who = await self._identify(token, claimed, "requester")
        except ApplicationError as exc:
            raise Refusal(f"invalid input: {exc.message}", INVALID_INPUT) from None
        wanted = requester_claim(workflow.info().workflow_id)
        if who.claim is not None and (problem := mismatch(who.claim, wanted)) is not None:
            raise Refusal(f"invalid input: requester_token: {problem}", INVALID_INPUT)
        bound = isinstance(who.claim, RequesterClaim)
        self._requester = Requester(name=who.name, groups=who.groups, verified=True, bound=bound)
        self._loop.state.requested_by = who.name

    # --- the model -------------------------------------------------------------------

    async def _chat(self) -> None:
        loop, options = self._loop, self._input.options
        delta = self._sender.delta(loop.messages, loop.state.transcript_epoch)
        chat_input = ChatInput(
            agent=self._input.agent,
            snapshot_digest=self._digest,
            transcript=delta,
            model=options.model,
            temperature=options.temperature,
            requester=self._requester if self._digest is None else None,
        )
        turn: ChatTurn = await self._step(
            AgentActivities.chat,
            self._checked(chat_input, "the model's input"),
            summary=f"model turn {loop.state.round + 1}",
            **steps.chat_options(),
        )
        if turn.snapshot is not None and turn.snapshot_digest:
            self._adopt(turn.snapshot, turn.snapshot_digest, turn.unavailable)
        self._sender.sent_with_answer(delta, turn.response.message.model_copy(update={"role": "assistant"}))
        loop.apply_model_turn(turn.response, turn.gated, workflow.now(), previews=turn.previews)

    # --- tools -----------------------------------------------------------------------

    async def _run_tools(self, calls: list[ToolCall]) -> None:
        """Run the ready calls, at most `max_parallel_tools` at once; results in call order."""
        gate = asyncio.Semaphore(self._limits.max_parallel_tools)

        async def one(call: ToolCall) -> str:
            async with gate:
                return await self._tool(call)

        results = await asyncio.gather(*(one(call) for call in calls))
        for call, content in zip(calls, results, strict=True):
            self._loop.apply_tool_result(call.id, content)

    async def _tool(self, call: ToolCall) -> str:
        entry = self._snapshot.tool(call.name) if self._snapshot else None
        idempotent = entry.idempotent if entry else False
        record = self._loop.approval_of(call.id)
        proof = (
            ApprovalProof(call_id=call.id, arguments_digest=record.arguments_digest, record_hash=record.hash)
            if (record)
            else None
        )
        tool_input = ToolInput(
            agent=self._input.agent,
            snapshot_digest=self._digest,
            call=call,
            approval=proof,
            tokens=self._loop.evidence_of(call.id) if record else [],
            requester_token=self._input.options.requester_token if record else None,
        )
        try:
            output: ToolOutput = await workflow.execute_activity_method(
                AgentActivities.tool,
                self._checked(tool_input, f"the input of {call.name}"),
                summary=steps.tool_summary(call),
                **steps.tool_options(idempotent),
            )
        except ActivityError as exc:
            if not idempotent and isinstance(exc.cause, ActivityTimeout):
                return steps.OUTCOME_UNKNOWN
            return f"Error: {steps.root_message(exc)}"
        return output.content

    # --- waiting for people ------------------------------------------------------------

    async def _await_decisions(self) -> None:
        """Wait until the round's calls are decided, firing their timers on time."""
        loop = self._loop
        self._record.set_status(STATUS_AWAITING, loop.pending_requests())
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
                    timeout_summary=steps.timer_summary(loop, wake),
                )
            except TimeoutError:  # the timer fired: a deadline, reminder or escalation is due
                assert wake is not None
                loop.due(max(workflow.now(), wake))
                self._publish()
            if loop.pending_requests():
                self._record.set_status(STATUS_AWAITING, loop.pending_requests())
        self._record.set_status(STATUS_RUNNING, [])

    def _changed_since(self, revision: int) -> Callable[[], bool]:
        """What ends a wait: a handler changed something after `revision`, history grew long, or
        the run should move to its deployment's new version (#20, upgrade.py)."""
        return lambda: (
            self._revision != revision
            or workflow.info().is_continue_as_new_suggested()
            or upgrade.due(self._loop.state)  # #20: woken by anything once the target version changed
        )

    # --- bookkeeping -------------------------------------------------------------------

    def _next(self) -> Any:
        self._publish()
        return self._loop.next_action()

    async def _continue_as_new(self) -> None:
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
        )
        self._checked(carried, "the state carried across continue-as-new")
        if workflow.patched(SEALS_STATE):
            carried.seal = await self._seal(carried)
        workflow.continue_as_new(carried, initial_versioning_behavior=upgrade.behaviour(self._loop.state))  # #20

    async def _seal(self, state: ContinuedRun) -> str:
        """The worker's seal on `state` for this workflow and chain (`activities/state.py`)."""
        try:
            digest = state_digest(state)
        except InvalidInput as exc:
            raise ApplicationError(str(exc), type="UnsealableState", non_retryable=True) from None
        out: SealOutput = await workflow.execute_local_activity_method(
            AgentActivities.seal,
            SealInput(chain_id=workflow.info().first_execution_run_id, digest=digest),
            start_to_close_timeout=timedelta(seconds=30),
            summary="seal the state carried across continue-as-new",
        )
        return out.seal

    async def _wind_down(self) -> None:
        """Give notices in flight their time (`notifications.DRAIN`), then let handlers finish."""
        await self._notifier.drain()
        await workflow.wait_condition(workflow.all_handlers_finished)

    def _result(self) -> AgentRunResult:
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

    def _checked(self, payload: T, what: str) -> T:
        """`payload`, unless it cannot be recorded: then the run fails naming the limit,
        rather than its workflow task failing on every retry."""
        budget = self._snapshot.payload_budget if self._snapshot else DEFAULT_PAYLOAD_BUDGET
        size = size_over(payload, budget)
        if size is not None:
            assert budget is not None
            raise ApplicationError(too_large(what, size, budget), type="PayloadTooLarge", non_retryable=True)
        return payload

    async def _step(self, fn: Any, arg: Any, **kwargs: Any) -> Any:
        """Run an activity; a failure that retrying did not fix fails the run with its message."""
        try:
            return await workflow.execute_activity_method(fn, arg, **kwargs)
        except ActivityError as exc:
            cause = exc.cause
            if isinstance(cause, ApplicationError):
                raise ApplicationError(cause.message, *cause.details, type=cause.type, non_retryable=True) from exc
            raise ApplicationError(steps.root_message(exc), non_retryable=True) from exc
