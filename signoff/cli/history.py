"""What a run's workflow history says about its approvals, for `signoff audit --verify`.

The history is the server's record, written as the run went; the audit trail is what
the run says about itself. From the history of every run of a workflow id (following
continue-as-new back to the first), this reads:

- each `signoff.tool` activity's input: the call exactly as it was run, and the approval
  proof it ran under (call id, arguments digest, the audit record's hash);
- the audit records the history itself carries: the result's `approvals` when the run
  completed, the trail carried across each continue-as-new;
- each child run it started (a sub-agent's call: `child_workflow_execution_started`), with
  the child's first run id, which its records and signatures are bound to;
- every token sent with a decision (the inputs of the `tool_approval` signals and of the
  accepted `submit_tool_approval` and `extend_deadline` updates), with the server's time of
  the event, and the workflow type each run was started as.

Payloads are decoded with the client's data converter, so payloads kept in external
storage are read from there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from temporalio.api.common.v1 import Payloads
from temporalio.client import Client, WorkflowHistory
from temporalio.service import RPCError

from signoff.activities.models import AUTO_ACTIVITY, TOOL_ACTIVITY, ToolInput
from signoff.approval.requests import ApprovalRecord
from signoff.contract import SIGNAL_APPROVAL, UPDATE_APPROVAL, UPDATE_EXTEND_DEADLINE, AgentRunResult
from signoff.errors import CommandError
from signoff.operator.run_client import rpc_text
from signoff.workflows.run_input import ContinuedRun

MAX_RUNS = 10_000
MAX_TOKENS_SHOWN = 10_000
"""Tokens read from one run's decisions (a flood of signals must not make the audit endless)."""
DECIDING = (SIGNAL_APPROVAL, UPDATE_APPROVAL, UPDATE_EXTEND_DEADLINE)


@dataclass(frozen=True)
class SentToken:
    """A token sent with a decision, and when the server recorded it."""

    token: str
    at: datetime


@dataclass(frozen=True)
class StartedChild:
    """A child run the history says this run started (a sub-agent's call's): its workflow id
    and first run id (the chain its approvals are bound to)."""

    workflow_id: str
    chain_id: str


@dataclass
class RunEvidence:
    """One run of the workflow id, as its history tells it."""

    run_id: str
    workflow_type: str = ""
    ran: list[ToolInput] = field(default_factory=list)
    records: list[ApprovalRecord] | None = None
    """The trail as the history states it at the run's end (None: the run has not ended so)."""
    continues: str | None = None
    """The run this one continued (continue-as-new), if any."""
    tokens: list[SentToken] = field(default_factory=list)
    children: list[StartedChild] = field(default_factory=list)


async def _decode(client: Client, payloads: Payloads, kind: type, what: str) -> Any:
    try:
        (value,) = await client.data_converter.decode(payloads.payloads, [kind])
    except Exception as exc:
        raise CommandError(f"cannot read {what} in the history: {exc}") from None
    return value


async def read_history(client: Client, history: WorkflowHistory, run_id: str) -> RunEvidence:
    """The evidence in one run's history."""
    evidence = RunEvidence(run_id)
    judged: set[int] = set()  # auto mode's evaluations: their results carry its signed votes
    for event in history.events:
        kind = event.WhichOneof("attributes")
        if kind == "workflow_execution_started_event_attributes":
            started = event.workflow_execution_started_event_attributes
            evidence.continues = started.continued_execution_run_id or None
            evidence.workflow_type = started.workflow_type.name
        elif kind == "workflow_execution_signaled_event_attributes":
            signaled = event.workflow_execution_signaled_event_attributes
            if signaled.signal_name in DECIDING:
                _keep_tokens(evidence, await _decisions(client, signaled.input), event.event_time.ToDatetime(UTC))
        elif kind == "workflow_execution_update_accepted_event_attributes":
            request = event.workflow_execution_update_accepted_event_attributes.accepted_request.input
            if request.name in DECIDING:
                _keep_tokens(evidence, await _decisions(client, request.args), event.event_time.ToDatetime(UTC))
        elif kind == "activity_task_scheduled_event_attributes":
            scheduled = event.activity_task_scheduled_event_attributes
            if scheduled.activity_type.name == TOOL_ACTIVITY:
                evidence.ran.append(await _decode(client, scheduled.input, ToolInput, f"tool call {event.event_id}"))
            elif scheduled.activity_type.name == AUTO_ACTIVITY:
                judged.add(event.event_id)
        elif kind == "activity_task_completed_event_attributes":
            completed = event.activity_task_completed_event_attributes
            if completed.scheduled_event_id in judged:
                _keep_tokens(evidence, await _decisions(client, completed.result), event.event_time.ToDatetime(UTC))
        elif kind == "child_workflow_execution_started_event_attributes":
            child = event.child_workflow_execution_started_event_attributes.workflow_execution
            evidence.children.append(StartedChild(child.workflow_id, child.run_id))
        elif kind == "workflow_execution_completed_event_attributes":
            result = event.workflow_execution_completed_event_attributes.result
            evidence.records = (await _decode(client, result, AgentRunResult, "the result")).approvals
        elif kind == "workflow_execution_continued_as_new_event_attributes":
            carried = event.workflow_execution_continued_as_new_event_attributes.input
            evidence.records = (await _decode(client, carried, ContinuedRun, "the continued state")).loop.approvals
    return evidence


async def _decisions(client: Client, payloads: Payloads) -> Any:
    """A decision input as JSON (anything that does not decode is no evidence of anything)."""
    try:
        (value,) = await client.data_converter.decode(payloads.payloads[:1], [object])
    except Exception:
        return None
    return value


def _keep_tokens(evidence: RunEvidence, data: Any, at: datetime) -> None:
    for item in data if isinstance(data, list) else [data]:
        token = item.get("token") if isinstance(item, dict) else None
        if isinstance(token, str) and len(evidence.tokens) < MAX_TOKENS_SHOWN:
            evidence.tokens.append(SentToken(token, at))


async def run_chain(client: Client, workflow_id: str) -> list[RunEvidence]:
    """Every run of the workflow id's current chain, first to last."""
    try:
        run_id: str | None = (await client.get_workflow_handle(workflow_id).describe()).run_id
        chain: list[RunEvidence] = []
        while run_id and len(chain) < MAX_RUNS:
            history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
            chain.append(await read_history(client, history, run_id))
            run_id = chain[-1].continues
    except RPCError as exc:
        raise CommandError(rpc_text(exc, workflow_id)) from None
    return chain[::-1]
