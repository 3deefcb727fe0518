"""`SIGNOFF_INBOX_SCOPE=mine`: each viewer sees, and decides, only the calls they may decide; and
no viewer holds more than `MAX_STREAMS_PER_VIEWER` event streams open.

The stack's `ops` agent gates `deploy` for group `sre` (verified, the inbox signs) and `restart`
for anyone; alice is in `sre`, bob in `dev`. Real inbox process, real worker, real HTTP and
Chromium (tests/inbox_harness.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from signoff.inbox.calls import call_key
from signoff.inbox.live import MAX_STREAMS_PER_VIEWER
from tests.inbox_harness import Stack, inbox_stack
from tests.test_web_ui import CHROMIUM
from tests.waiting import assert_eventually

WAIT = 20_000
ALICE = {"X-Forwarded-User": "alice", "X-Forwarded-Groups": "sre"}
BOB = {"X-Forwarded-User": "bob", "X-Forwarded-Groups": "dev"}


@pytest.fixture(scope="module")
async def stack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    async with inbox_stack(tmp_path_factory.mktemp("inbox-scope"), SIGNOFF_INBOX_SCOPE="mine") as built:
        yield built


async def one_call(handle: Any) -> dict[str, Any]:
    (call,) = await handle.query("pending_approvals")
    return dict(call)


def key(handle: Any, call: dict[str, Any]) -> str:
    return call_key(handle.id, call["call_id"], call["arguments_digest"])


async def first_state(http: httpx.AsyncClient) -> dict[str, Any]:
    """The first `state` event of the viewer's event stream."""
    async with http.stream("GET", "/events") as stream:
        assert stream.status_code == 200
        async for line in stream.aiter_lines():
            if line.startswith("data: "):
                return dict(json.loads(line[len("data: ") :]))
    raise AssertionError("the stream ended without a state")


async def test_a_viewer_sees_only_the_calls_they_may_decide_in_every_view(stack: Stack) -> None:
    deploy = await stack.start([("deploy", {"target": "scope-secret-target"})], agent="ops")
    restart = await stack.start([("restart", {"service": "scope-open-service"})], agent="ops")
    hidden, shown = (
        await assert_eventually(lambda: one_call(deploy)),
        await assert_eventually(lambda: one_call(restart)),
    )
    async with (
        httpx.AsyncClient(base_url=stack.url, headers=ALICE) as alice,
        httpx.AsyncClient(base_url=stack.url, headers=BOB) as bob,
    ):
        assert "scope-secret-target" in (await alice.get("/")).text
        listing = (await bob.get("/")).text
        assert "scope-open-service" in listing and "scope-secret-target" not in listing
        page = await bob.get(f"/call?run={deploy.id}&id={hidden['call_id']}")
        assert page.status_code == 404 and "scope-secret-target" not in page.text
        assert "waits for you" in page.text
        assert (await alice.get(f"/call?run={deploy.id}&id={hidden['call_id']}")).status_code == 200
        for viewer, sees_deploy in ((bob, False), (alice, True)):
            state = await first_state(viewer)
            assert key(restart, shown) in state["waiting"]
            assert (key(deploy, hidden) in state["waiting"]) is sees_deploy
        # the rows a page fetches for the keys its stream named (the watcher knows both calls now)
        rows = await bob.get(f"/rows?key={key(deploy, hidden)}&key={key(restart, shown)}")
        assert "scope-open-service" in rows.text and "scope-secret-target" not in rows.text

        token = re.search(r'name="csrf" value="([0-9a-f]{64})"', listing)
        assert token is not None
        target = json.dumps([deploy.id, hidden["call_id"], hidden["arguments_digest"]])
        bulk = await bob.post("/decide", data={"csrf": token[1], "action": "deny", "call": target})
        assert f"no call {hidden['call_id']!r} waits for you" in bulk.text.replace("&#39;", "'")
        form = {"run": deploy.id, "id": hidden["call_id"], "digest": hidden["arguments_digest"], "action": "deny"}
        one = await bob.post("/call/decide", data={**form, "csrf": token[1]})
        assert 'data-outcome="refused"' in one.text
        assert len(await deploy.query("pending_approvals")) == 1  # bob, who cannot see it, decided nothing

    for handle in (deploy, restart):
        await handle.terminate()


async def test_how_a_hidden_call_was_decided_stays_hidden(stack: Stack) -> None:
    deploy = await stack.start([("deploy", {"target": "scope-decided-target"})], agent="ops")
    hidden = await assert_eventually(lambda: one_call(deploy))
    alice, bob = await stack.user("alice", "sre"), await stack.user("bob", "dev")
    for page in (alice, bob):
        await page.goto("/")
        await page.locator("#live.on").wait_for(timeout=WAIT)
    await alice.locator("tr[data-key]", has_text="scope-decided-target").locator("td.tool a").click()
    await alice.get_by_role("button", name="Approve", exact=True).click()
    await alice.locator("tr.result.approved").wait_for(timeout=WAIT)
    await deploy.result()
    await alice.goto(f"/call?run={deploy.id}&id={hidden['call_id']}")  # the one who decided: how
    await alice.locator("#decided-text", has_text="approved by alice (verified)").wait_for()
    await bob.goto("/")
    async with httpx.AsyncClient(base_url=stack.url, headers=BOB) as http:
        assert key(deploy, hidden) not in (await first_state(http))["decided"]
        page = await http.get(f"/call?run={deploy.id}&id={hidden['call_id']}")
        assert page.status_code == 404 and "approved by" not in page.text
    assert await bob.locator("#decided li", has_text="scope-decided").count() == 0


async def test_a_viewer_may_hold_only_so_many_event_streams_and_the_page_says_so(stack: Stack) -> None:
    async with contextlib.AsyncExitStack() as held:
        carol = await held.enter_async_context(
            httpx.AsyncClient(base_url=stack.url, headers={"X-Forwarded-User": "carol"}, timeout=30)
        )
        streams = [
            await held.enter_async_context(carol.stream("GET", "/events")) for _ in range(MAX_STREAMS_PER_VIEWER)
        ]
        assert [s.status_code for s in streams] == [200] * MAX_STREAMS_PER_VIEWER
        refused = await carol.get("/events")
        assert refused.status_code == 429
        assert f"at most {MAX_STREAMS_PER_VIEWER} each" in refused.text
        async with httpx.AsyncClient(base_url=stack.url, headers={"X-Forwarded-User": "dave"}) as dave:
            assert (await first_state(dave))["waiting"] is not None  # another viewer is not held up

        page = await stack.user("carol")
        await page.goto("/")
        await page.locator("#live", has_text="live updates stopped").wait_for(timeout=WAIT)

        await streams[0].aclose()  # a tab closed: its slot is given back

        async def reopened() -> None:
            async with carol.stream("GET", "/events") as again:
                assert again.status_code == 200

        await assert_eventually(reopened)


if not Path(CHROMIUM).exists() and not os.environ.get("CI"):  # .ci/run installs it: there, a missing one fails
    pytestmark = pytest.mark.skip(reason=f"no chromium at {CHROMIUM}: apt-get install chromium (.ci/run does)")
