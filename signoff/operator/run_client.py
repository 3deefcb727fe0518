"""Talking to a run: typed queries and updates, and the errors a person can act on.

Every answer is parsed into the contract's models (`signoff.contract`, `signoff.approval.requests`,
`signoff.messages`), so the rest of the CLI never reads untyped JSON. Names of queries
and updates come from `signoff.contract` only. What the server itself says of a run, which
signers sign from instead of the run's word, is `run_facts`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflow.v1 import WorkflowExecutionInfo
from temporalio.api.workflowservice.v1 import DescribeWorkflowExecutionRequest
from temporalio.client import (
    Client,
    WorkflowHandle,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
    WorkflowUpdateStage,
)
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from signoff.approval.requests import Grant, ToolApprovalRequest, ToolApprovalResponse
from signoff.contract import (
    QUERY_AUDIT,
    QUERY_EVENTS,
    QUERY_GRANTS,
    QUERY_MESSAGES,
    QUERY_PENDING,
    QUERY_SESSION,
    QUERY_STATUS,
    SESSION_MOVING,
    SIGNAL_APPROVAL,
    UPDATE_APPROVAL,
    UPDATE_END_SESSION,
    UPDATE_SEND_MESSAGE,
    AgentRunResult,
    DecisionAck,
    RunStatus,
    SessionView,
    TurnAnswer,
)
from signoff.errors import CommandError, RunPaused, Unanswered, UpdateNotTaken
from signoff.messages import AgentEvent, ChatMessage
from signoff.signing.derived import RunFacts
from signoff.workflows.queries import AuditTrail

QUERY_TIMEOUT = timedelta(seconds=5)
UPDATE_TIMEOUT = timedelta(seconds=15)
"""How long an update may take to be taken up before its decisions go by signal instead."""
Handle = WorkflowHandle[Any, Any]
M = TypeVar("M")
_EVENT: TypeAdapter[AgentEvent] = TypeAdapter(AgentEvent)
_PENDING = TypeAdapter(list[ToolApprovalRequest])
_GRANTS = TypeAdapter(list[Grant])
_MESSAGES = TypeAdapter(list[ChatMessage])
MOVING_RETRIES = 20


@dataclass(frozen=True)
class Seen:
    """One entry of the `events` query: its number and the event (None: a type this client
    cannot read, e.g. from a newer worker)."""

    seq: int
    event: AgentEvent | None
    kind: str


PAUSED = "the run is paused (temporal workflow pause): it answers no queries and takes no updates until unpaused"


def failure_text(exc: BaseException) -> str:
    """The innermost message of a Temporal failure chain (the validator's or the run's)."""
    message = str(exc)
    while exc.__cause__ is not None or getattr(exc, "cause", None) is not None:
        exc = getattr(exc, "cause", None) or exc.__cause__  # type: ignore[assignment]
        message = getattr(exc, "message", None) or str(exc) or message
    return message


def rpc_text(exc: RPCError, workflow_id: str) -> str:
    if "already completed" in exc.message:
        return f"run {workflow_id!r} has already finished; see `signoff result {workflow_id}`"
    if exc.status == RPCStatusCode.NOT_FOUND:
        return f"no run with id {workflow_id!r}"
    return f"{workflow_id}: {exc.message}"


async def query(handle: Handle, name: str, *args: Any) -> Any:
    """A query's raw answer; CommandError when the run or a worker cannot answer (RunPaused when paused)."""
    try:
        return await handle.query(name, *args, rpc_timeout=QUERY_TIMEOUT)
    except RPCError as exc:
        late = exc.status == RPCStatusCode.DEADLINE_EXCEEDED or "timeout" in exc.message.lower()
        if late or "timed out" in exc.message.lower():
            raise Unanswered(
                f"{handle.id}: no worker answered within {QUERY_TIMEOUT.seconds} s "
                "(is one serving the run's task queue?)"
            ) from None
        raise CommandError(rpc_text(exc, handle.id)) from None
    except WorkflowQueryFailedError as exc:
        raise CommandError(f"{handle.id}: query {name!r} failed: {exc}") from None
    except ValueError as exc:  # the SDK cannot name the status a refused query reports: Paused (8)
        if "WorkflowExecutionStatus" in str(exc):
            raise RunPaused(f"{handle.id}: {PAUSED}") from None
        raise


