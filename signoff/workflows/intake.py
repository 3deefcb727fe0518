"""How people reach a waiting run: the decision signal, and the validated updates.

- Signal `tool_approval`: never fails. What it cannot apply (undecodable input, an
  unknown or already decided call, a stale digest, a decider the policy refuses, an
  invalid token) is recorded as a `decision_ignored` event, its payload cut short.
- Update `submit_tool_approval`: its validator rejects what it can check before anything
  enters history (the same cases, naming the pending ids). A signed decision's token is
  verified there too, worker-side (`runtime/tokens.py`), and the handler reads who signed
  from the token; a plain token is verified after acceptance (`signoff.identify`, recorded),
  and a refused one fails the update (`workflows/verify.py`).
- Updates `extend_deadline` and `revoke_grant` work the same way.

Payloads are taken raw and decoded here, so one that cannot be decoded, or a payload-store
reference the worker could not resolve (runtime/guard.py), is refused like any bad
decision, as are more than `MAX_DECISIONS` in one request. Every refusal is a `Refusal`
(workflows/refusal.py): non-retryable, its text inert, sent without the worker's traceback.

`AgentRun`'s handlers hand their payloads to `DecisionIntake`, which hands decisions to
the loop: the loop owns the rules.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import ValidationError
from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

from signoff.approval.authority import Decider, Decision
from signoff.approval.requests import Grant, ToolApprovalRequest, ToolApprovalResponse
from signoff.contract import (
    MAX_DECISIONS,
    DeadlineAck,
    DeadlineExtension,
    DecidedCall,
    DecisionAck,
    GrantRevocation,
    Rearm,
    parse_responses,
    unresolvable,
)
from signoff.errors import DecisionError
from signoff.loop.agent_loop import AgentLoop
from signoff.messages import DecisionIgnoredEvent
from signoff.text.neutral import neutralise
from signoff.workflows import verify
from signoff.workflows.feed import RunRecord
from signoff.workflows.refusal import Refusal, error_text, refused
from signoff.workflows.run_input import format_validation_error

TAKES_DELEGATIONS = "signoff-takes-delegations"
"""Patch: a signal's decision may carry `delegation` (verified with a local activity). Before,
such a decision did not parse and was ignored; a history recorded then replays that way.
Asked only of a signal that carries one, so no other history gains the marker."""
_TOO_LONG = frozenset({"string_too_long", "too_long"})
"""Pydantic's error types for a text or a list over its limit."""


