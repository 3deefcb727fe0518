"""What a run answers about itself: typed query results (CONTRACT.md "queries")."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from temporalio import workflow

from signoff.agent.snapshot import RunSnapshot
from signoff.approval.requests import ApprovalRecord, Grant, ToolApprovalRequest
from signoff.contract import (
    QUERY_AUDIT,
    QUERY_EVENTS,
    QUERY_GRANTS,
    QUERY_MESSAGES,
    QUERY_PENDING,
    QUERY_SNAPSHOT,
    QUERY_STATUS,
    RunStatus,
)
from signoff.loop.messages import ChatMessage
from signoff.workflows.base import AgentRunBase


class AuditTrail(BaseModel):
    """The run's decisions so far, hash-chained; `head` is the last record's hash."""

    records: list[ApprovalRecord]
    head: str


class RunQueries(AgentRunBase):
    @workflow.query(name=QUERY_PENDING)
    def pending_approvals(self) -> list[ToolApprovalRequest]:
        return self._loop.pending_requests()

    @workflow.query(name=QUERY_STATUS)
    def status(self) -> RunStatus:
        state = self._loop.state
        return RunStatus(
            status=self._record.status,
            agent=self._input.agent,
            round=state.round,
            pending=self._loop.pending_requests(),
            finish_reason=state.finish_reason,
            usage=state.usage,
            event_seq=self._record.seq,
            requested_by=state.requested_by,
            grants=self._loop.live_grants(workflow.now()),
        )

    @workflow.query(name=QUERY_EVENTS)
    def events(self, since: int = 0) -> list[dict[str, Any]]:
        return self._record.since(since)

    @workflow.query(name=QUERY_MESSAGES)
    def messages(self) -> list[ChatMessage]:
        return self._loop.messages

    @workflow.query(name=QUERY_SNAPSHOT)
    def agent_snapshot(self) -> RunSnapshot | None:
        """The agent as this run started with it (instructions, tools, policies, limits)."""
        return self._snapshot

    @workflow.query(name=QUERY_GRANTS)
    def grants(self) -> list[Grant]:
        return self._loop.state.grants

    @workflow.query(name=QUERY_AUDIT)
    def audit(self) -> AuditTrail:
        return AuditTrail(records=self._loop.state.approvals, head=self._loop.state.audit_head)
