"""What a run answers about itself: typed query results (CONTRACT.md "queries"), and its result.

Each is a view of the run's state, built when asked; none changes it.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

from signoff.approval.requests import ApprovalRecord
from signoff.contract import AgentRunResult, RunStatus
from signoff.loop.agent_loop import AgentLoop
from signoff.loop.state import LoopState
from signoff.workflows.feed import RunRecord


class AuditTrail(BaseModel):
    """The run's decisions so far, hash-chained; `head` is the last record's hash."""

    records: list[ApprovalRecord]
    head: str


def run_status(loop: AgentLoop, record: RunRecord, agent: str, now: datetime) -> RunStatus:
    """Where the run is: its status, round, waiting calls, usage, live grants at `now`."""
    state = loop.state
    return RunStatus(
        status=record.status,
        agent=agent,
        round=state.round,
        pending=loop.pending_requests(),
        finish_reason=state.finish_reason,
        usage=state.usage,
        event_seq=record.seq,
        requested_by=state.requested_by,
        grants=loop.live_grants(now),
    )


def trail_of(state: LoopState) -> AuditTrail:
    return AuditTrail(records=state.approvals, head=state.audit_head)


def run_result(state: LoopState) -> AgentRunResult:
    """What a finished run returns: how it finished, its last text, transcript, usage, decisions."""
    text = next((m.content for m in reversed(state.messages) if m.role == "assistant" and m.content), None)
    assert state.finish_reason is not None
    return AgentRunResult(
        finish_reason=state.finish_reason,
        text=text,
        messages=state.messages,
        rounds=state.round,
        usage=state.usage,
        approvals=state.approvals,
    )
