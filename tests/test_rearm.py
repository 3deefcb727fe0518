"""Re-open an expired call: `on_timeout = "hold"` retires a call at its deadline (status `expired`)
while the run stays parked, and `rearm_tool_call` / `signoff rearm` re-opens it as a new request."""

# ruff: noqa: F811 - the harness's fixtures are imported by name and taken as parameters

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from signoff.approval.authority import Decider
from signoff.approval.policy import ApprovalPolicy, OnTimeout, PolicyBook
from signoff.approval.requests import ToolApprovalResponse as Decision
from signoff.errors import DecisionError
from signoff.loop.agent_loop import AgentLoop, AwaitApproval
from tests.cli_harness import Cli, cli, cli_environ, served  # noqa: F401
from tests.governance import activity_types, deploy, events_of, ops_agent, ops_run, refusal, turns, wait_event
from tests.helpers import assert_eventually, start_run, wait_pending
from tests.test_loop import NOW, TOOLS, USER, call, run_ready, start, turn

HOLD = ApprovalPolicy(timeout_seconds=60, on_timeout=OnTimeout.HOLD, approvers=("alice",))
ALICE = Decider.claimed("alice")


def held(*ids: str) -> AgentLoop:
    loop = start(*(call(i, command="ls") for i in ids), gated=ids, policies={"run_command": HOLD})
    loop.due(NOW + timedelta(seconds=60))
    return loop


def test_a_held_call_expires_at_its_deadline_and_the_run_stays_parked() -> None:
    loop = held("c1")
    (request,) = loop.pending_requests()
    assert request.status == "expired" and isinstance(loop.next_action(), AwaitApproval)
    assert loop.next_wakeup() is None and loop.messages[-1].role == "assistant"  # nothing answered it
    (record,) = loop.state.approvals
    assert (record.outcome, record.timed_out, record.approved) == ("expired", True, False)


def test_an_expired_call_takes_no_decision_until_it_is_rearmed() -> None:
    loop = held("c1")
    with pytest.raises(DecisionError, match=r"expired before a decision arrived.*rearm"):
        loop.decide([Decision.approve("c1", approver="alice")], NOW)


@pytest.mark.parametrize(
    ("call_id", "seconds", "decider", "why"),
    [
        ("nope", None, ALICE, r"no pending call with id 'nope' \(pending call ids: c1, c2\)"),
        ("c2", None, ALICE, "has not expired"),
        ("c1", 0, ALICE, "positive and at most 366 days"),
        ("c1", 400 * 86400, ALICE, "positive and at most 366 days"),
        ("c1", None, Decider.claimed("mallory"), "'mallory' is not among its approvers"),
    ],
)
def test_a_rearm_that_cannot_be_is_refused(call_id: str, seconds: float | None, decider: Decider, why: str) -> None:
    loop = start(call("c1", command="ls"), call("c2", command="ls"), gated=("c1", "c2"), policies={"run_command": HOLD})
    loop.state.pending[1].request.expires_at = None  # type: ignore[union-attr]  # c2 waits forever
    loop.due(NOW + timedelta(seconds=60))
    with pytest.raises(DecisionError, match=why):
        loop.rearm(call_id, seconds, decider, NOW)


def test_a_rearmed_call_is_a_new_request_that_runs_once_approved_with_both_records() -> None:
    loop = AgentLoop([USER], TOOLS, 2, policies={"run_command": HOLD})
    loop.bind_to("wf", "chain")
    loop.apply_model_turn(turn(call("c1", command="ls")), ("c1",), NOW, drawn="draw-1")
    first = loop.pending_requests()[0]
    loop.due(NOW + timedelta(seconds=60))
    later = NOW + timedelta(hours=1)
    again = loop.rearm("c1", 120, ALICE, later, drawn="draw-2")
    assert (again.status, again.requested_at, again.expires_at) == ("waiting", later, later + timedelta(seconds=120))
    assert first.binding and again.binding and again.rearmed_from == first.binding.request != again.binding.request
    loop.decide([Decision.approve("c1", approver="alice")], later)
    assert len(run_ready(loop)) == 1
    assert [r.outcome for r in loop.state.approvals] == ["expired", "approved"]
    events = [e.type for e in loop.drain_events()]
    assert "call_rearmed" in events and events.count("approval_request") == 2


