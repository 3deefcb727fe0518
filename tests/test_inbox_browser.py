"""The inbox in headless Chromium against a real dev server, worker and `signoff inbox`.

Calls appear live, are approved with an edit, denied with a reason and decided in bulk; a
second browser sees each change without a reload; a verified policy is met by the inbox's
signed token; a header from anyone but the proxy is ignored; adversarial arguments render
inert. (tests/inbox_harness.py sets the stack up.)
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.inbox_harness import Stack, inbox_stack
from tests.test_web_ui import CHROMIUM
from tests.waiting import assert_eventually

WAIT = 20_000  # ms: a call shows within a scan or two; the machine may be busy


@pytest.fixture(scope="module")
async def stack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    async with inbox_stack(tmp_path_factory.mktemp("inbox")) as built:
        yield built


def row(page: Any, text: str) -> Any:
    return page.locator("tr[data-key]", has_text=text)


async def test_a_call_appears_live_and_is_approved_with_an_edit_while_another_browser_watches(stack: Stack) -> None:
    alice, bob = await stack.user("alice"), await stack.user("bob")
    for page in (alice, bob):
        await page.goto("/")
        await page.locator("#live.on").wait_for(timeout=WAIT)
    handle = await stack.start([("run_command", {"command": "echo first-call"})])
    for page in (alice, bob):  # no reload: the row arrives over the event stream
        await row(page, "echo first-call").wait_for(timeout=WAIT)
    await row(alice, "echo first-call").locator("td.tool a").click()
    await alice.get_by_text("Approve with edited arguments").click()
    await alice.locator("textarea[name=arguments]").fill(json.dumps({"command": "echo edited-call"}))
    await alice.get_by_role("button", name="Approve edited").click()
    await alice.get_by_role("button", name="Send the edited approval").click()  # after the diff (test_inbox_shown.py)
    await alice.locator("tr.result.approved").wait_for(timeout=WAIT)
    await row(bob, "echo first-call").locator("td.state", has_text="approved by alice").wait_for(timeout=WAIT)
    result = await handle.result()
    assert result.text == (
        "exit code: 0\nedited-call\n\n[signoff: alice edited this call's arguments before it ran; "
        'it ran with {"command": "echo edited-call"}]'
    )
    (record,) = result.approvals
    assert (record.approver, record.edited_arguments) == ("alice", {"command": "echo edited-call"})
    assert record.arguments == {"command": "echo first-call"}

    await bob.reload()  # what is decided stays decided: not listed again, shown as decided
    await bob.locator("#decided li", has_text="approved by alice").wait_for(timeout=WAIT)
    assert await row(bob, "echo first-call").count() == 0


async def test_a_denial_with_a_reason_reaches_the_model_and_the_other_browser(stack: Stack) -> None:
    alice, bob = await stack.user("alice"), await stack.user("bob")
    handle = await stack.start([("run_command", {"command": "rm -rf /srv/logs"})])
    await bob.goto("/")
    await row(bob, "rm -rf /srv/logs").wait_for(timeout=WAIT)
    await alice.goto("/")
    await row(alice, "rm -rf /srv/logs").locator("td.tool a").click()
    await alice.locator("input.reason").fill("Back up the logs first")
    await alice.get_by_role("button", name="Deny").click()
    await alice.locator("tr.result.denied").wait_for(timeout=WAIT)
    await row(bob, "rm -rf /srv/logs").locator("td.state", has_text="denied by alice").wait_for(timeout=WAIT)
    assert (await handle.result()).text == "Rejected: Back up the logs first"


async def test_edited_arguments_that_do_not_fit_the_tools_schema_are_not_sent(stack: Stack) -> None:
    alice = await stack.user("alice")
    handle = await stack.start([("run_command", {"command": "echo schema"})])
    await alice.goto("/")
    await row(alice, "echo schema").locator("td.tool a").click()
    await alice.get_by_text("Approve with edited arguments").click()
    await alice.locator("textarea[name=arguments]").fill('{"command": 5}')
    await alice.get_by_role("button", name="Approve edited").click()
    await alice.locator("tr.result.refused", has_text="do not fit the tool's schema").wait_for(timeout=WAIT)
    (pending,) = await handle.query("pending_approvals")
    assert pending["arguments"] == {"command": "echo schema"}
    await handle.terminate()


async def test_an_approval_that_grants_the_tool_approves_the_runs_next_call_of_it_without_a_pause(
    stack: Stack,
) -> None:
    alice = await stack.user("alice")
    handle = await stack.start(
        [("run_command", {"command": "echo granted-1"})], then=[("run_command", {"command": "echo granted-2"})]
    )
    await alice.goto("/")
    await row(alice, "granted-1").locator("td.tool a").click()
    await alice.locator("select[name=grant]").select_option("tool")
    await alice.locator("input[name=grant_ttl]").fill("1h")
    await alice.get_by_role("button", name="Approve", exact=True).click()
    await alice.locator("tr.result.approved").wait_for(timeout=WAIT)
    result = await handle.result()
    assert result.text == "exit code: 0\ngranted-1\n | exit code: 0\ngranted-2\n"
    first, second = result.approvals
    assert first.approver == "alice" and second.grant_id is not None and second.approver == "alice"


async def test_the_list_filters_by_tool_and_a_call_that_does_not_match_does_not_arrive(stack: Stack) -> None:
    alice = await stack.user("alice")
    listed = await stack.start([("deploy", {"target": "filtered-in"})], agent="ops")
    other = await stack.start([("run_command", {"command": "echo filtered-out-1"})])
    await alice.goto("/?tool=deploy&sort=deadline")
    await row(alice, "filtered-in").wait_for(timeout=WAIT)
    later = await stack.start([("run_command", {"command": "echo filtered-out-2"})])
    await assert_eventually(lambda: _pending(later))
    matching = await stack.start([("deploy", {"target": "filtered-in-later"})], agent="ops")
    await row(alice, "filtered-in-later").wait_for(timeout=WAIT)  # a state that also held the call that does not match
    assert await row(alice, "filtered-out").count() == 0
    assert await alice.locator("tr[data-key]").count() == await alice.locator("tr[data-key]", has_text="deploy").count()
    for handle in (listed, other, later, matching):
        await handle.terminate()


async def test_a_bulk_decision_decides_exactly_the_calls_selected(stack: Stack) -> None:
    alice, bob = await stack.user("alice"), await stack.user("bob")
    one = await stack.start([("run_command", {"command": "echo bulk-one"})])
    two = await stack.start([("run_command", {"command": "echo bulk-two"})])
    left = await stack.start([("run_command", {"command": "echo bulk-left"})])
    for page in (alice, bob):
        await page.goto("/")
        for text in ("bulk-one", "bulk-two", "bulk-left"):
            await row(page, text).wait_for(timeout=WAIT)
    await row(alice, "bulk-one").locator("input[type=checkbox]").check()
    await row(alice, "bulk-two").locator("input[type=checkbox]").check()
    await alice.locator("#selected", has_text="2 selected").wait_for()
    await alice.get_by_role("button", name="approve selected").click()
    await alice.locator("tr.result.approved").nth(1).wait_for(timeout=WAIT)
    assert await alice.locator("tr.result").count() == 2
    for text in ("bulk-one", "bulk-two"):
        await row(bob, text).locator("td.state", has_text="approved by alice").wait_for(timeout=WAIT)
    assert [r.text for r in [await one.result(), await two.result()]] == [
        "exit code: 0\nbulk-one\n",
        "exit code: 0\nbulk-two\n",
    ]
    assert len(await left.query("pending_approvals")) == 1
    assert await row(bob, "bulk-left").locator("td.state").inner_text() == ""
    await left.terminate()


async def test_a_verified_policy_is_met_by_the_inbox_signed_token_for_a_member_of_the_group(stack: Stack) -> None:
    alice, bob = await stack.user("alice", "sre"), await stack.user("bob", "dev")
    handle = await stack.start([("deploy", {"target": "web"})], agent="ops")
    await bob.goto("/")
    await row(bob, "deploy").locator("td.tool a").click()
    await bob.locator(".refusal", has_text="not among its approvers").wait_for(timeout=WAIT)
    assert await bob.get_by_role("button", name="Approve").count() == 0
    await alice.goto(bob.url)
    await alice.get_by_role("button", name="Approve", exact=True).click()
    await alice.locator("tr.result.approved").wait_for(timeout=WAIT)
    result = await handle.result()
    (record,) = result.approvals
    assert (record.approver, record.verified, record.approved) == ("alice", True, True)
    assert result.text == "deployed web"


async def test_an_identity_header_from_anyone_but_the_proxy_is_ignored(stack: Stack) -> None:
    handle = await stack.start([("run_command", {"command": "echo secret-arguments"})])
    mallory = await stack.user("alice", "sre", direct=True)  # the header, but not from the proxy
    answer = await mallory.goto("/")
    assert answer is not None and answer.status == 401
    await mallory.get_by_text("Who are you?").wait_for()
    assert "secret-arguments" not in await mallory.content()
    events = await mallory.request.get("/events")
    assert events.status == 403
    forged = await mallory.request.post(
        "/decide", form={"call": json.dumps([handle.id, "call_1", "0" * 64]), "action": "approve"}
    )
    assert forged.status == 401
    assert len(await handle.query("pending_approvals")) == 1
    await handle.terminate()


async def test_a_page_that_lost_its_connection_catches_up_without_losing_or_resurrecting_a_call(
    stack: Stack,
) -> None:
    bob = await stack.user("bob")
    decided = await stack.start([("run_command", {"command": "echo decided-meanwhile"})])
    await bob.goto("/")
    await row(bob, "decided-meanwhile").wait_for(timeout=WAIT)
    stack.proxy.cut()
    try:
        await bob.locator("#live.off", has_text="reconnecting").wait_for(timeout=WAIT)
        arrived = await stack.start([("run_command", {"command": "echo arrived-meanwhile"})])
        (call,) = await decided.query("pending_approvals")
        await decided.execute_update(
            "submit_tool_approval",
            {
                "call_id": call["call_id"],
                "approved": True,
                "approver": "carol",
                "arguments_digest": call["arguments_digest"],
            },
        )
        await decided.result()
        await assert_eventually(lambda: _pending(arrived))
    finally:
        stack.proxy.resume()
    await row(bob, "arrived-meanwhile").wait_for(timeout=WAIT)  # not lost
    await row(bob, "decided-meanwhile").locator("td.state", has_text="approved by carol").wait_for(timeout=WAIT)
    await bob.locator("#live.on").wait_for(timeout=WAIT)
    await arrived.terminate()
    await row(bob, "arrived-meanwhile").locator("td.state", has_text="no longer waiting").wait_for(timeout=WAIT)


HOSTILE = (
    "<script>window.__pwned=1</script></textarea><script>window.__pwned=2</script>"
    '<img src=x onerror="window.__pwned=3"> \u202eevil.exe \x1b[2J\x1b]52;c;cHduZWQ=\x07 '
    "[click](javascript:alert(1))"
)


async def test_adversarial_arguments_render_inert_and_edit_back_to_exactly_themselves(stack: Stack) -> None:
    huge = json.dumps({"rows": [{"id": i, "note": "<b>x</b>" * 4} for i in range(3000)]})
    handle = await stack.start(
        [
            ("run_command", {"command": HOSTILE}),
            ("write_file", {"path": "/nonexistent-inbox-dir/data.json", "content": huge}),
        ]
    )
    alice = await stack.user("alice")
    await alice.goto("/")
    await row(alice, "evil.exe").wait_for(timeout=WAIT)
    await row(alice, "data.json").wait_for(timeout=WAIT)
    pending = {p["name"]: p for p in await handle.query("pending_approvals")}
    for name in ("run_command", "write_file"):
        await alice.goto(f"/call?run={handle.id}&id={pending[name]['call_id']}")
        await alice.locator("#arguments").wait_for()
        assert await alice.evaluate("window.__pwned") is None
        assert await alice.evaluate("document.scripts.length") == 1  # the inbox's own file, nothing else
        assert await alice.locator("main img, main script, main a[href^=javascript]").count() == 0
        edited = await alice.locator("textarea[name=arguments]").input_value()
        assert json.loads(edited) == pending[name]["arguments"]  # the field holds the arguments exactly
    await alice.goto(f"/call?run={handle.id}&id={pending['run_command']['call_id']}")
    shown = await alice.locator("#arguments").inner_text()
    for visible in ("<script>window.__pwned=1</script></textarea>", "\\u202eevil.exe", "\\u001b[2J", "\\u0007"):
        assert visible in shown
    assert "\u202e" not in shown and "\x1b" not in shown
    await handle.terminate()


async def test_actions_need_the_pages_csrf_token_and_other_sites_cannot_act_or_read(stack: Stack) -> None:
    handle = await stack.start([("run_command", {"command": "echo csrf"})])
    (call,) = await assert_eventually(lambda: _pending(handle))
    form = {"run": handle.id, "id": call["call_id"], "digest": call["arguments_digest"], "action": "approve"}
    async with httpx.AsyncClient(base_url=stack.url, headers={"X-Forwarded-User": "alice"}) as alice:
        page = await alice.get(f"/call?run={handle.id}&id={call['call_id']}")
        token = re.search(r'name="csrf" value="([0-9a-f]{64})"', page.text)
        assert page.status_code == 200 and token is not None and alice.cookies.get("signoff_inbox")
        assert "httponly" in page.headers["set-cookie"].lower() and "samesite=lax" in page.headers["set-cookie"].lower()
        link = f"/call?run={handle.id}&id={call['call_id']}"
        from_chat = await alice.get(link, headers={"Sec-Fetch-Site": "cross-site"})
        assert from_chat.status_code == 200 and "set-cookie" not in from_chat.headers  # a link opens it, same browser
        refused = [
            await alice.post("/call/decide", data=form),  # no token
            await alice.post("/call/decide", data={**form, "csrf": token[1]}, headers={"X-Forwarded-User": "bob"}),
            await alice.post(
                "/call/decide", data={**form, "csrf": token[1]}, headers={"Origin": "https://evil.example"}
            ),
            await alice.post("/call/decide", data={**form, "csrf": token[1]}, headers={"Sec-Fetch-Site": "cross-site"}),
        ]
        assert [r.status_code for r in refused] == [403] * 4
        assert len(await handle.query("pending_approvals")) == 1
        reads = [
            await alice.get("/events", headers={"Origin": "https://evil.example"}),
            await alice.get("/rows?key=x", headers={"Sec-Fetch-Site": "cross-site"}),
        ]
        assert [r.status_code for r in reads] == [403, 403]
        assert not any("access-control-allow-origin" in r.headers for r in [page, *reads])
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
        accepted = await alice.post("/call/decide", data={**form, "csrf": token[1]})
        assert accepted.status_code == 200 and 'data-outcome="approved"' in accepted.text
    assert (await handle.result()).approvals[0].approver == "alice"


async def _pending(handle: Any) -> Any:
    pending = await handle.query("pending_approvals")
    assert pending
    return pending


if not Path(CHROMIUM).exists() and not os.environ.get("CI"):  # .ci/run installs it: there, a missing one fails
    pytestmark = pytest.mark.skip(reason=f"no chromium at {CHROMIUM}: apt-get install chromium (.ci/run does)")