async def run_facts(client: Client, workflow_id: str) -> RunFacts:
    """What the server says of the run `workflow_id` names (its latest run): the facts every
    signer derives a claim from (`signoff.signing.derived`), never the run's word.

    Raises:
        CommandError: there is no such run, or the server cannot be asked.
    """
    execution = WorkflowExecution(workflow_id=workflow_id)
    request = DescribeWorkflowExecutionRequest(namespace=client.namespace, execution=execution)
    try:
        described = await client.workflow_service.describe_workflow_execution(request)
    except RPCError as exc:
        raise CommandError(rpc_text(exc, workflow_id)) from None
    return facts_of(described.workflow_execution_info)


async def handle_facts(handle: Handle) -> RunFacts:
    """`run_facts` of the run a handle names (through the SDK's describe).

    Raises:
        CommandError: as `run_facts`.
    """
    try:
        described = await handle.describe()
    except RPCError as exc:
        raise CommandError(rpc_text(exc, handle.id)) from None
    return facts_of(described.raw_description.workflow_execution_info)


def facts_of(info: WorkflowExecutionInfo) -> RunFacts:
    """A run's facts from the server's description (or a listing's entry) of it."""
    return RunFacts(
        workflow_id=info.execution.workflow_id,
        chain_id=info.first_run_id or info.execution.run_id,  # a server too old to say: the run's own
        workflow_type=info.type.name,
        task_queue=info.task_queue,
        parent_id=(info.parent_execution.workflow_id or None) if info.HasField("parent_execution") else None,
    )


def _typed(adapter: TypeAdapter[M], raw: Any, what: str) -> M:
    try:
        return adapter.validate_python(raw)
    except ValidationError as exc:
        raise CommandError(f"the run answered {what} in a shape this CLI cannot read: {exc}") from None


async def pending(handle: Handle) -> list[ToolApprovalRequest]:
    return _typed(_PENDING, await query(handle, QUERY_PENDING), "its pending calls")


async def status(handle: Handle) -> RunStatus:
    return _typed(TypeAdapter(RunStatus), await query(handle, QUERY_STATUS), "its status")


async def grants(handle: Handle) -> list[Grant]:
    return _typed(_GRANTS, await query(handle, QUERY_GRANTS), "its grants")


async def audit_trail(handle: Handle) -> AuditTrail:
    return _typed(TypeAdapter(AuditTrail), await query(handle, QUERY_AUDIT), "its audit trail")


async def events(handle: Handle, since: int) -> list[Seen]:
    return [parse_event(raw) for raw in await query(handle, QUERY_EVENTS, since)]


def parse_event(raw: Mapping[str, Any]) -> Seen:
    """One entry of the `events` query, typed. A very large value the run cut short in its
    feed (`{"elided": ...}`) is read as text saying so; what still cannot be read is None."""
    data = dict(raw)
    for _ in range(8):
        try:
            return Seen(int(raw.get("seq", 0)), _EVENT.validate_python(data), str(raw.get("type")))
        except ValidationError as exc:
            if not any(_unelide(data, error["loc"]) for error in exc.errors()):
                break
    return Seen(int(raw.get("seq", 0)), None, str(raw.get("type")))


def _unelide(data: Any, loc: tuple[int | str, ...]) -> bool:
    """Replace the cut-short value on the path `loc` (if there is one) by text; True if done."""
    if loc and isinstance(data, dict) and loc[0] == data.get("type"):
        loc = loc[1:]  # a discriminated union's error path starts with the tag
    for key in loc:
        if isinstance(data, list) and isinstance(key, int) and key < len(data):
            value = data[key]
        elif isinstance(data, dict):
            value = data.get(key)
        else:
            return False
        if isinstance(value, dict) and "elided" in value:
            data[key] = f"[{value['elided']} elided from the event feed; starts {value.get('start', '')!s}]"
            return True
        data = value
    return False


