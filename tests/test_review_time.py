"""Rubber-stamp signals on a real server: a policy's `min_review_seconds` refuses a person's
approval sent sooner than that after the call was asked (they look again), and not auto mode's."""

from __future__ import annotations

from temporalio.client import Client

from signoff.approval.policy import ApprovalPolicy, AutoMode, PolicyBook, tightened
from tests.governance import deploy, ops_agent, ops_run, refusal, turns
from tests.helpers import assert_eventually, wait_pending
from tests.test_auto_mode import CRITERIA, model, verdict


async def test_an_approval_sooner_than_min_review_seconds_is_refused_and_a_later_one_counts(client: Client) -> None:
    agents = {"ops": ops_agent(deploy=ApprovalPolicy(min_review_seconds=2))}
    async with ops_run(client, turns([deploy("call_1")]), worker={"agents": agents}) as handle:
        (pending,) = await wait_pending(handle)
        decision = {"call_id": "call_1", "approved": True, "approver": "alice"}
        refused = await refusal(handle.execute_update("submit_tool_approval", decision))
        # refused until two seconds have passed since the call was asked, then taken
        await assert_eventually(lambda: handle.execute_update("submit_tool_approval", decision), timeout=30)
        result = await handle.result()
    assert pending["policy"]["min_review_seconds"] == 2
    assert "asks for a second look (min_review_seconds = 2)" in refused
    assert result.text == "deployed web" and result.approvals[0].approver == "alice"


async def test_auto_mode_is_not_held_to_min_review_seconds(client: Client) -> None:
    policy = ApprovalPolicy(min_review_seconds=30, auto=AutoMode(criteria="ops"))
    worker = {"agents": {"ops": ops_agent(deploy=policy)}, "policies": PolicyBook(criteria={"ops": CRITERIA})}
    async with ops_run(client, model(lambda _: verdict("approve")), worker=worker) as handle:
        result = await handle.result()
    assert result.approvals[0].approver == "auto:ops"


def test_a_policy_file_cannot_shorten_min_review_seconds() -> None:
    merged, problems = tightened(ApprovalPolicy(min_review_seconds=10), ApprovalPolicy(min_review_seconds=1))
    assert merged.min_review_seconds == 10 and problems == ["shortens min_review_seconds"]
