"""Deadlines, their outcomes, reminders, escalation and `extend_deadline`, over hours of
skipped time (the time-skipping test server) with a real HTTP receiver for the notices."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any

import pytest
from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from signoff.activities.notify import DELIVERY_HEADER, NotifyConfig
from signoff.approval.policy import ApprovalPolicy, OnTimeout
from signoff.testing import Script
from tests.governance import (
    deploy,
    events_of,
    no_activity_in_flight,
    ops_agent,
    ops_run,
    refusal,
    restart,
    turns,
    wait_event,
)
from tests.helpers import wait_pending
from tests.receiver import Receiver

HOUR = 3600


@asynccontextmanager
async def paused(
    env: WorkflowEnvironment, script: Script, receiver: Receiver | None = None, **policies: ApprovalPolicy
) -> AsyncIterator[WorkflowHandle[Any, Any]]:
    """A run of agent `ops` with these policies, paused on its first call, its notices settled."""
    notify = NotifyConfig(urls=(receiver.url,)) if receiver else None
    worker = {"agents": {"ops": ops_agent(**policies)}, "notify": notify}
    async with ops_run(env.client, script, worker=worker) as handle:
        await wait_pending(handle)
        await no_activity_in_flight(handle)
        yield handle


async def decide(handle: WorkflowHandle[Any, Any], call_id: str, approver: str | None = None) -> dict[str, Any]:
    decision = {"call_id": call_id, "approved": True, "approver": approver}
    ack: dict[str, Any] = await handle.execute_update("submit_tool_approval", decision)
    return ack


@pytest.mark.parametrize(
    "outcome, text, approved",
    [(OnTimeout.DENY, f"Rejected: No decision within {HOUR}s", False), (OnTimeout.APPROVE, "deployed web", True)],
    ids=["deny", "approve"],
)
async def test_a_deadline_settles_the_call_as_its_policy_says_and_audits_a_timeout(
    skipping: WorkflowEnvironment, outcome: OnTimeout, text: str, approved: bool
) -> None:
    policy = ApprovalPolicy(timeout_seconds=HOUR, on_timeout=outcome)
    async with paused(skipping, turns([deploy("call_d")]), deploy=policy) as handle:
        result = await handle.result()  # the server skips the hour
    assert result.text == text
    (record,) = result.approvals
    assert (record.timed_out, record.outcome, record.approved) == (True, "approved" if approved else "denied", approved)
    assert record.approver is None and record.verified is False and record.reason == f"No decision within {HOUR}s"
    assert record.decided_at is not None and record.requested_at is not None
    assert timedelta(hours=1) <= record.decided_at - record.requested_at < timedelta(hours=1, seconds=5)


async def test_fail_run_fails_the_run_naming_why_after_telling_the_channels(skipping: WorkflowEnvironment) -> None:
    policy = ApprovalPolicy(timeout_seconds=HOUR, on_timeout=OnTimeout.FAIL_RUN)
    with Receiver() as receiver:
        async with paused(skipping, turns([deploy("call_d")]), receiver, deploy=policy) as handle:
            with pytest.raises(WorkflowFailureError) as failure:
                await handle.result()
            (decision,) = await events_of(handle, "approval_decision")
    cause = failure.value.cause
    assert getattr(cause, "type", None) == "ApprovalTimeout"
    assert "no decision on call 'call_d' (deploy) within 3600s" in str(cause) and "on_timeout=fail_run" in str(cause)
    assert (decision["record"]["timed_out"], decision["record"]["outcome"]) == (True, "failed_run")
    (notice,) = receiver.of("approval_timed_out")
    assert notice.json["decision"]["outcome"] == "failed_run" and "the run failed" in notice.json["text"]


async def test_a_decision_after_the_deadline_is_refused_never_applied_late(skipping: WorkflowEnvironment) -> None:
    script = turns([deploy("call_d")], [restart("call_r")])
    async with paused(skipping, script, deploy=ApprovalPolicy(timeout_seconds=60)) as handle:
        await skipping.sleep(timedelta(seconds=61))
        (pending,) = await wait_pending(handle)
        assert pending["call_id"] == "call_r"
        refused = await refusal(decide(handle, "call_d"))
        await handle.signal("tool_approval", {"call_id": "call_d", "approved": True})
        (ignored,) = await wait_event(handle, "decision_ignored")
        await decide(handle, "call_r")
        result = await handle.result()
    late = "call 'call_d' timed out before a decision arrived; it was not decided late"
    assert late in refused and late in ignored["reason"]
    assert result.text == "Rejected: No decision within 60s|restarted db"
    assert [(a.call_id, a.timed_out) for a in result.approvals] == [("call_d", True), ("call_r", False)]


async def test_reminders_and_escalation_fire_at_their_times_and_the_escalated_approver_can_decide(
    skipping: WorkflowEnvironment,
) -> None:
    policy = ApprovalPolicy(
        approvers=("alice",),
        remind_after_seconds=(600, 1200),
        escalate_after_seconds=1800,
        escalate_to=("bob",),
        timeout_seconds=2 * HOUR,
    )
    with Receiver() as receiver:
        async with paused(skipping, turns([deploy("call_d")]), receiver, deploy=policy) as handle:
            await skipping.sleep(timedelta(seconds=599))
            # The update is answered after the run handled all that was due (the reminder, were it due).
            assert "not among its approvers" in await refusal(decide(handle, "call_d", "bob"))
            assert await events_of(handle, "approval_reminder") == []
            await skipping.sleep(timedelta(seconds=2))
            await wait_event(handle, "approval_reminder", 1)
            await no_activity_in_flight(handle)
            await skipping.sleep(timedelta(seconds=600))
            await wait_event(handle, "approval_reminder", 2)
            await no_activity_in_flight(handle)
            await skipping.sleep(timedelta(seconds=597))  # 1799 s after the request
            assert "not among its approvers" in await refusal(decide(handle, "call_d", "bob"))
            assert await events_of(handle, "approval_escalated") == []
            await skipping.sleep(timedelta(seconds=2))
            await wait_event(handle, "approval_escalated")
            await no_activity_in_flight(handle)
            ack = await decide(handle, "call_d", "bob")
            result = await handle.result()
    assert ack["accepted"] == ["call_d"] and result.text == "deployed web"
    assert result.approvals[0].approver == "bob" and result.approvals[0].timed_out is False
    notices = {d.headers[DELIVERY_HEADER.lower()]: (d.event, d.call_id) for d in receiver.deliveries}
    assert sorted(notices.values()) == [
        ("approval_decided", "call_d"),
        ("approval_escalated", "call_d"),
        ("approval_reminder", "call_d"),
        ("approval_reminder", "call_d"),
        ("approval_requested", "call_d"),
    ]
    escalated = receiver.of("approval_escalated")[0].json
    assert "now bob may decide it too" in escalated["text"] and "approvers: alice, bob" in escalated["text"]


async def test_only_an_allowed_approver_moves_a_deadline_and_the_answer_is_the_new_one(
    skipping: WorkflowEnvironment,
) -> None:
    policy = ApprovalPolicy(approvers=("alice",), timeout_seconds=600)
    async with paused(skipping, turns([deploy("call_d")]), deploy=policy) as handle:
        (before,) = await handle.query("pending_approvals")
        for who in ("bob", None):
            extension = {"call_id": "call_d", "seconds": HOUR, "approver": who}
            assert "not among its approvers" in await refusal(handle.execute_update("extend_deadline", extension))
        by_alice = {"call_id": "call_d", "seconds": HOUR, "approver": "alice"}
        ack = await handle.execute_update("extend_deadline", by_alice)
        old = datetime.fromisoformat(before["expires_at"])
        assert datetime.fromisoformat(ack["expires_at"]) == old + timedelta(hours=1)
        (after,) = await handle.query("pending_approvals")
        assert after["expires_at"] == ack["expires_at"]
        await skipping.sleep(timedelta(seconds=700))  # past the first deadline
        assert [p["call_id"] for p in await handle.query("pending_approvals")] == ["call_d"]
        (extended,) = await events_of(handle, "deadline_extended")
        result = await handle.result()
    assert extended["by"] == "alice" and result.text == "Rejected: No decision within 4200s"