async def update(handle: Handle, name: str, payload: Any, result: type[BaseModel]) -> Any:
    """Execute an update; CommandError says why the run refused it, UpdateNotTaken why it could not take it."""
    try:
        raw = await handle.execute_update(name, payload, rpc_timeout=UPDATE_TIMEOUT)
    except WorkflowUpdateFailedError as exc:
        raise CommandError(failure_text(exc)) from None
    except WorkflowUpdateRPCTimeoutOrCancelledError:
        raise UpdateNotTaken(
            f"{handle.id}: no worker took the update within {UPDATE_TIMEOUT.seconds} s "
            "(is one serving the run's task queue?)"
        ) from None
    except RPCError as exc:
        if "paused" in exc.message.lower():
            raise UpdateNotTaken(f"{handle.id}: {PAUSED}") from None
        if exc.status == RPCStatusCode.RESOURCE_EXHAUSTED:
            raise UpdateNotTaken(f"{handle.id}: the run takes no more updates now ({exc.message})") from None
        raise CommandError(rpc_text(exc, handle.id)) from None
    return result.model_validate(raw)


def _payload(responses: list[ToolApprovalResponse]) -> list[dict[str, Any]]:
    return [r.model_dump(mode="json", exclude_none=True) for r in responses]


async def submit(handle: Handle, responses: list[ToolApprovalResponse]) -> DecisionAck:
    """Send decisions (explicit call ids, each with a digest) in one validated update."""
    ack: DecisionAck = await update(handle, UPDATE_APPROVAL, _payload(responses), DecisionAck)
    return ack


async def signal(handle: Handle, responses: list[ToolApprovalResponse]) -> None:
    """Send decisions by signal: always accepted, applied when the run goes on (or recorded as ignored)."""
    try:
        await handle.signal(SIGNAL_APPROVAL, _payload(responses))
    except RPCError as exc:
        raise CommandError(rpc_text(exc, handle.id)) from None


# --- sessions --------------------------------------------------------------------------------


async def session(handle: Handle) -> SessionView:
    return _typed(TypeAdapter(SessionView), await query(handle, QUERY_SESSION), "its session")


async def transcript(handle: Handle) -> list[ChatMessage]:
    return _typed(_MESSAGES, await query(handle, QUERY_MESSAGES), "its transcript")


async def send_message(handle: Handle, text: str) -> TurnAnswer:
    """A session's next message; its turn's answer, however long the turn takes (the update is
    taken within `UPDATE_TIMEOUT`, then awaited). A session moving to a new run is sent again."""
    for _ in range(MOVING_RETRIES):
        try:
            taken = await handle.start_update(
                UPDATE_SEND_MESSAGE,
                {"text": text},
                wait_for_stage=WorkflowUpdateStage.ACCEPTED,
                rpc_timeout=UPDATE_TIMEOUT,
            )
            return TurnAnswer.model_validate(await taken.result())
        except WorkflowUpdateFailedError as exc:
            cause = exc.cause
            if isinstance(cause, ApplicationError) and cause.type == SESSION_MOVING:
                await asyncio.sleep(0.2)
                continue
            raise CommandError(failure_text(exc)) from None
        except WorkflowUpdateRPCTimeoutOrCancelledError:
            raise UpdateNotTaken(
                f"{handle.id}: no worker took the message within {UPDATE_TIMEOUT.seconds} s "
                "(is one serving the run's task queue?)"
            ) from None
        except RPCError as exc:
            raise CommandError(_session_rpc_text(exc, handle.id)) from None
    raise CommandError(f"{handle.id}: the session kept moving to a new run; send the message again")


async def end_session(handle: Handle) -> AgentRunResult:
    """End a session between turns; the run's result (asked again while the session moves)."""
    for _ in range(MOVING_RETRIES):
        try:
            result: AgentRunResult = await update(handle, UPDATE_END_SESSION, {}, AgentRunResult)
        except CommandError as exc:
            if "already completed" in str(exc) or "already finished" in str(exc):
                raise CommandError(f"the session {handle.id!r} has ended already") from None
            if "moving to a new run" in str(exc):
                await asyncio.sleep(0.2)
                continue
            raise
        return result
    raise CommandError(f"{handle.id}: the session kept moving to a new run; end it again")


def _session_rpc_text(exc: RPCError, workflow_id: str) -> str:
    if "already completed" in exc.message:
        return f"the session {workflow_id!r} has ended; see `signoff result {workflow_id}`"
    return rpc_text(exc, workflow_id)
