"""Auto mode on a real server, the scripted model as the evaluator: a confident verdict decides a
call without a person, anything else leaves it waiting for one exactly as without auto mode,
and under a verified policy the evaluator is one signed vote among the people's."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from signoff.activities.auto import AutoSettings
from signoff.activities.notify import NotifyConfig
from signoff.agent.builder import AgentBuilder
from signoff.approval import auto
from signoff.approval.auto import AutoCall, AutoVerdict
from signoff.approval.identity import ApproverKeys
from signoff.approval.policy import ApprovalPolicy, AutoMode, CriteriaSet, PolicyBook
from signoff.errors import ConfigError
from signoff.signing.keys import SigningKey
from signoff.testing import Reply, ScriptedRequest
from tests.approver_keys import signed, write_secret
from tests.governance import deploy, events_of, ops_agent, ops_run, wait_event
from tests.helpers import assert_eventually, wait_pending
from tests.receiver import Receiver

CRITERIA = CriteriaSet(
    effect="deploys a service",
    approve_when=("the target is web or api",),
    deny_when=("the target is prod-db",),
    min_confidence=0.8,
)


def verdict(verdict: str, confidence: float = 0.95, reasoning: str = "the target is web") -> Reply:
    return Reply.text(json.dumps({"verdict": verdict, "confidence": confidence, "reasoning": reasoning}))


def model(judge: Callable[[ScriptedRequest], Reply], target: str = "web") -> Callable[[ScriptedRequest], Reply]:
    """Asks for one deploy, then answers the tool message; the evaluator's requests go to `judge`."""

    def script(request: ScriptedRequest) -> Reply:
        if "response_format" in request.raw:
            return judge(request)
        if request.round == 1:
            return Reply.tool_calls([deploy("call_1", target)])
        return Reply.text("|".join(m.content or "" for m in request.messages if m.role == "tool"))

    return script


def auto_worker(policy: ApprovalPolicy | None = None, **worker: Any) -> dict[str, Any]:
    policy = policy or ApprovalPolicy(auto=AutoMode(criteria="ops"))
    agents = {"ops": ops_agent(deploy=policy)}
    return {"agents": agents, "policies": PolicyBook(criteria={"ops": CRITERIA})} | worker


def evaluator_requests(requests: list[ScriptedRequest]) -> list[ScriptedRequest]:
    return [r for r in requests if "response_format" in r.raw]