class DecisionIntake:
    """What people send a run, checked and handed to its loop.

    Args:
        loop: the run's loop, which applies decisions and owns their rules.
        record: the run's event feed, where a signal's decisions that could not be
            applied are recorded.
        changed: called once what people sent may have changed what the run waits for.
    """

    def __init__(
        self,
        loop: AgentLoop,
        record: RunRecord,
        changed: Callable[[], None],
        router: Router | None = None,
    ) -> None:
        self._loop = loop
        self._record = record
        self._changed = changed
        self._router = router

    async def signal(self, payload: RawValue) -> None:
        """Apply what can be applied; record the rest as ignored, never lost. Never fails."""
        try:
            await self._apply_signal(payload)
        except Exception as exc:  # whatever it held, a signal must not fail the workflow task
            self._ignore(f"could not be applied: {type(exc).__name__}: {exc}", None)

    async def submit(self, payload: RawValue) -> DecisionAck:
        """Apply decisions that the validator accepted; say what they decided and what waits.
        Items for a descendant (sub-agents) are signalled to it and listed as accepted."""
        try:
            data, routed = self._routed(_decoded(payload))
            if routed:
                assert self._router is not None
                await self._router.send(routed)
                if not data:
                    return self._ack([], len(self._loop.state.approvals), routed)
            responses = parse_responses(data)
            decisions = [Decision(r, await self._decider(r, validated=True)) for r in responses]
            before = len(self._loop.state.approvals)
            accepted = self._loop.decide(decisions, workflow.now())
        except Exception as exc:  # the state moved on while a token was verified, or a token was refused
            raise refused(exc) from None
        self._changed()
        return self._ack(accepted, before, routed)

    def _routed(self, data: Any) -> tuple[Any, dict[str, list[dict[str, Any]]]]:
        """This run's own items, and those for descendants by workflow id (checked: each a valid
        decision naming a call that waits there). ValueError: an item names no waiting descendant."""
        items = data if isinstance(data, list) else [data]
        if self._router is None or len(items) > MAX_DECISIONS or not any(_targets(item) for item in items):
            return data, {}
        local, routed = self._router.split(items)
        for target, sent in routed.items():
            waiting = {r.call_id for r in self._router.waiting_in(target)}
            for item in sent:
                response = ToolApprovalResponse.model_validate(item)
                if response.call_id != "*" and response.call_id not in waiting:
                    raise DecisionError(f"unknown call_id {response.call_id[:200]!r} in {target}", sorted(waiting))
        return (local if isinstance(data, list) or not local else local[0]), routed

    def check_submit(self, payload: RawValue) -> None:
        """The validator of `submit`: refuse what can be refused before anything is recorded."""
        try:
            data, routed = self._routed(_decoded(payload))
            if routed and not data:
                return
            responses = parse_responses(data)
            # A token is verified after acceptance (worker-side): in a batch that carries one, who may decide
            # is checked then for every response (decide() refuses the rest); all else now.
            self._loop.check_decisions(
                [Decision.of(r) for r in responses],
                authority=not any(r.token for r in responses),
                now=workflow.now(),
            )
        except Exception as exc:
            raise self._refusal(exc) from None

    async def extend(self, payload: RawValue) -> DeadlineAck:
        """Move a waiting call's deadline later (allowed approvers only)."""
        try:
            ask = DeadlineExtension.model_validate(_decoded(payload))
            decider = await verify.decider(self._loop, ask.token, ask.approver, validated=True)
            expires_at = self._loop.extend_deadline(ask.call_id, ask.seconds, decider)
        except Exception as exc:
            raise self._refusal(exc) from None
        self._changed()
        return DeadlineAck(call_id=ask.call_id, expires_at=expires_at)

    def check_extend(self, payload: RawValue) -> None:
        """The validator of `extend`."""
        try:
            ask = DeadlineExtension.model_validate(_decoded(payload))
            if ask.token is None:
                self._loop.check_extension(ask.call_id, ask.seconds, Decider.claimed(ask.approver))
        except Exception as exc:
            raise self._refusal(exc) from None

    async def rearm(self, payload: RawValue, drawn: Callable[[str], str | None]) -> ToolApprovalRequest:
        """Re-open an expired call as a new request (allowed approvers only). `drawn`: the
        value its new binding derives from, drawn for the call id (`workflows/instances.py`)."""
        try:
            ask = Rearm.model_validate(_decoded(payload))
            decider = await verify.decider(self._loop, ask.token, ask.approver)
            self._loop.check_rearm(ask.call_id, ask.deadline_seconds, decider)
            request = self._loop.rearm(ask.call_id, ask.deadline_seconds, decider, workflow.now(), drawn(ask.call_id))
        except Exception as exc:
            raise self._refusal(exc) from None
        self._changed()
        return request

    def check_rearm(self, payload: RawValue) -> None:
        """The validator of `rearm`."""
        try:
            ask = Rearm.model_validate(_decoded(payload))
            if ask.token is None:
                self._loop.check_rearm(ask.call_id, ask.deadline_seconds, Decider.claimed(ask.approver))
        except Exception as exc:
            raise self._refusal(exc) from None

    def revoke(self, payload: RawValue) -> Grant:
        """End a grant at once; later calls it would have matched wait for a person again."""
        try:
            grant = self._loop.revoke_grant(GrantRevocation.model_validate(_decoded(payload)).grant_id)
        except Exception as exc:
            raise self._refusal(exc) from None
        self._changed()
        return grant

    def check_revoke(self, payload: RawValue) -> None:
        """The validator of `revoke`."""
        try:
            grant_id = GrantRevocation.model_validate(_decoded(payload)).grant_id
            problem = self._loop.unknown_grant(grant_id)
        except Exception as exc:
            raise self._refusal(exc) from None
        if problem is not None:
            raise Refusal(problem)

    async def _apply_signal(self, payload: RawValue) -> None:
        try:
            data = _decoded(payload)
            data, routed = self._routed(data)
            if routed:
                assert self._router is not None
                await self._router.send(routed)
                if not data:
                    return
            responses = parse_responses(data)
        except ValidationError as exc:  # over a size limit: the payload is not kept (CONTRACT "Limits")
            oversized = any(error["type"] in _TOO_LONG for error in exc.errors())
            self._ignore(format_validation_error(exc), None if oversized else data)
            return
        except DecisionError as exc:  # a routed item names no call that waits there
            self._ignore(str(exc), None)
            return
        except ValueError as exc:  # undecodable, unresolvable, too many decisions, no such descendant
            self._ignore(str(exc), None)
            return
        if any(r.delegation for r in responses) and not workflow.patched(TAKES_DELEGATIONS):
            self._ignore("delegation: extra inputs are not permitted (a run begun before delegations)", None)
            return
        if not responses:
            self._ignore("no decision given (an empty list)", data)
        for response in responses:
            try:
                decider = await self._decider(response)
                self._loop.decide([Decision(response, decider)], workflow.now())
            except (DecisionError, ApplicationError) as exc:
                self._ignore(str(exc), response.model_dump(mode="json", exclude={"token"}))
        self._changed()

    async def _decider(self, response: ToolApprovalResponse, validated: bool = False) -> Decider:
        return await verify.decider(self._loop, response.token, response.approver, validated, response.delegation)

    def _ack(
        self, accepted: list[str], before: int, routed: dict[str, list[dict[str, Any]]] | None = None
    ) -> DecisionAck:
        records = {r.call_id: r for r in self._loop.state.approvals[before:]}
        waiting = {r.call_id: r for r in self._loop.pending_requests()}
        decided = []
        for call_id in accepted:
            record = records.get(call_id)
            source = record or waiting.get(call_id)
            assert source is not None
            decided.append(
                DecidedCall(
                    call_id=call_id,
                    name=source.name,
                    arguments=source.arguments,
                    arguments_digest=source.arguments_digest,
                    outcome=(record.outcome or "denied") if record else "vote",
                    edited_arguments=record.edited_arguments if record else None,
                )
            )
        sent = [str(item.get("call_id")) for items in (routed or {}).values() for item in items]
        return DecisionAck(accepted=[*accepted, *sent], pending=list(waiting), decided=decided)

    def _refusal(self, exc: BaseException) -> Refusal:
        """Why an update is refused, naming the pending calls (a DecisionError names them itself)."""
        if isinstance(exc, ValidationError):
            exc = ValueError(format_validation_error(exc))
        if isinstance(exc, DecisionError | Refusal):
            return refused(exc)
        pending = ", ".join(r.call_id for r in self._loop.pending_requests()) or "none"
        return refused(ValueError(f"{error_text(exc)} (pending call ids: {pending})"))

    def _ignore(self, reason: str, payload: Any) -> None:
        kept = payload if isinstance(payload, dict | list | str | int | float | bool | None) else None
        self._record.add(DecisionIgnoredEvent(reason=neutralise(reason[:2_000]), payload=kept))


class Router:
    """Where decision items for a run's descendants go (sub-agents: `workflows/children.py`)."""

    def __init__(
        self,
        split: Callable[[list[Any]], tuple[list[Any], dict[str, list[dict[str, Any]]]]],
        waiting_in: Callable[[str], list[Any]],
        send: Callable[[dict[str, list[dict[str, Any]]]], Awaitable[None]],
    ) -> None:
        self.split, self.waiting_in, self.send = split, waiting_in, send


def _targets(item: Any) -> bool:
    return isinstance(item, dict) and item.get("workflow_id") is not None


def _decoded(payload: RawValue) -> Any:
    """A payload as JSON; ValueError when it cannot be decoded or resolved."""
    try:
        data = workflow.payload_converter().from_payload(payload.payload)
    except Exception as exc:  # bytes that are not JSON, an unknown encoding
        raise ValueError(f"undecodable payload: {exc}") from None
    if (problem := unresolvable(data)) is not None:
        raise ValueError(problem)
    return data
