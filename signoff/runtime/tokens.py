"""Signed decisions sent by update are verified in the update's validator, worker-side.

An update's validator runs when the update is first delivered, never when a run replays, so
it may use what replay must not: the worker's keys and the time. `SignedDecisionCheck`
(installed by `build_worker`) verifies there every bound token (one with a `signoff`
claim) sent to `submit_tool_approval` or `extend_deadline`: one that does not verify rejects
the update before anything enters history. The handler then reads who signed from the token
itself (`signoff.approval.identity.read_verified`), the same on every replay, so nothing needs
recording: no `signoff.identify` local activity, one activity round trip less per signed
decision. Plain tokens, signals and requester tokens go through `signoff.identify` as before.

`AgentRun`'s handlers rely on this check for bound tokens: serve `AgentRun` with
`build_worker` (or add this interceptor to your own `Worker`). The tool activity checks the
same tokens again either way; it is the gate.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.worker import (
    HandleUpdateInput,
    Interceptor,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)

from signoff.approval.identity import Verifier, is_bound
from signoff.contract import UPDATE_APPROVAL, UPDATE_EXTEND_DEADLINE
from signoff.errors import TokenError
from signoff.workflows.refusal import refused, token_rejected

CHECKED = (UPDATE_APPROVAL, UPDATE_EXTEND_DEADLINE)


def bound_tokens(args: Sequence[Any]) -> Iterator[str]:
    """The tokens with a `signoff` claim in an update's input (one decision or a list; the handlers
    take it raw, so it is decoded here: input that does not decode holds no token, and the
    validator refuses it)."""
    for arg in args[:1]:
        if isinstance(arg, RawValue):
            try:
                arg = workflow.payload_converter().from_payload(arg.payload)
            except Exception:
                return
        for item in arg if isinstance(arg, list) else [arg]:
            token = item.get("token") if isinstance(item, dict) else None
            if isinstance(token, str) and is_bound(token):
                yield token


class _Inbound(WorkflowInboundInterceptor):
    verifier: ClassVar[Verifier | None] = None

    def handle_update_validator(self, input: HandleUpdateInput) -> None:
        if input.update in CHECKED:
            for token in bound_tokens(input.args):
                if self.verifier is None:
                    raise refused(token_rejected("approver", None))
                try:
                    self.verifier.verify(token, workflow.now())
                except TokenError as exc:
                    raise refused(token_rejected("approver", exc)) from None
        super().handle_update_validator(input)


class SignedDecisionCheck(Interceptor):
    """The worker interceptor that verifies signed decisions in update validators."""

    def __init__(self, verifier: Verifier | None) -> None:
        self.verifier = verifier

    def workflow_interceptor_class(self, input: WorkflowInterceptorClassInput) -> type[WorkflowInboundInterceptor]:
        return type("SignedDecisionValidator", (_Inbound,), {"verifier": self.verifier})
