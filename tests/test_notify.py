"""Notifications on the real dev server, to real HTTP receivers: each notice once, signed,
and a failing channel never stops a run (CONTRACT v2 "Notifications")."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from temporalio.client import Client

from signoff.activities.notify import DELIVERY_HEADER, NotifyConfig
from signoff.approval.policy import ApprovalPolicy, OnTimeout
from signoff.text.notify_signature import TOLERANCE_SECONDS, signature, verify
from tests.governance import (
    activity_types,
    deploy,
    ops_agent,
    restart,
    turns,
    wait_event,
)
from tests.helpers import (
    ScriptedModelServer,
    assert_eventually,
    running_worker,
    start_run,
    wait_pending,
)
from tests.receiver import Receiver
from tests.waiting import wait_until

SECRET = b"notify-secret-for-tests-0123456789"
UI = "https://temporal.example.com"


def config(*receivers: Receiver, retry_seconds: float = 300.0) -> NotifyConfig:
    return NotifyConfig(urls=tuple(r.url for r in receivers), secret=SECRET, ui_root=UI, retry_seconds=retry_seconds)


async def test_each_notice_arrives_once_signed_with_its_link_and_commands(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    watched = ApprovalPolicy(
        approvers=("alice",), remind_after_seconds=(1,), escalate_after_seconds=2, escalate_to=("bob",)
    )
    hurried = ApprovalPolicy(timeout_seconds=1, on_timeout=OnTimeout.DENY)
    agent = ops_agent(deploy=watched, restart=hurried)
    with Receiver() as receiver, ScriptedModelServer(turns([deploy("call_d"), restart("call_r")])) as model:
        async with running_worker(client, task_queue, model, {"ops": agent}, notify=config(receiver)):
            handle = await start_run(client, task_queue, agent="ops")
            await wait_event(handle, "approval_escalated")
            bob = {"call_id": "call_d", "approved": True, "approver": "bob"}
            await handle.execute_update("submit_tool_approval", bob)
            result = await handle.result()

    assert result.text == "deployed web|Rejected: No decision within 1s"
    expected = {
        ("approval_requested", "call_d"),
        ("approval_requested", "call_r"),
        ("approval_reminder", "call_d"),
        ("approval_escalated", "call_d"),
        ("approval_timed_out", "call_r"),
        ("approval_decided", "call_d"),
    }
    deliveries = receiver.deliveries
    assert sorted((d.event, d.call_id) for d in deliveries) == sorted(expected)  # each once, nothing else
    assert all(d.signed_with(SECRET) for d in deliveries)
    assert len({d.headers[DELIVERY_HEADER.lower()] for d in deliveries}) == len(deliveries)
    requested = receiver.of("approval_requested", "call_d")[0].json
    assert requested["workflow_id"] == handle.id and requested["run_id"] == handle.result_run_id
    assert requested["agent"] == "ops" and requested["request"]["arguments"] == {"target": "web"}
    assert requested["ui_url"] == f"{UI}/namespaces/default/workflows/{handle.id}"
    digest = requested["request"]["arguments_digest"]  # commands bind the decision to what was asked
    assert requested["commands"] == [
        f"signoff approve {handle.id} call_d --digest {digest}",
        f"signoff deny {handle.id} call_d --digest {digest} --reason 'why not'",
    ]
    assert requested["decision"] is None and datetime.fromisoformat(requested["sent_at"])
    text = requested["text"]
    assert "deploy" in text and '{"target": "web"}' in text and "approvers: alice" in text
    assert f"signoff approve {handle.id} call_d" in text and requested["ui_url"] in text
    decided = receiver.of("approval_decided", "call_d")[0].json
    assert decided["decision"]["approver"] == "bob" and decided["commands"] == []
    assert "approved by bob" in decided["text"]
    timed_out = receiver.of("approval_timed_out", "call_r")[0].json
    assert timed_out["decision"]["timed_out"] is True and timed_out["decision"]["outcome"] == "denied"
    assert "no decision in time" in timed_out["text"] and "denied" in timed_out["text"]


async def test_a_failing_channel_is_recorded_and_neither_stops_the_run_nor_resends_to_others(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    with Receiver(status=500) as broken, Receiver() as working, ScriptedModelServer(turns([deploy("call_d")])) as model:
        notify = config(broken, working, retry_seconds=2)
        async with running_worker(client, task_queue, model, {"ops": ops_agent()}, notify=notify):
            handle = await start_run(client, task_queue, agent="ops")
            await wait_pending(handle)
            await handle.execute_update("submit_tool_approval", {"call_id": "call_d", "approved": True})
            result = await handle.result()
            failures = await wait_event(handle, "notification_failed", 2)

    assert result.text == "deployed web"
    assert sorted(d.event for d in working.deliveries) == ["approval_decided", "approval_requested"]
    assert len(broken.deliveries) > 2  # retried, with one delivery id per notice
    assert {d.headers[DELIVERY_HEADER.lower()] for d in broken.deliveries} == {
        d.headers[DELIVERY_HEADER.lower()] for d in working.deliveries
    }
    assert sorted(f["event"] for f in failures) == ["approval_decided", "approval_requested"]
    assert all("answered HTTP 500" in f["message"] and "/hook" not in f["message"] for f in failures)


async def test_cancelling_a_waiting_run_tells_the_channels_the_call_is_settled(client: Client, task_queue: str) -> None:
    with Receiver() as receiver, ScriptedModelServer(turns([deploy("call_d")])) as model:
        async with running_worker(client, task_queue, model, {"ops": ops_agent()}, notify=config(receiver)):
            handle = await start_run(client, task_queue, agent="ops")
            await wait_pending(handle)
            await handle.cancel()
            result = await handle.result()
    assert result.finish_reason == "cancelled"
    (notice,) = receiver.of("approval_decided", "call_d")
    assert notice.json["text"].splitlines()[0].endswith('(call call_d) denied: "Run cancelled"')


async def test_a_run_without_channels_schedules_no_notice(client: Client, task_queue: str, tmp_path: Path) -> None:
    with ScriptedModelServer(turns([deploy("call_d")])) as model:
        async with running_worker(client, task_queue, model, {"ops": ops_agent()}):
            handle = await start_run(client, task_queue, agent="ops")
            await wait_pending(handle)
            await handle.signal("tool_approval", {"call_id": "call_d", "approved": True})
            await handle.result()
    assert "signoff.notify" not in await activity_types(handle)


async def test_a_channel_removed_from_the_worker_is_recorded_not_retried(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    with Receiver() as receiver, Receiver() as other, ScriptedModelServer(turns([deploy("call_d")])) as model:
        async with running_worker(client, task_queue, model, {"ops": ops_agent()}, notify=config(receiver)):
            handle = await start_run(client, task_queue, agent="ops")
            await wait_pending(handle)
            await assert_eventually(lambda: _one(receiver))
        async with running_worker(client, task_queue, model, {"ops": ops_agent()}, notify=config(other)):
            await handle.signal("tool_approval", {"call_id": "call_d", "approved": True})
            await handle.result()
            (failure,) = await wait_event(handle, "notification_failed")
    assert "is not among this worker's SIGNOFF_NOTIFY_URLS" in failure["message"]
    assert other.deliveries == [] and [d.event for d in receiver.deliveries] == ["approval_requested"]


async def _one(receiver: Receiver) -> None:
    assert len(receiver.deliveries) == 1


async def test_a_captured_notice_cannot_be_replayed_under_another_delivery_id_or_later(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    agent = ops_agent(deploy=ApprovalPolicy(), restart=ApprovalPolicy())
    with Receiver() as receiver, ScriptedModelServer(turns([deploy("call_d")])) as model:
        async with running_worker(client, task_queue, model, {"ops": agent}, notify=config(receiver)):
            handle = await start_run(client, task_queue, agent="ops")
            await wait_until(lambda: bool(receiver.of("approval_requested")), 20, "no approval_requested notice")
            await handle.terminate()
    [captured] = receiver.of("approval_requested", "call_d")
    header, delivery = captured.headers["x-signoff-signature"], captured.headers[DELIVERY_HEADER.lower()]
    sent = int(dict(part.split("=") for part in header.split(","))["t"])
    assert header == signature(SECRET, sent, delivery, captured.body)  # t=<unix>,v1=<hex over "t.delivery.body">
    assert verify(SECRET, header, delivery, captured.body, now=sent + 299)
    assert not verify(SECRET, header, delivery.replace("/0", "/999"), captured.body, now=sent)  # another delivery
    assert not verify(SECRET, header, delivery, captured.body, now=sent + TOLERANCE_SECONDS + 1)  # too late
    assert not verify(SECRET, header, delivery, captured.body + b" ", now=sent)  # another body
    forged_time = header.replace(f"t={sent}", f"t={sent + 3600}")
    assert not verify(SECRET, forged_time, delivery, captured.body, now=sent + 3600)


async def test_a_slack_channel_gets_block_kit_with_a_button_to_the_calls_page_in_the_inbox(
    client: Client, task_queue: str
) -> None:
    inbox = "https://inbox.example.com"
    with Receiver() as plain, Receiver() as slack, ScriptedModelServer(turns([deploy("call_d")])) as model:
        notify = NotifyConfig(urls=(plain.url, f"slack+{slack.url}"), secret=SECRET, ui_root=UI, inbox_root=inbox)
        async with running_worker(
            client, task_queue, model, {"ops": ops_agent(deploy=ApprovalPolicy())}, notify=notify
        ):
            handle = await start_run(client, task_queue, agent="ops")
            await assert_eventually(lambda: _arrived(slack, 1))
            await handle.execute_update(
                "submit_tool_approval", {"call_id": "call_d", "approved": True, "approver": "alice"}
            )
            await handle.result()
            await assert_eventually(lambda: _arrived(slack, 2))
    page = f"{inbox}/call?run={handle.id}&id=call_d"
    requested = plain.of("approval_requested", "call_d")[0].json
    assert requested["inbox_url"] == page and f"Inbox: {page}" in requested["text"]
    asked, decided = slack.deliveries
    assert asked.headers["x-signoff-event"] == "approval_requested" and asked.signed_with(SECRET)
    message = asked.json
    assert set(message) == {"text", "blocks"} and message["text"] == requested["text"]
    section, actions = message["blocks"]
    assert section == {"type": "section", "text": {"type": "mrkdwn", "text": requested["text"]}}
    assert [(b["text"]["text"], b["url"]) for b in actions["elements"]] == [
        ("Decide in the inbox", page),
        ("Temporal Web UI", requested["ui_url"]),
    ]
    assert decided.headers["x-signoff-event"] == "approval_decided"
    assert "approved by alice" in decided.json["text"]
    assert decided.json["blocks"][1]["elements"][0]["text"]["text"] == "Open in the inbox"


async def _arrived(receiver: Receiver, count: int) -> None:
    assert len(receiver.deliveries) >= count
