"""What a run starts from: a client's public input, or the state it carried across continue-as-new.

A client's start is public input only (`AgentRunInput`, unknown fields refused). The
state a run carries across continue-as-new (`ContinuedRun`) is read as such only when the
server itself says this run continues another (`continued_run_id`, first attempt, no
cron schedule): a client cannot start a run that way. But any workflow can continue *as*
`AgentRun` onto this task queue, with any state, so the state is also sealed: the run
that continues as new has the worker seal it (`seal`, an HMAC over the workflow id, the
chain and `state_digest`), and the run it starts has the worker check that seal before
it adopts anything (`check_seal`; without a state key, the worker checks with the server
that the previous run is an `AgentRun` of this task queue instead). Input
that cannot be decoded at all, or a payload-store reference the worker cannot resolve
(runtime/guard.py), fails the run at once too. Carried state whose stored payload is gone
is the exception: that is the workers' store to fix (every worker must use the same one),
so its workflow task fails, to be retried by a worker that has it, rather than the run
being lost.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from temporalio import workflow
from temporalio.common import RawValue
from temporalio.contrib.workflow_streams import WorkflowStreamState
from temporalio.exceptions import ApplicationError

from signoff.activities import AgentActivities
from signoff.activities.models import Requester, SealInput, SealOutput, UnsealInput, UnsealOutput
from signoff.agent.snapshot import RunSnapshot
from signoff.approval.digest import canonical_json, sha256_hex
from signoff.contract import SAME_STORE, AgentRunInput, unresolvable
from signoff.loop.state import LoopState
from signoff.workflows.refusal import INVALID_INPUT, Refusal

__all__ = (
    "ContinuedRun",
    "InvalidInput",
    "Requester",
    "SessionState",
    "StreamCarry",
    "check_seal",
    "decode",
    "format_validation_error",
    "state_digest",
    "worker_seal",
)
_SEAL_TIMEOUT = timedelta(seconds=30)


class SessionState(BaseModel):
    """What a session carries across continue-as-new besides the loop's transcript (session.py)."""

    turn: int = 0
    """Turns begun; the latest one's number (from 1)."""


class StreamCarry(BaseModel):
    """What the run's Workflow Stream carries across continue-as-new (streams.py): its log, cut
    to what readers may still need, its offsets, its publishers' dedup state."""

    state: WorkflowStreamState
    model_turns: int = 0
    """Model turns begun in the chain: the `turn` of the next one's `tokens` items is one more."""
    turn_offset: int = 0
    """The stream's offset where the latest turn began (the log is cut at the turn before it)."""


class ContinuedRun(BaseModel):
    """What a run carries across continue-as-new (never accepted from a client), sealed by
    the worker that continued it (`seal`; empty when that worker had no state key)."""

    model_config = ConfigDict(extra="forbid")

    signoff_continued: Literal[1] = 1
    input: AgentRunInput
    loop: LoopState
    snapshot: RunSnapshot | None = None
    snapshot_digest: str | None = None
    requester: Requester = Field(default_factory=Requester)
    event_seq: int = 0
    events: list[dict[str, Any]] = Field(default_factory=list)
    session: SessionState | None = Field(None, exclude_if=lambda value: value is None)
    """A session's turns (None, and absent, for any other run)."""
    stream: StreamCarry | None = Field(None, exclude_if=lambda value: value is None)
    """The run's Workflow Stream (None, and absent, in state carried by runs before streams)."""
    seal: str = ""


def state_digest(state: ContinuedRun) -> str:
    """SHA-256 of the carried state as canonical JSON, its seal left out: what is sealed.

    Raises:
        InvalidInput: the state holds a value JSON cannot carry (it cannot be sealed).
    """
    try:
        return sha256_hex(canonical_json(state.model_dump(mode="json", exclude={"seal"})))
    except ValueError as exc:
        raise InvalidInput(f"the state carried across continue-as-new cannot be sealed: {exc}") from None


async def worker_seal(state: ContinuedRun) -> str:
    """The worker's seal on `state` for this workflow and chain (`activities/state.py`).

    Sealed once. The run calls this once every handler has finished, and no handler can start
    while the local activity runs in the same workflow task. Sealing again whenever the state
    changed during the activity (tried after #20 part B's review) made the number of local
    activities depend on when their results were delivered. A replay after an eviction sees
    that differently, so the command sequence was no longer the recorded one.

    Raises:
        ApplicationError: `UnsealableState`, the state holds what JSON cannot carry.
    """
    try:
        digest = state_digest(state)
    except InvalidInput as exc:
        raise ApplicationError(str(exc), type="UnsealableState", non_retryable=True) from None
    out: SealOutput = await workflow.execute_local_activity_method(
        AgentActivities.seal,
        SealInput(chain_id=workflow.info().first_execution_run_id, digest=digest),
        start_to_close_timeout=_SEAL_TIMEOUT,
        summary="seal the state carried across continue-as-new",
    )
    return out.seal


async def check_seal(state: ContinuedRun) -> None:
    """Adopt carried state only if the worker says a run of this chain sealed it.

    Raises:
        Refusal: `InvalidInput`, forged or copied state (nothing of it is adopted).
    """
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
        start_to_close_timeout=_SEAL_TIMEOUT,
        summary="check the continued state's seal",
    )
    if out.error is not None:
        raise Refusal(f"invalid input: {out.error}; nothing of it was adopted", INVALID_INPUT)


class InvalidInput(Exception):
    """The start input is not valid: the message says what is wrong."""


def decode(raw: RawValue) -> AgentRunInput | ContinuedRun:
    """The run's input, or InvalidInput naming the problem."""
    try:
        data = workflow.payload_converter().from_payload(raw.payload)
    except Exception as exc:  # bytes that are not JSON, an unknown encoding
        raise InvalidInput(f"invalid input: the workflow input could not be decoded as JSON ({exc})") from None
    if (problem := unresolvable(data)) is not None:
        if _continues_a_run():  # our own state, gone from the store: a worker's configuration to fix, not input
            raise RuntimeError(f"the state this run continues from is {problem}; {SAME_STORE}")
        raise InvalidInput(f"invalid input: the workflow input is {problem}")
    try:
        if _continues_a_run():
            return ContinuedRun.model_validate(data)
        return AgentRunInput.model_validate(data)
    except ValidationError as exc:
        raise InvalidInput(format_validation_error(exc)) from None


def _continues_a_run() -> bool:
    info = workflow.info()
    return info.continued_run_id is not None and info.attempt == 1 and not info.cron_schedule


def format_validation_error(exc: ValidationError) -> str:
    """`invalid AgentRunInput: options.max_rounds: Input should be ...; prompt: ...`"""
    parts = []
    for error in exc.errors(include_url=False)[:10]:
        where = ".".join(str(p) for p in error["loc"]) or "input"
        parts.append(f"{where}: {error['msg']}")
    return f"invalid {exc.title}: " + "; ".join(parts)
