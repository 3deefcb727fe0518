"""A person approves only what they saw: in headless Chromium against the real stack.

A call whose list row cuts its arguments cannot be decided in bulk until its page was opened
(the page and the server both hold it); an edited approval shows its diff against the model's
arguments before anything is sent, and the call's page shows it after; a decided call's page
says who decided what; no page logs a console error (the favicon included; a page answered with
an error status, 401 for a stranger, carries only Chromium's own note of that status).
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.inbox_harness import Stack, inbox_stack
from tests.test_web_ui import CHROMIUM
from tests.waiting import assert_eventually

WAIT = 20_000


def long_command(tag: str) -> str:
    """A 700-character command that starts with `tag` and ends in `rm -rf`, where no row shows it."""
    tail = f"; rm -rf /srv/data-{tag}"
    return (f"echo {tag} " + "padding-" * 90)[: 700 - len(tail)] + tail


@pytest.fixture(scope="module")
async def stack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    async with inbox_stack(tmp_path_factory.mktemp("inbox-shown")) as built:
        yield built


def row(page: Any, text: str) -> Any:
    return page.locator("tr[data-key]", has_text=text)


async def pending(handle: Any) -> Any:
    calls = await handle.query("pending_approvals")
    assert calls
    return calls


def watch_console(page: Any) -> list[str]:
    """Every console error and uncaught page error of `page`, as it happens."""
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    return problems


async def test_a_call_its_row_cuts_is_marked_and_cannot_be_decided_in_bulk_until_opened(stack: Stack) -> None:
    cut = await stack.start([("run_command", {"command": long_command("cut-test")})])
    short = await stack.start([("run_command", {"command": "echo short-beside-cut"})])
    alice = await stack.user("alice")
    await alice.goto("/")
    long_row = row(alice, "cut-test padding")
    await long_row.wait_for(timeout=WAIT)
    await row(alice, "short-beside-cut").wait_for(timeout=WAIT)
    assert "rm -rf" not in await long_row.inner_text()  # the row cuts it ...
    await long_row.locator(".cut-note", has_text="read it whole").wait_for()  # ... says so ...
    assert await long_row.locator("input[type=checkbox]").is_disabled()  # ... and cannot be picked
    await alice.locator("#pick-all").check()
    await alice.locator("#selected", has_text="1 selected").wait_for()

    (long_call,) = await pending(cut)
    (short_call,) = await pending(short)
    token = await alice.locator("#bulk input[name=csrf]").input_value()
    both = [
        json.dumps([cut.id, long_call["call_id"], long_call["arguments_digest"]]),
        json.dumps([short.id, short_call["call_id"], short_call["arguments_digest"]]),
    ]
    forged = await alice.request.post(  # what a page that ignores the disabled box would send
        "/decide", form={"csrf": token, "action": "approve", "call": both[0]}
    )
    assert forged.status == 200
    assert "longer than its row in the list: open it and read it whole" in await forged.text()
    assert 'data-outcome="refused"' in await forged.text()
    assert len(await cut.query("pending_approvals")) == 1

    await long_row.locator("td.tool a").click()  # opened: the arguments whole
    await alice.locator("#arguments", has_text="rm -rf /srv/data-cut-test").wait_for()
    await alice.goto("/")
    await long_row.wait_for(timeout=WAIT)
    assert not await long_row.locator("input[type=checkbox]").is_disabled()
    assert await long_row.locator(".cut-note").count() == 0
    await long_row.locator("input[type=checkbox]").check()
    await row(alice, "short-beside-cut").locator("input[type=checkbox]").check()
    await alice.get_by_role("button", name="approve selected").click()
    await alice.locator("tr.result.approved").nth(1).wait_for(timeout=WAIT)
    assert (await cut.result()).approvals[0].approver == "alice"
    assert (await short.result()).approvals[0].approver == "alice"


async def test_another_viewer_who_never_opened_the_cut_call_is_still_refused(stack: Stack) -> None:
    cut = await stack.start([("run_command", {"command": long_command("other")})])
    (call,) = await assert_eventually(lambda: pending(cut))
    alice, bob = await stack.user("alice"), await stack.user("bob")
    await alice.goto(f"/call?run={cut.id}&id={call['call_id']}")  # alice read it; bob did not
    await bob.goto("/")
    await row(bob, "other padding").wait_for(timeout=WAIT)
    assert await row(bob, "other padding").locator("input[type=checkbox]").is_disabled()
    token = await bob.locator("#bulk input[name=csrf]").input_value()
    target = json.dumps([cut.id, call["call_id"], call["arguments_digest"]])
    refused = await bob.request.post("/decide", form={"csrf": token, "action": "deny", "call": target})
    assert "longer than its row" in await refused.text()
    assert len(await cut.query("pending_approvals")) == 1
    await cut.terminate()


async def test_an_edited_approval_shows_its_diff_before_it_is_sent_and_on_the_calls_page_after(stack: Stack) -> None:
    handle = await stack.start([("run_command", {"command": "rm -rf /srv/cache"})])
    alice = await stack.user("alice")
    problems = watch_console(alice)
    await alice.goto("/")
    await row(alice, "rm -rf /srv/cache").locator("td.tool a").click()
    call_url = alice.url
    await alice.get_by_text("Approve with edited arguments").click()
    await alice.locator("textarea[name=arguments]").fill(json.dumps({"command": "ls /srv/cache"}))
    await alice.get_by_role("button", name="Approve edited").click()
    diff = alice.locator("#edit-diff")
    await diff.wait_for(timeout=WAIT)
    assert await diff.locator("span.del").all_inner_texts() == ['-  "command": "rm -rf /srv/cache"']
    assert await diff.locator("span.add").all_inner_texts() == ['+  "command": "ls /srv/cache"']
    assert len(await handle.query("pending_approvals")) == 1  # shown, not sent
    await alice.get_by_role("button", name="Send the edited approval").click()
    await alice.locator("tr.result.approved").wait_for(timeout=WAIT)
    result = await handle.result()
    (record,) = result.approvals
    assert record.edited_arguments == {"command": "ls /srv/cache"}
    assert record.arguments == {"command": "rm -rf /srv/cache"}
    await alice.goto(call_url)
    await alice.locator("#decided-text", has_text="approved by alice (verified) with edited arguments").wait_for()
    decided = alice.locator("#decided-diff")
    assert await decided.locator("span.del").all_inner_texts() == ['-  "command": "rm -rf /srv/cache"']
    assert await decided.locator("span.add").all_inner_texts() == ['+  "command": "ls /srv/cache"']
    assert problems == []


async def test_a_confirmation_whose_arguments_were_altered_sends_nothing(stack: Stack) -> None:
    handle = await stack.start([("run_command", {"command": "echo confirm-altered"})])
    (call,) = await assert_eventually(lambda: pending(handle))
    alice = await stack.user("alice")
    await alice.goto(f"/call?run={handle.id}&id={call['call_id']}")
    await alice.get_by_text("Approve with edited arguments").click()
    await alice.locator("textarea[name=arguments]").fill(json.dumps({"command": "echo shown"}))
    await alice.get_by_role("button", name="Approve edited").click()
    await alice.locator("#edit-diff").wait_for(timeout=WAIT)
    altered = json.dumps({"command": "echo other"})
    await alice.locator("input[name=arguments]").evaluate("(field, value) => { field.value = value }", altered)
    await alice.get_by_role("button", name="Send the edited approval").click()
    await alice.locator("tr.result.refused", has_text="not the ones the confirmation showed").wait_for(timeout=WAIT)
    assert len(await handle.query("pending_approvals")) == 1
    await handle.terminate()


async def test_a_decided_calls_page_says_who_decided_what(stack: Stack) -> None:
    handle = await stack.start([("run_command", {"command": "echo decided-page"})])
    (call,) = await assert_eventually(lambda: pending(handle))
    await handle.execute_update(
        "submit_tool_approval",
        {"call_id": call["call_id"], "approved": False, "reason": "not on a Friday", "approver": "carol"},
    )
    await handle.result()
    bob = await stack.user("bob")
    await bob.goto(f"/call?run={handle.id}&id={call['call_id']}")
    await bob.locator("#decided-text", has_text="denied by carol").wait_for()
    banner = await bob.locator("#decided-banner").inner_text()
    assert "not on a Friday" in banner and "without a decision on record" not in banner
    assert "echo decided-page" in await bob.locator("#decided-arguments").inner_text()


async def test_no_page_logs_a_console_error_and_the_favicon_is_served(stack: Stack) -> None:
    handle = await stack.start([("run_command", {"command": "echo console-check"})])
    (call,) = await assert_eventually(lambda: pending(handle))
    alice = await stack.user("alice")
    problems = watch_console(alice)
    await alice.goto("/")
    await alice.locator("#live.on").wait_for(timeout=WAIT)
    await row(alice, "console-check").locator("td.tool a").click()
    await alice.locator("#live.on").wait_for(timeout=WAIT)
    await alice.locator("input.reason").fill("checked")
    await alice.get_by_role("button", name="Deny").click()
    await alice.locator("tr.result.denied").wait_for(timeout=WAIT)
    await alice.goto(f"/call?run={handle.id}&id={call['call_id']}")  # decided now
    await alice.locator("#decided-text", has_text="denied by alice").wait_for()
    await alice.goto("/?tool=nothing-by-that-name")
    await alice.locator("tr.empty").wait_for()
    for path, kind in (("/favicon.ico", "image/"), ("/static/favicon.svg", "image/svg+xml")):
        icon = await alice.request.get(path)
        assert icon.status == 200 and icon.headers["content-type"].startswith(kind), path
    icons = await alice.locator("link[rel=icon]").get_attribute("href")
    assert icons == "/static/favicon.svg"
    assert problems == []
    assert (await handle.result()).text == "Rejected: checked"
    stranger = await stack.user("alice", direct=True)  # not through the proxy: "who are you?", 401
    noted = watch_console(stranger)
    await stranger.goto("/")
    await stranger.get_by_text("Who are you?").wait_for()
    # Chromium notes any document answered with an error status; nothing else may be logged
    assert noted == ["console error: Failed to load resource: the server responded with a status of 401 (Unauthorized)"]


if not Path(CHROMIUM).exists() and not os.environ.get("CI"):  # .ci/run installs it: there, a missing one fails
    pytestmark = pytest.mark.skip(reason=f"no chromium at {CHROMIUM}: apt-get install chromium (.ci/run does)")


async def test_a_call_page_shows_its_similar_pattern_and_grants_calls_like_it(stack: Stack) -> None:
    echo = ("run_command", {"command": "echo 7"})
    handle = await stack.start([echo], then=[("run_command", {"command": "echo 8"})])
    (call,) = await assert_eventually(lambda: pending(handle))
    alice = await stack.user("alice")
    await alice.goto(f"/call?run={handle.id}&id={call['call_id']}")
    assert await alice.locator("#similar-pattern").inner_text() == "run_command: echo <number>"
    await alice.locator("select[name=grant]").select_option("similar")
    await alice.get_by_role("button", name="Approve", exact=True).click()
    result = await handle.result()
    (grant,) = await handle.query("grants")
    assert grant["pattern"] == "run_command: echo <number>" and grant["approver"] == "alice"
    assert [a.grant_id for a in result.approvals] == [None, grant["grant_id"]]
