"""Deciding in Slack, signed per person, against real runs parked on verified policies.

The stack: the session's dev server; an in-process worker whose notices go to a stand-in for
Slack's Web API over real HTTP (`tests.slack_fake`, through `slack_sdk`); `signoff inbox` as a
real process with the Slack app on (`SIGNOFF_SLACK_*`), signing with its own Ed25519 key
(a service key in the workers' JWKS, beside bob's personal key for the CLI). Interaction
requests are signed as Slack signs them and posted to the inbox's `/slack/interactions`.

`deploy` needs one verified approver of group `sre` (alice); `restart` needs three verified
approvals among alice, bob and carol (Slack, the CLI and the inbox). Every test ends by
checking that no argument text reached any message sent for the channel.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import re
import sys
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
import pytest_asyncio
from cryptography.hazmat.primitives import serialization
from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from signoff.activities.notify import NotifyConfig
from signoff.activities.slack import SlackChannel
from signoff.agent.builder import AgentBuilder, ChatClientAgent
from signoff.approval.identity import ApproverKeys
from signoff.approval.policy import ApprovalPolicy
from signoff.approval.signatures import requester_claim
from signoff.contract import AgentRunInput, AgentRunResult, RunOptions
from signoff.signing.keys import SigningKey
from signoff.testing import ScriptedModelServer
from signoff.tools.function import tool
from signoff.views.slack import ACTION_APPROVE, ACTION_DENY, ACTION_REVIEW
from tests.approver_keys import ed25519_key, jwk, write_jwks
from tests.cli_harness import cli_env, finish, spawn
from tests.governance import ops_agent
from tests.helpers import running_worker
from tests.inbox_harness import script
from tests.processes import REPO, Processes, clean_env, free_port
from tests.slack_fake import CHANNEL, SIGNING_SECRET, TOKEN, FakeSlack, buttons, click, signed, submission, text_of
from tests.waiting import assert_eventually

CALL = "call_1_1"
"""The scripted model's first call, as the run names it."""
SECRET_ARG = "prod-eu-7f3a-SECRET"
"""In every call's arguments: must never reach the channel."""
USERS = {
    "UALICE01": {"sub": "alice", "groups": ["sre"]},
    "UBOB0001": {"sub": "bob", "groups": []},
    "UCAROL01": {"sub": "carol", "groups": []},
}
DEPLOY = ApprovalPolicy(verified=True, approvers=("group:sre",))
RESTART = ApprovalPolicy(verified=True, approvers=("alice", "bob", "carol"), quorum=3)
EXPIRING = ApprovalPolicy(verified=True, approvers=("group:sre",), timeout_seconds=4)
SEPARATE = ApprovalPolicy(verified=True, approvers=("group:sre", "carol"), separate_requester=True)


@dataclass
class Stack:
    client: Client
    queue: str
    slack: FakeSlack
    inbox: str
    cli_env: dict[str, str]
    http: httpx.AsyncClient
    inbox_key: SigningKey

    async def start(
        self, calls: list[tuple[str, dict[str, Any]]], agent: str = "ops", requested_by: str | None = None
    ) -> WorkflowHandle[Any, AgentRunResult]:
        prompt = f"please, calls: {json.dumps(calls)}"
        run_id = f"slack-{uuid.uuid4().hex[:10]}"
        options = RunOptions()
        if requested_by is not None:  # a requester token the inbox's (service) key signs, bound to the run
            token = self.inbox_key.sign(requester_claim(run_id), requested_by, groups=("sre",))
            options = RunOptions(requester_token=token)
        return await self.client.start_workflow(
            "AgentRun",
            AgentRunInput(agent=agent, prompt=prompt, options=options),
            id=run_id,
            task_queue=self.queue,
            result_type=AgentRunResult,
        )

    async def message(self, handle: WorkflowHandle[Any, Any], call_id: str) -> dict[str, Any]:
        """The channel's message of the call, once the worker posted it."""

        async def posted() -> dict[str, Any]:
            message = self.slack.message_of(handle.id, call_id)
            assert message is not None, self.slack.calls
            return message

        return await assert_eventually(posted, 30)

    async def post(self, payload: dict[str, Any], **signing: Any) -> httpx.Response:
        body, headers = signed(payload, **signing)
        return await self.http.post("/slack/interactions", content=body, headers=headers)

    async def press(self, user: str, action: str, message: dict[str, Any]) -> httpx.Response:
        return await self.post(click(user, action, buttons(message)[action], message))

    def assert_no_arguments_sent(self) -> None:
        for payload in self.slack.payloads():
            assert SECRET_ARG not in payload and "staging-SECRET" not in payload, payload


