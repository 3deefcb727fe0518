"""The server's records of honoured signatures: the tool activity spends each one once.

What a record is, and why its id decides, is `signoff.approval.spent`. Here, the calls:

- Spending a signature starts the workflow `signoff-spent-<digest>` of type
  `SignoffSpentSignature` on a task queue nobody serves, its input the honouring activity
  execution, with `WorkflowIDReusePolicy.REJECT_DUPLICATE` and conflict policy FAIL: the
  server starts it once, and never again while it runs or its closed run is kept. Its start
  request id is derived from the record and the execution, so a retry of the same execution
  is answered as the start it repeats (the server deduplicates by it, also once the record
  was closed) and goes on; any other execution is refused, and told which one honoured it.
- Its first workflow task is delayed past its execution timeout: no worker (an attacker's
  polling that queue included) ever gets a task of it, so it has no point to reset to, and it
  times out by itself `record_timeout(max_age)` after it started.
- A grant with `max_uses` spends one of `max_uses` slots per call it approves. Slots are
  tried from one derived from the execution, in order, wrapping round: a retry of an
  execution walks the same slots and meets its own before any free one.
- A signature is honoured at most `max_age` after it was signed, never longer than the
  namespace's retention less an hour (asked once an hour), so a record someone terminated
  is still kept while the signatures it spends could be honoured.

Cost per gated call: one StartWorkflowExecution per signature that counts (one Action on
Temporal Cloud), plus one history read when it is refused, to say by whom; one
DescribeNamespace an hour per worker.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from google.protobuf.duration_pb2 import Duration
from temporalio import activity
from temporalio.api.common.v1 import Payloads, WorkflowExecution, WorkflowType
from temporalio.api.enums.v1 import WorkflowIdConflictPolicy, WorkflowIdReusePolicy
from temporalio.api.sdk.v1 import UserMetadata
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import (
    DescribeNamespaceRequest,
    GetWorkflowExecutionHistoryRequest,
    StartWorkflowExecutionRequest,
)
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from signoff.approval.digest import sha256_hex
from signoff.approval.evidence import Counted
from signoff.approval.spent import (
    DEFAULT_MAX_AGE,
    RECORD_QUEUE,
    RECORD_TYPE,
    Honouring,
    age_problem,
    effective_max_age,
    grant_slot_id,
    needs_record,
    record_id,
    record_timeout,
    spent_elsewhere,
)

RETENTION_CHECKED_EVERY = 3600.0
"""Seconds between two questions about the namespace's retention."""


class SpentSignatures:
    """Spends the signatures that authorise a gated call, in the server's records.

    Args:
        max_age: how long after its signing a signature is honoured (`SIGNOFF_SIGNATURE_MAX_AGE`).
    """

    def __init__(self, max_age: timedelta = DEFAULT_MAX_AGE) -> None:
        self.max_age = max_age
        self._retention: tuple[float, timedelta | None] | None = None

    async def spend(self, counted: Sequence[Counted], quorum: int) -> str | None:
        """Spend signatures of `counted` for the current activity execution until `quorum` of
        them are its own; None once they are, else why not (each refusal named)."""
        info = activity.info()
        client = activity.client()
        me = Honouring(
            info.workflow_id or "", info.workflow_run_id or "", info.activity_id, info.scheduled_time.isoformat()
        )
        max_age = await self._max_age(client)
        now = datetime.now(UTC)
        mine, problems, waiting = 0, [], list(counted)
        while mine < quorum and waiting:  # as many at once as the quorum still needs
            batch, waiting = waiting[: quorum - mine], waiting[quorum - mine :]
            answers = await asyncio.gather(*(self._spend_one(client, c, me, now, max_age) for c in batch))
            mine += sum(answer is None for answer in answers)
            problems += [answer for answer in answers if answer is not None]
        if mine >= quorum:
            return None
        return f"{mine} of {quorum} signed approval(s) unspent; " + "; ".join(problems)

    async def _spend_one(
        self, client: Client, counted: Counted, me: Honouring, now: datetime, max_age: timedelta
    ) -> str | None:
        if not needs_record(counted):
            return None
        if (problem := age_problem(counted, now, max_age)) is not None:
            return problem
        timeout = record_timeout(max_age)
        if not counted.grant_use:
            record = record_id(counted)
            if await _take(client, record, me, timeout, counted.identity.subject):
                return None
            return spent_elsewhere(counted, await _holder(client, record))
        grant = counted.claim.grant
        assert grant is not None and grant.max_uses is not None
        slots = grant.max_uses
        first = int(sha256_hex(me.text())[:12], 16) % slots
        for step in range(slots):
            slot = (first + step) % slots + 1
            if await _take(client, grant_slot_id(counted, slot), me, timeout, counted.identity.subject):
                return None
        return spent_elsewhere(counted, None, slots)

    async def _max_age(self, client: Client) -> timedelta:
        """`max_age`, within the namespace's retention (asked at most once an hour)."""
        known = self._retention
        if known is None or time.monotonic() - known[0] > RETENTION_CHECKED_EVERY:
            self._retention = known = (time.monotonic(), await _retention(client))
        return effective_max_age(self.max_age, known[1])


async def _take(client: Client, record: str, me: Honouring, timeout: timedelta, subject: str) -> bool:
    """Start `record` for `me`; True if it is `me`'s (new, or started by this execution before)."""
    converter = client.data_converter
    (given,) = await converter.encode([me.text()])
    (summary,) = await converter.encode([f"{subject}'s signature, spent by {me.describe()}"])
    request = StartWorkflowExecutionRequest(
        namespace=client.namespace,
        workflow_id=record,
        workflow_type=WorkflowType(name=RECORD_TYPE),
        task_queue=TaskQueue(name=RECORD_QUEUE),
        input=Payloads(payloads=[given]),
        workflow_execution_timeout=_duration(timeout),
        workflow_start_delay=_duration(timeout + timedelta(hours=1)),  # never a task: it times out first
        identity=client.identity,
        request_id=sha256_hex(f"{record}\0{me.text()}"),  # a retry of this execution is the same start
        workflow_id_reuse_policy=WorkflowIdReusePolicy.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
        workflow_id_conflict_policy=WorkflowIdConflictPolicy.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
        user_metadata=UserMetadata(summary=summary),
    )
    try:
        await client.workflow_service.start_workflow_execution(request)
    except RPCError as exc:
        if exc.status == RPCStatusCode.ALREADY_EXISTS:
            return False
        raise
    return True


async def _holder(client: Client, record: str) -> Honouring | None:
    """Who a record says honoured it (None: it cannot be read as one of signoff's)."""
    request = GetWorkflowExecutionHistoryRequest(
        namespace=client.namespace, execution=WorkflowExecution(workflow_id=record), maximum_page_size=1
    )
    try:
        events = (await client.workflow_service.get_workflow_execution_history(request)).history.events
        payloads = events[0].workflow_execution_started_event_attributes.input.payloads
        (text,) = await client.data_converter.decode(payloads, [str])
    except (RPCError, IndexError, ValueError, TypeError):
        return None
    return Honouring.read(text) if isinstance(text, str) else None


async def _retention(client: Client) -> timedelta | None:
    try:
        described = await client.workflow_service.describe_namespace(
            DescribeNamespaceRequest(namespace=client.namespace)
        )
    except RPCError:
        return None  # not allowed to ask: the configured age stands
    config = described.config
    return (
        config.workflow_execution_retention_ttl.ToTimedelta()
        if config.HasField("workflow_execution_retention_ttl")
        else None
    )


def _duration(value: timedelta) -> Duration:
    duration = Duration()
    duration.FromTimedelta(value)
    return duration