def test_star_decides_the_waiting_calls_and_leaves_expired_ones() -> None:
    loop = start(call("c1", command="ls"), call("c2", command="ls"), gated=("c1", "c2"), policies={"run_command": HOLD})
    loop.state.pending[1].request.expires_at = None  # type: ignore[union-attr]
    loop.due(NOW + timedelta(seconds=60))
    assert loop.decide([Decision.deny("*", approver="alice")], NOW) == ["c2"]
    assert [r.status for r in loop.pending_requests()] == ["expired"]


def test_cancelling_answers_an_expired_call() -> None:
    loop = held("c1")
    loop.cancel(NOW)
    assert loop.messages[-1].content == "Rejected: Run cancelled"


# --- on the dev server ------------------------------------------------------------------


def holding(seconds: float = 1, **options: Any) -> dict[str, Any]:
    policy = ApprovalPolicy(timeout_seconds=seconds, on_timeout=OnTimeout.HOLD, approvers=("alice",))
    return {"agents": {"ops": ops_agent(deploy=policy)}, **options}


async def expired(handle: Any) -> dict[str, Any]:
    async def check() -> dict[str, Any]:
        (request,) = await handle.query("pending_approvals")
        assert request.get("status") == "expired", request
        return dict(request)

    return await assert_eventually(check, 20)


async def test_a_held_call_expires_is_rearmed_approved_and_runs_once(client: Client) -> None:
    async with ops_run(client, turns([deploy("call_1")]), worker=holding()) as handle:
        await expired(handle)
        status = await handle.query("status")
        early = await refusal(handle.execute_update("submit_tool_approval", {"call_id": "call_1", "approved": True}))
        request = await handle.execute_update(
            "rearm_tool_call", {"call_id": "call_1", "deadline_seconds": 600, "approver": "alice"}
        )
        await handle.execute_update(
            "submit_tool_approval", {"call_id": "call_1", "approved": True, "approver": "alice"}
        )
        result = await handle.result()
        rearmed = await events_of(handle, "call_rearmed")
        kinds = await activity_types(handle)
    assert status["status"] == "AwaitingApproval" and "rearm" in early
    assert "status" not in request and request["rearmed_from"] == rearmed[0]["previous_request"]
    assert request["binding"]["request"] == rearmed[0]["request"] != rearmed[0]["previous_request"]
    assert result.text == "deployed web" and kinds.count("signoff.tool") == 1
    assert [(r.outcome, r.timed_out) for r in result.approvals] == [("expired", True), ("approved", False)]


async def test_a_rearm_by_a_stranger_or_of_a_call_that_cannot_be_rearmed_is_refused(client: Client) -> None:
    async with ops_run(client, turns([deploy("call_1")]), worker=holding(600)) as handle:
        await wait_pending(handle)
        waiting = await refusal(handle.execute_update("rearm_tool_call", {"call_id": "call_1"}))
        unknown = await refusal(handle.execute_update("rearm_tool_call", {"call_id": "x" * 600}))
        typo = await refusal(handle.execute_update("rearm_tool_call", {"call_id": "call_1", "deadline": 5}))
        negative = await refusal(
            handle.execute_update("rearm_tool_call", {"call_id": "call_1", "deadline_seconds": -1})
        )
        await handle.terminate()
    assert "has not expired" in waiting and "pending call ids: call_1" in waiting
    assert "at most 512 characters" in unknown and "deadline" in typo and "greater than 0" in negative


async def test_signoff_rearm_reopens_the_call_and_notices_go_out_as_for_a_fresh_wait(
    client: Client, task_queue: str, tmp_path: Path, cli: Cli
) -> None:
    policy = ApprovalPolicy(timeout_seconds=1, on_timeout=OnTimeout.HOLD)
    policies = PolicyBook(policies={"run_command": policy})
    async with served(client, task_queue, tmp_path, policies=policies):
        handle = await start_run(client, task_queue)
        await expired(handle)
        stranger = await cli("rearm", handle.id, "call_404")
        done = await cli("rearm", handle.id, "call_1", "--deadline", "2h")
        (request,) = await handle.query("pending_approvals")
        described = await handle.describe()
        await handle.execute_update("submit_tool_approval", {"call_id": "call_1", "approved": True})
        result = await handle.result()
        requested = await wait_event(handle, "approval_request", 2)
    assert stranger.code != 0 and "no pending call with id 'call_404'" in stranger.err
    assert done.code == 0 and "call_1 (run_command) is open again" in done.out, done
    assert (
        request.get("status", "waiting") == "waiting" and request["expires_at"] > requested[0]["request"]["expires_at"]
    )
    assert described.search_attributes.get("SignoffStatus") == ["AwaitingApproval"]
    assert [r.outcome for r in result.approvals] == ["expired", "approved"]