def guarded_agent() -> ChatClientAgent:
    """Agent `guarded`: `deploy(target)` under a policy the run's requester may not meet, and
    `restart(service)` with a 4-second deadline."""

    @tool(name="deploy", approval=SEPARATE)
    def deploy_tool(target: str) -> str:
        """Deploy a target."""
        return f"deployed {target}"

    @tool(name="restart", approval=EXPIRING)
    def restart_tool(service: str) -> str:
        """Restart a service."""
        return f"restarted {service}"

    return AgentBuilder("guarded").with_tools([deploy_tool, restart_tool]).build()


def write_private(path: Path, key: Any) -> Path:
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    path.chmod(0o600)  # a secret file is its owner's alone, or nothing reads it
    return path


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def stack(env: WorkflowEnvironment, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    tmp = tmp_path_factory.mktemp("slack")
    inbox_key, bob_key = ed25519_key(), ed25519_key()
    write_private(tmp / "inbox.pem", inbox_key)
    write_private(tmp / "bob.pem", bob_key)
    write_jwks(tmp / "jwks.json", jwk(inbox_key, "inbox", signoff_service=True), jwk(bob_key, "bob", sub="bob"))
    (tmp / "token").write_text(TOKEN + "\n")
    (tmp / "secret").write_text(SIGNING_SECRET + "\n")
    (tmp / "token").chmod(0o600)
    (tmp / "secret").chmod(0o600)
    (tmp / "users.json").write_text(json.dumps(USERS))
    queue = f"slack-{uuid.uuid4().hex[:8]}"
    address = env.client.service_client.config.target_host
    procs = Processes(tmp)
    port = free_port()
    with FakeSlack() as slack, ScriptedModelServer(script) as model:
        notify = NotifyConfig(urls=(), slack=SlackChannel(TOKEN, CHANNEL, slack.url), retry_seconds=20)
        agents = {"ops": ops_agent(deploy=DEPLOY, restart=RESTART), "guarded": guarded_agent()}
        verifier = ApproverKeys.load(tmp / "jwks.json")
        try:
            async with running_worker(env.client, queue, model, agents, verifier=verifier, notify=notify):
                inbox = procs.start(
                    "inbox",
                    [sys.executable, str(REPO / "client.py"), "inbox", "--port", str(port), "--local-user", "carol"],
                    clean_env(
                        TEMPORAL_ADDRESS=address,
                        SIGNOFF_TASK_QUEUE=queue,
                        SIGNOFF_INBOX_SIGNING_KEY_FILE=tmp / "inbox.pem",
                        SIGNOFF_INBOX_SIGNING_KID="inbox",
                        SIGNOFF_SLACK_BOT_TOKEN_FILE=tmp / "token",
                        SIGNOFF_SLACK_SIGNING_SECRET_FILE=tmp / "secret",
                        SIGNOFF_SLACK_USERS=tmp / "users.json",
                        SIGNOFF_SLACK_API_URL=slack.url,
                    ),
                )
                await inbox.wait_for_output("signoff: inbox on")
                cli = cli_env(address, queue, tmp / "state") | {
                    "SIGNOFF_APPROVER_KEY_FILE": str(tmp / "bob.pem"),
                    "SIGNOFF_APPROVER_KID": "bob",
                }
                url = f"http://127.0.0.1:{port}"
                async with httpx.AsyncClient(base_url=url, timeout=30) as http:
                    key = SigningKey.load(tmp / "inbox.pem", "inbox")
                    stack = Stack(env.client, queue, slack, url, cli, http, key)
                    yield stack
                stack.assert_no_arguments_sent()  # every message of every test of the module
                assert slack.payloads()
        finally:
            procs.cleanup()
            print(procs.report())


def tool_messages(result: AgentRunResult) -> list[str]:
    return [m.content or "" for m in result.messages if m.role == "tool"]


async def test_approve_in_slack_runs_the_call_once_signed_for_the_mapped_person(stack: Stack) -> None:
    handle = await stack.start([("deploy", {"target": SECRET_ARG})])
    message = await stack.message(handle, CALL)
    assert set(buttons(message)) == {ACTION_REVIEW, ACTION_APPROVE, ACTION_DENY}
    said = text_of(message)
    assert "deploy" in said and "ops" in said and handle.id in said and "group:sre" in said
    assert SECRET_ARG not in said

    answer = await stack.press("UALICE01", ACTION_APPROVE, message)
    assert answer.status_code == 200, answer.text
    result = await asyncio.wait_for(handle.result(), 60)
    assert tool_messages(result) == [f"deployed {SECRET_ARG}"]
    (record,) = result.approvals
    assert (record.approver, record.verified, record.approved) == ("alice", True, True)

    async def updated() -> None:
        now = stack.slack.message_of(handle.id, CALL)
        assert now is not None and "approved by alice (verified)" in text_of(now) and not buttons(now)

    await assert_eventually(updated, 30)
    assert any("approved" in text for text in stack.slack.ephemerals("UALICE01"))
    again = await stack.press("UALICE01", ACTION_APPROVE, message)  # the button of a settled call
    assert again.status_code == 200
    await assert_eventually(lambda: _said(stack, "UALICE01", "no longer waits"), 30)
    assert tool_messages(await handle.result()) == [f"deployed {SECRET_ARG}"]  # ran once
    stack.assert_no_arguments_sent()


async def _said(stack: Stack, user: str, words: str) -> None:
    assert any(words in text for text in stack.slack.ephemerals(user)), stack.slack.ephemerals(user)


async def test_unmapped_users_and_non_approvers_get_a_private_refusal_and_nothing_is_decided(stack: Stack) -> None:
    handle = await stack.start([("deploy", {"target": SECRET_ARG})])
    message = await stack.message(handle, CALL)
    stranger = click("UMALLORY1", ACTION_APPROVE, buttons(message)[ACTION_APPROVE], message)
    stranger["user"] |= {"username": "alice", "name": "alice"}  # a display name never counts
    assert (await stack.post(stranger)).status_code == 200
    await assert_eventually(lambda: _said(stack, "UMALLORY1", "not one signoff knows"), 30)
    assert (await stack.press("UBOB0001", ACTION_APPROVE, message)).status_code == 200
    await assert_eventually(lambda: _said(stack, "UBOB0001", "Nothing was decided"), 30)
    assert (await stack.press("UBOB0001", ACTION_REVIEW, message)).status_code == 200
    await assert_eventually(lambda: _said(stack, "UBOB0001", "You cannot decide this call"), 30)
    assert not [v for v in stack.slack.of("views.open") if handle.id in json.dumps(v)]
    pending = await handle.query("pending_approvals")
    assert [p["call_id"] for p in pending] == [CALL] and not pending[0]["votes"]
    await handle.terminate("test over")
    stack.assert_no_arguments_sent()


async def test_forged_stale_and_replayed_requests_are_refused_before_anything_runs(stack: Stack) -> None:
    handle = await stack.start([("deploy", {"target": SECRET_ARG})])
    message = await stack.message(handle, CALL)
    approve = click("UALICE01", ACTION_APPROVE, buttons(message)[ACTION_APPROVE], message)
    forged = await stack.post(approve, secret="not-the-signing-secret")
    stale = await stack.post(approve, at=int(time.time()) - 400)
    body, headers = signed(approve)
    unsigned = await stack.http.post(
        "/slack/interactions", content=body, headers={"Content-Type": headers["Content-Type"]}
    )
    bad_time = await stack.http.post(
        "/slack/interactions", content=body, headers=headers | {"X-Slack-Request-Timestamp": "soon"}
    )
    assert [r.status_code for r in (forged, stale, unsigned, bad_time)] == [401, 401, 401, 401]
    huge = await stack.http.post("/slack/interactions", content=b"x" * (2 * 1024 * 1024), headers=headers)
    assert huge.status_code == 413
    odd = [
        {"type": "block_actions"},
        {"type": "block_actions", "actions": [{}], "user": {}},
        {"type": "view_submission"},
    ]
    odd += [{"type": "view_submission", "view": {"callback_id": "signoff_review", "private_metadata": "[]"}}]
    odd += [{"type": "view_submission", "view": {"callback_id": "signoff_confirm_edit"}, "user": {"id": "UALICE01"}}]
    odd += [click("UALICE01", ACTION_APPROVE, buttons(message)[ACTION_APPROVE], message) | {"user": None}]
    shapes = [urlencode({"payload": json.dumps(p)}).encode() for p in odd]
    for junk in (b"payload=not-json", b"payload=%5B%5D", b"nothing=here", b"\xff\xfe", *shapes):
        at = str(int(time.time()))
        mac = hmac.new(SIGNING_SECRET.encode(), b"v0:" + at.encode() + b":" + junk, hashlib.sha256).hexdigest()
        sent = {
            "Content-Type": headers["Content-Type"],
            "X-Slack-Request-Timestamp": at,
            "X-Slack-Signature": f"v0={mac}",
        }
        answer = await stack.http.post("/slack/interactions", content=junk, headers=sent)
        assert answer.status_code < 500, (junk, answer.status_code, answer.text)
    review = click("UALICE01", ACTION_REVIEW, buttons(message)[ACTION_REVIEW], message)
    body, headers = signed(review)
    first = await stack.http.post("/slack/interactions", content=body, headers=headers)
    replayed = await stack.http.post("/slack/interactions", content=body, headers=headers)
    assert (first.status_code, replayed.status_code) == (200, 401)
    assert "replay" in replayed.text
    opened = [v for v in stack.slack.of("views.open") if handle.id in json.dumps(v)]
    assert len(opened) == 1  # the replay opened nothing
    modal = json.dumps(opened[0])
    assert SECRET_ARG in modal  # the reviewer, privately, sees the whole call
    pending = await handle.query("pending_approvals")
    assert [p["call_id"] for p in pending] == [CALL]
    await handle.terminate("test over")
    stack.assert_no_arguments_sent()


async def _modal(stack: Stack, handle: WorkflowHandle[Any, Any], user: str) -> dict[str, Any]:
    message = await stack.message(handle, CALL)
    assert (await stack.press(user, ACTION_REVIEW, message)).status_code == 200
    opened = [v["view"] for v in stack.slack.of("views.open") if handle.id in json.dumps(v)]
    assert opened, "views.open was not called"
    view: Any = opened[-1]
    return json.loads(view) if isinstance(view, str) else view


async def test_deny_with_a_reason_in_the_modal_reaches_the_model(stack: Stack) -> None:
    handle = await stack.start([("deploy", {"target": SECRET_ARG})])
    view = await _modal(stack, handle, "UALICE01")
    sent = await stack.post(submission("UALICE01", view, {"decision": "deny", "reason": "back up the database first"}))
    assert sent.status_code == 200 and sent.json()["response_action"] == "update", sent.text
    result = await asyncio.wait_for(handle.result(), 60)
    assert tool_messages(result) == ["Rejected: back up the database first"]
    assert (result.approvals[0].approver, result.approvals[0].verified) == ("alice", True)

    async def updated() -> None:
        now = stack.slack.message_of(handle.id, CALL)
        assert now is not None and "denied by alice (verified)" in text_of(now) and not buttons(now)

    await assert_eventually(updated, 30)
    stack.assert_no_arguments_sent()


async def test_an_edit_in_the_modal_is_confirmed_as_a_diff_then_runs_the_edited_arguments(stack: Stack) -> None:
    handle = await stack.start([("deploy", {"target": SECRET_ARG})])
    view = await _modal(stack, handle, "UALICE01")
    edited = json.dumps({"target": "staging-SECRET"})
    bad = await stack.post(submission("UALICE01", view, {"decision": "approve", "arguments": "{not json"}))
    assert bad.json()["response_action"] == "errors" and "arguments" in bad.json()["errors"]
    shown = await stack.post(submission("UALICE01", view, {"decision": "approve", "arguments": edited}))
    confirm = shown.json()["view"]
    assert shown.json()["response_action"] == "update" and confirm["callback_id"] == "signoff_confirm_edit"
    diff = json.dumps(confirm["blocks"])
    assert f'-  \\"target\\": \\"{SECRET_ARG}\\"' in diff and '+  \\"target\\": \\"staging-SECRET\\"' in diff, diff
    assert "staging-SECRET" not in confirm["private_metadata"]  # the edit stays on the server
    (pending,) = await handle.query("pending_approvals")
    assert not pending["votes"]  # nothing sent before the confirmation
    other = await stack.post(submission("UCAROL01", confirm, {}))  # someone else's confirmation
    assert "not one you made" in json.dumps(other.json())
    sent = await stack.post(submission("UALICE01", confirm, {}))
    assert sent.status_code == 200 and "edited arguments" in json.dumps(sent.json()), sent.text
    result = await asyncio.wait_for(handle.result(), 60)
    edited = '[signoff: alice edited this call\'s arguments before it ran; it ran with {"target": "staging-SECRET"}]'
    assert tool_messages(result) == [f"deployed staging-SECRET\n{edited}"]  # the model is told of the edit
    assert result.approvals[0].edited_arguments == {"target": "staging-SECRET"}
    again = await stack.post(submission("UALICE01", confirm, {}))  # an edit is taken once
    assert "not one you made" in json.dumps(again.json())
    stack.assert_no_arguments_sent()


async def test_a_quorum_counts_slack_the_inbox_and_the_cli_and_the_message_follows_the_cli(stack: Stack) -> None:
    handle = await stack.start([("restart", {"service": SECRET_ARG})])
    message = await stack.message(handle, CALL)
    assert "3 approvals needed (0 so far)" in text_of(message)
    assert (await stack.press("UALICE01", ACTION_APPROVE, message)).status_code == 200

    async def votes(count: int) -> None:
        (pending,) = await handle.query("pending_approvals")
        assert len(pending["votes"]) == count, pending["votes"]

    await assert_eventually(lambda: votes(1), 30)
    now = stack.slack.message_of(handle.id, CALL)
    assert now is not None and "(1 so far)" in text_of(now) and buttons(now)

    # carol in the inbox (the page's own form, as her browser sends it)
    page = await stack.http.get("/call", params={"run": handle.id, "id": CALL})
    form = dict(re.findall(r'<input type="hidden" name="(csrf|run|id|digest)" value="([^"]*)">', page.text))
    decided = await stack.http.post("/call/decide", data={**form, "action": "approve"})
    assert 'data-outcome="vote"' in decided.text, decided.text
    await assert_eventually(lambda: votes(2), 30)

    # bob in the CLI, with his own key
    pending = (await handle.query("pending_approvals"))[0]
    done = await finish(
        await spawn(
            stack.cli_env, "approve", handle.id, CALL, "--digest", pending["arguments_digest"], "--approver", "bob"
        )
    )
    assert done.code == 0, done
    result = await asyncio.wait_for(handle.result(), 60)
    assert tool_messages(result) == [f"restarted {SECRET_ARG}"]
    voters = sorted(str(v.approver) for v in result.approvals[0].votes)
    assert voters == ["alice", "bob", "carol"] and all(v.verified for v in result.approvals[0].votes)

    async def updated() -> None:
        now = stack.slack.message_of(handle.id, CALL)
        assert now is not None and "approved by bob (verified)" in text_of(now) and not buttons(now)

    await assert_eventually(updated, 15)
    stack.assert_no_arguments_sent()


async def test_one_person_counts_once_across_slack_and_the_inbox(stack: Stack) -> None:
    handle = await stack.start([("restart", {"service": SECRET_ARG})])
    message = await stack.message(handle, CALL)
    assert (await stack.press("UCAROL01", ACTION_APPROVE, message)).status_code == 200
    await assert_eventually(lambda: _said(stack, "UCAROL01", "counted"), 30)
    assert (await stack.press("UCAROL01", ACTION_APPROVE, message)).status_code == 200
    await assert_eventually(lambda: _said(stack, "UCAROL01", "'carol' already approved"), 30)
    page = await stack.http.get("/call", params={"run": handle.id, "id": CALL})  # carol again, in the inbox
    form = dict(re.findall(r'<input type="hidden" name="(csrf|run|id|digest)" value="([^"]*)">', page.text))
    decided = await stack.http.post("/call/decide", data={**form, "action": "approve"})
    assert "already approved" in decided.text and 'data-outcome="vote"' not in decided.text
    (pending,) = await handle.query("pending_approvals")
    assert [v["approver"] for v in pending["votes"]] == ["carol"]
    await handle.terminate("test over")
    stack.assert_no_arguments_sent()


async def test_a_button_naming_another_request_decides_nothing(stack: Stack) -> None:
    handle = await stack.start([("deploy", {"target": SECRET_ARG})])
    message = await stack.message(handle, CALL)
    value = json.loads(buttons(message)[ACTION_APPROVE])
    other_digest = json.dumps(value | {"d": "0" * 64})
    other_request = json.dumps(value | {"r": "another-request-instance"})
    for forged in (other_digest, other_request, "not json", json.dumps({"w": handle.id})):
        assert (await stack.post(click("UALICE01", ACTION_APPROVE, forged, message))).status_code == 200
    await assert_eventually(lambda: _said(stack, "UALICE01", "changed since"), 30)
    await assert_eventually(lambda: _said(stack, "UALICE01", "an earlier request of that call"), 30)
    await assert_eventually(lambda: _said(stack, "UALICE01", "names no call"), 30)
    (pending,) = await handle.query("pending_approvals")
    assert pending["call_id"] == CALL and not pending["votes"]
    await handle.terminate("test over")


async def test_slack_down_holds_no_run_up_and_the_retried_notice_posts_one_message(stack: Stack) -> None:
    stack.slack.down = True
    try:
        handle = await stack.start([("deploy", {"target": SECRET_ARG})])
        pending = await assert_eventually(lambda: _pending(handle), 30)  # the run parked, Slack or not
        assert pending["call_id"] == CALL and stack.slack.message_of(handle.id, CALL) is None
    finally:
        stack.slack.down = False
    await stack.message(handle, CALL)  # Temporal retried the notice
    posted = [a for a in stack.slack.of("chat.postMessage") if handle.id in json.dumps(a)]
    assert len(posted) == 1
    await handle.terminate("test over")


async def _pending(handle: WorkflowHandle[Any, Any]) -> dict[str, Any]:
    (pending,) = await handle.query("pending_approvals")
    return dict(pending)


async def test_a_notice_sent_again_updates_the_message_it_posted_before(stack: Stack) -> None:
    """A retried `approval_requested` (its first attempt posted, then failed) posts nothing new:
    the message is found again in the channel's history by its metadata."""
    request = {
        "call_id": "call_9",
        "name": "deploy",
        "arguments": {"target": SECRET_ARG},
        "arguments_digest": "a" * 64,
        "requested_at": "2026-12-03T12:00:00Z",
        "policy": DEPLOY.model_dump(mode="json"),
    }
    run = f"direct-{uuid.uuid4().hex[:8]}"
    for _ in range(2):  # a new channel object each time: nothing remembered in process
        status = await SlackChannel(TOKEN, CHANNEL, stack.slack.url).deliver(
            "approval_requested", run, "ops", request, None
        )
        assert status == 200
    assert len([a for a in stack.slack.of("chat.postMessage") if run in json.dumps(a)]) == 1
    assert len([a for a in stack.slack.of("chat.update") if run in json.dumps(a)]) == 1
    reminded = await SlackChannel(TOKEN, CHANNEL, stack.slack.url).deliver(
        "approval_reminder", run, "ops", request | {"votes": []}, None
    )
    message = stack.slack.message_of(run, "call_9")
    assert reminded == 200 and message is not None and "Reminder:" in text_of(message) and buttons(message)
    record = {"call_id": "call_9", "name": "deploy", "arguments_digest": "a" * 64, "timed_out": True, "approved": False}
    record |= {"requested_at": request["requested_at"], "arguments": request["arguments"]}
    assert (
        await SlackChannel(TOKEN, CHANNEL, stack.slack.url).deliver("approval_timed_out", run, "ops", None, record)
        == 200
    )
    message = stack.slack.message_of(run, "call_9")
    assert message is not None and "no decision in time" in text_of(message) and not buttons(message)
    assert len([a for a in stack.slack.of("chat.postMessage") if run in json.dumps(a)]) == 1
    stack.assert_no_arguments_sent()


async def test_the_person_who_asked_for_the_run_may_not_decide_it_from_slack(stack: Stack) -> None:
    handle = await stack.start([("deploy", {"target": SECRET_ARG})], agent="guarded", requested_by="alice")
    message = await stack.message(handle, CALL)
    assert "not the person who asked for the run" in text_of(message)
    assert (await stack.press("UALICE01", ACTION_APPROVE, message)).status_code == 200
    await assert_eventually(lambda: _said(stack, "UALICE01", "requested this run and may not decide"), 30)
    (pending,) = await handle.query("pending_approvals")
    assert not pending["votes"]
    assert (await stack.press("UCAROL01", ACTION_APPROVE, message)).status_code == 200
    result = await asyncio.wait_for(handle.result(), 60)
    assert tool_messages(result) == [f"deployed {SECRET_ARG}"] and result.approvals[0].approver == "carol"


async def test_the_message_follows_the_deadline_and_a_late_click_decides_nothing(stack: Stack) -> None:
    handle = await stack.start([("restart", {"service": SECRET_ARG})], agent="guarded", requested_by="dave")
    message = await stack.message(handle, CALL)
    assert "decide by <!date^" in text_of(message)

    async def expired() -> None:
        now = stack.slack.message_of(handle.id, CALL)
        assert now is not None and "had no decision in time: denied" in text_of(now) and not buttons(now)

    await assert_eventually(expired, 30)
    assert (await stack.press("UALICE01", ACTION_APPROVE, message)).status_code == 200
    await assert_eventually(lambda: _said(stack, "UALICE01", "no longer waits"), 30)
    result = await asyncio.wait_for(handle.result(), 60)
    assert result.approvals[0].timed_out and not result.approvals[0].approved
    assert tool_messages(result)[0].startswith("Rejected: ")