async def test_a_confident_approve_runs_the_call_without_a_person(client: Client) -> None:
    seen: list[ScriptedRequest] = []

    def judge(request: ScriptedRequest) -> Reply:
        seen.append(request)
        return verdict("approve")

    async with ops_run(client, model(judge), worker=auto_worker()) as handle:
        result = await handle.result()
        (event,) = await events_of(handle, "auto_evaluation")
    assert result.text == "deployed web"
    (record,) = result.approvals
    assert (record.approver, record.approved, record.verified) == ("auto:ops", True, False)
    assert (event["call_id"], event["criteria"], event["verdict"], event["outcome"]) == (
        "call_1",
        "ops",
        "approve",
        "approved",
    )
    assert event["confidence"] == 0.95 and event["reasoning"] == "the target is web"
    assert event["model"] == "scripted" and event["prompt_tokens"] > 0 and event["latency_ms"] >= 0
    (asked,) = seen
    response_format = asked.raw["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["name"] == "signoff_auto_verdict"
    assert set(response_format["json_schema"]["schema"]["required"]) == {"verdict", "confidence", "reasoning"}
    assert asked.tools == []
    text = "\n".join(m.content or "" for m in asked.messages)
    assert "the target is web or api" in text and "the target is prod-db" in text  # the criteria
    assert "deploy" in text and "Deploy a target." in text  # the tool, its description
    assert "UNTRUSTED" in text and '"target": "web"' in text.split("<<<UNTRUSTED_ARGUMENTS_")[1]


async def test_a_confident_deny_reaches_the_model_as_rejected_with_the_reasoning(client: Client) -> None:
    asked: list[str] = []

    def judge(request: ScriptedRequest) -> Reply:
        asked.append(request.model)
        return verdict("deny", 0.99, "prod-db is never deployed by an agent")

    worker = auto_worker(auto=AutoSettings(model="judge-small"))  # SIGNOFF_AUTO_MODEL
    async with ops_run(client, model(judge, "prod-db"), worker=worker) as handle:
        result = await handle.result()
        (event,) = await events_of(handle, "auto_evaluation")
    assert result.text == "Rejected: prod-db is never deployed by an agent"
    assert asked == ["judge-small"] and event["model"] == "judge-small"
    assert (result.approvals[0].approver, result.approvals[0].approved) == ("auto:ops", False)


def hangs(_: ScriptedRequest) -> Reply:
    time.sleep(4)
    return verdict("approve")


@pytest.mark.parametrize(
    ("judge", "policy", "why"),
    [
        (lambda _: verdict("escalate", 0.99, "a new target"), None, "a new target"),
        (lambda _: verdict("approve", 0.5), None, "the target is web"),
        (lambda _: Reply.text('{"verdict": "approve"}'), None, "does not fit signoff_auto_verdict"),
        (lambda _: Reply.text("Sure, approve it!"), None, "does not fit signoff_auto_verdict"),
        (lambda _: Reply.error(500, "evaluator down"), None, "the evaluator failed"),
        (hangs, ApprovalPolicy(auto=AutoMode(criteria="ops", timeout_seconds=1)), "did not answer within 1s"),
        (lambda _: verdict("approve"), ApprovalPolicy(auto=AutoMode(criteria="nobody")), "is not defined"),
        (lambda _: verdict("approve", 0.95), ApprovalPolicy(auto=AutoMode(criteria="ops", min_confidence=0.99)), ""),
    ],
    ids=["escalate", "low-confidence", "incomplete", "not-json", "error-500", "hangs", "unknown-set", "policy-bar"],
)
async def test_anything_but_a_confident_verdict_leaves_the_call_to_a_person(
    client: Client, judge: Callable[[ScriptedRequest], Reply], policy: ApprovalPolicy | None, why: str
) -> None:
    async with ops_run(client, model(judge), worker=auto_worker(policy)) as handle:
        (event,) = await wait_event(handle, "auto_evaluation")
        (pending,) = await wait_pending(handle)
        await handle.execute_update("submit_tool_approval", {"call_id": "call_1", "approved": True, "approver": "al"})
        result = await handle.result()
    assert event["outcome"] == "escalated" and event["verdict"] in ("escalate", "approve")
    assert pending["auto"]["state"] == "escalated" and why in pending["auto"]["reasoning"]
    assert result.text == "deployed web" and result.approvals[0].approver == "al"


async def test_a_persons_decision_while_the_evaluator_thinks_wins(client: Client) -> None:
    asked, release = threading.Event(), threading.Event()

    def judge(_: ScriptedRequest) -> Reply:
        asked.set()
        release.wait(20)
        return verdict("approve")

    async with ops_run(client, model(judge), worker=auto_worker()) as handle:
        (pending,) = await wait_pending(handle)
        assert asked.wait(10) and pending["auto"]["state"] == "evaluating"
        await handle.execute_update(
            "submit_tool_approval", {"call_id": "call_1", "approved": False, "approver": "bob", "reason": "not now"}
        )
        release.set()
        result = await handle.result()
        (event,) = await wait_event(handle, "auto_evaluation")
    assert result.text == "Rejected: not now" and result.approvals[0].approver == "bob"
    assert (event["verdict"], event["outcome"]) == ("approve", "superseded")


def verified(tmp_path: Path, approvers: tuple[str, ...]) -> dict[str, Any]:
    keys = tmp_path / "approvers.key"
    write_secret(keys)
    policy = ApprovalPolicy(verified=True, quorum=2, approvers=approvers, auto=AutoMode(criteria="ops"))
    return auto_worker(policy, verifier=ApproverKeys.load(keys), auto=AutoSettings(signer=SigningKey.load(keys)))


async def test_under_a_verified_quorum_the_auto_vote_counts_once_and_people_complete_it(
    client: Client, tmp_path: Path
) -> None:
    worker = verified(tmp_path, ("auto:ops", "alice", "bob"))
    async with ops_run(client, model(lambda _: verdict("approve")), worker=worker) as handle:
        (event,) = await wait_event(handle, "auto_evaluation")
        (pending,) = await wait_pending(handle)
        await handle.execute_update("submit_tool_approval", signed(tmp_path / "approvers.key", pending, "alice"))
        result = await handle.result()
    assert event["outcome"] == "vote" and [v["approver"] for v in pending["votes"]] == ["auto:ops"]
    assert pending["votes"][0]["verified"] is True and pending["auto"]["state"] == "voted"
    (record,) = result.approvals
    assert result.text == "deployed web" and [v.approver for v in record.votes] == ["auto:ops", "alice"]


async def test_under_a_verified_policy_that_does_not_list_it_auto_mode_decides_nothing(
    client: Client, tmp_path: Path
) -> None:
    worker = verified(tmp_path, ("alice", "bob"))
    async with ops_run(client, model(lambda _: verdict("approve", 1.0)), worker=worker) as handle:
        (event,) = await wait_event(handle, "auto_evaluation")
        (pending,) = await wait_pending(handle)
        await handle.terminate()
    assert event["outcome"] == "refused" and 'does not list "auto:ops"' in event["note"]
    assert pending["votes"] == [] and pending["auto"]["state"] == "escalated"


def test_a_policy_file_names_criteria_sets_and_tools_point_at_them(tmp_path: Path) -> None:
    file = tmp_path / "policy.toml"
    file.write_text(
        '[run_command]\nauto = { criteria = "readonly", min_confidence = 0.95 }\n\n'
        '[criteria.readonly]\neffect = "runs a shell command"\napprove_when = ["it only reads"]\n'
        'deny_when = ["it deletes"]\nescalate_when = ["anything else"]\nmin_confidence = 0.9\n'
    )
    book = PolicyBook.load(file)
    policy = book.for_tool("run_command")
    assert policy.auto == AutoMode(criteria="readonly", min_confidence=0.95)
    assert book.criteria["readonly"].deny_when == ("it deletes",) and "criteria" not in book.policies
    assert auto.bar(policy, book.criteria["readonly"]) == 0.95  # the higher bar holds
    file.write_text('[criteria.readonly]\napprove = ["typo"]\n')
    with pytest.raises(ConfigError, match="criteria set 'readonly'"):
        PolicyBook.load(file)


def in_code(call: AutoCall) -> AutoVerdict:
    if call.arguments.get("target") == "boom":
        raise RuntimeError("the evaluator broke")
    return AutoVerdict(verdict="approve", confidence=1.0, reasoning=f"{call.criteria_name} allows {call.tool}")


async def test_an_evaluator_in_code_judges_instead_of_the_model_and_its_failure_escalates(client: Client) -> None:
    built = AgentBuilder("ops").with_tools(ops_agent(deploy=ApprovalPolicy(auto=AutoMode(criteria="ops"))).tools)
    agents = {"ops": built.with_auto_evaluator("ops", in_code).build()}
    worker = auto_worker(agents=agents)
    with_model: list[ScriptedRequest] = []

    def judge(request: ScriptedRequest) -> Reply:
        with_model.append(request)
        return verdict("deny")

    async with ops_run(client, model(judge), worker=worker) as handle:
        result = await handle.result()
    async with ops_run(client, model(judge, "boom"), worker=worker) as failing:
        (event,) = await wait_event(failing, "auto_evaluation")
        await failing.terminate()
    assert result.text == "deployed web" and result.approvals[0].approver == "auto:ops" and with_model == []
    assert event["outcome"] == "escalated" and "RuntimeError: the evaluator broke" in event["reasoning"]


async def test_auto_mode_holds_when_every_step_replays(client: Client, tmp_path: Path) -> None:
    """No cache: each workflow task replays the run from its history, the evaluator's task included."""
    worker = verified(tmp_path, ("auto:ops", "alice", "bob")) | {"max_cached_workflows": 0}
    async with ops_run(client, model(lambda _: verdict("approve")), worker=worker) as handle:
        await wait_event(handle, "auto_evaluation")
        (pending,) = await wait_pending(handle)
        await handle.execute_update("submit_tool_approval", signed(tmp_path / "approvers.key", pending, "bob"))
        result = await handle.result()
    assert result.text == "deployed web" and [v.approver for v in result.approvals[0].votes] == ["auto:ops", "bob"]


async def delivered(receiver: Receiver, event: str) -> None:
    assert receiver.of(event), receiver.deliveries


async def test_people_are_notified_only_of_calls_auto_mode_leaves_to_them(client: Client) -> None:
    def judge(request: ScriptedRequest) -> Reply:
        target = "web" if '"target": "web"' in (request.last.content or "") else "api"
        return verdict("approve") if target == "web" else verdict("escalate", 0.9, "api is new")

    def two(request: ScriptedRequest) -> Reply:
        if "response_format" in request.raw:
            return judge(request)
        if request.round == 1:
            return Reply.tool_calls([deploy("call_1", "web"), deploy("call_2", "api")])
        return Reply.text("|".join(m.content or "" for m in request.messages if m.role == "tool"))

    with Receiver() as receiver:
        worker = auto_worker(notify=NotifyConfig(urls=(receiver.url,)))
        async with ops_run(client, two, worker=worker) as handle:
            await wait_event(handle, "auto_evaluation", 2)
            await assert_eventually(lambda: delivered(receiver, "approval_requested"))
            await handle.execute_update("submit_tool_approval", {"call_id": "call_2", "approved": True})
            result = await handle.result()
            await assert_eventually(lambda: delivered(receiver, "approval_decided"))
        notices = sorted((d.event, d.call_id) for d in receiver.deliveries)
    assert result.text == "deployed web|deployed api"
    assert notices == [("approval_decided", "call_2"), ("approval_requested", "call_2")]
    (asked,) = receiver.of("approval_requested")
    assert asked.json["request"]["auto"]["reasoning"] == "api is new"
