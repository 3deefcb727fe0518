"""Hostile text rendered by the inbox in real Chromium: no script runs, no element is injected.

What a page shows comes from runs, and a run's queries are answered by whoever polls its task
queue: a workflow *named* `AgentRun` on an attacker's own queue (issue 27's deputy) answers
`status` and `messages` with anything. Here such a run answers with markup in every field the
inbox shows (tool name, description, arguments and their keys, preview, agent, requester, call
id, workflow id, transcript), next to a twin whose text is the same with `<` and `>` replaced,
so the two pages must have the same elements. A real `AgentRun` adds hostile arguments and a
hostile workflow id and requester through the real worker.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio import workflow
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from signoff.approval.digest import arguments_digest
from signoff.contract import AgentRunInput, RunOptions
from signoff.workflows.feed import SIGNOFF_PENDING_TOOLS, SIGNOFF_STATUS
from tests.inbox_harness import Stack, inbox_stack
from tests.test_web_ui import CHROMIUM
from tests.waiting import assert_eventually

WAIT = 20_000
HOSTILE = (
    '<script>window.__pwned=1</script></textarea></pre><img src=x onerror="window.__pwned=2">'
    '<a href="javascript:window.__pwned=3">click me</a><svg onload="window.__pwned=4"></svg>'
    "<iframe src=javascript:alert(1)></iframe> [md](javascript:alert(1)) \u202egnp.exe\u202c "
    "zero\u200bwidth\u200djoin\u2066iso\u2069 \x1b]52;c;cHduZWQ=\x07 end"
)
JUDGE = """() => ({
  pwned: window.__pwned === undefined ? null : window.__pwned,
  scripts: document.scripts.length,
  injected: document.querySelectorAll("main img, main svg, main iframe, main script, a[href^='javascript']").length,
  handlers: [...document.querySelectorAll("*")]
    .filter((e) => [...e.attributes].some((a) => a.name.startsWith("on"))).length,
  elements: document.querySelectorAll("body *").length,
})"""


def twin(text: str) -> str:
    """The same text with no markup in it: what a page of it must look like, element for element."""
    return text.replace("<", "[").replace(">", "]")


def forged_status(workflow_id: str, text: str) -> dict[str, Any]:
    arguments = {"command": text, text: [text, 1]}
    request = {
        "call_id": f"call-{twin(text)[:12]}",
        "name": text,
        "description": text,
        "arguments": arguments,
        "arguments_digest": arguments_digest(arguments),
        "preview": f"--- a/{text}\n+++ b/{text}\n@@ -1 +1 @@\n-{text}\n+{text}",
        "binding": None,
    }
    return {"status": "AwaitingApproval", "agent": text, "round": 1, "pending": [request], "requested_by": text}


@workflow.defn(name="AgentRun")
class ForgedRun:
    """A workflow that calls itself AgentRun, on its own task queue, and answers with `text`."""

    def __init__(self) -> None:
        self.text = ""

    @workflow.run
    async def run(self, text: str) -> None:
        self.text = text
        workflow.upsert_search_attributes(
            [SIGNOFF_STATUS.value_set("AwaitingApproval"), SIGNOFF_PENDING_TOOLS.value_set(["run_command"])]
        )
        await workflow.wait_condition(lambda: False)

    @workflow.query(name="status")
    def status(self) -> dict[str, Any]:
        return forged_status(workflow.info().workflow_id, self.text)

    @workflow.query(name="messages")
    def messages(self) -> list[dict[str, Any]]:
        call = {"id": "c1", "name": self.text, "arguments": self.text}
        return [
            {"role": "user", "content": self.text},
            {"role": "assistant", "content": self.text, "tool_calls": [call]},
            {"role": "tool", "content": self.text, "tool_call_id": "c1"},
        ]

    @workflow.query(name="agent_snapshot")
    def agent_snapshot(self) -> None:
        return None


@pytest.fixture(scope="module")
async def stack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    async with inbox_stack(tmp_path_factory.mktemp("inbox-hostile")) as built:
        yield built


async def judge(page: Any) -> dict[str, Any]:
    return dict(await page.evaluate(JUDGE))


async def test_a_run_that_answers_with_markup_in_every_field_renders_inert(stack: Stack) -> None:
    queue = f"forged-{uuid.uuid4().hex[:8]}"
    async with Worker(
        stack.client, task_queue=queue, workflows=[ForgedRun], workflow_runner=UnsandboxedWorkflowRunner()
    ):
        runs = {}
        for kind, text in (("hostile", HOSTILE), ("benign", twin(HOSTILE))):
            run_id = f"forged-{kind}-{text[:40]}-{uuid.uuid4().hex[:6]}"
            runs[kind] = await stack.client.start_workflow("AgentRun", text, id=run_id, task_queue=queue)
        alice = await stack.user("alice")
        dialogs: list[str] = []
        alice.on("dialog", lambda dialog: dialogs.append(dialog.message))
        await alice.goto("/")
        rows = {kind: alice.locator(f"tr[data-key]:has(a[href*='forged-{kind}'])") for kind in runs}
        for found in rows.values():
            await found.wait_for(timeout=WAIT)
        verdict = await judge(alice)
        assert (verdict["pwned"], verdict["scripts"], verdict["injected"], verdict["handlers"]) == (None, 1, 0, 0)
        assert await rows["hostile"].locator("*").count() == await rows["benign"].locator("*").count()
        assert "<script>window.__pwned=1</script>" in await rows["hostile"].inner_text()

        pages = {}
        for kind, handle in runs.items():
            (call,) = (await handle.query("status"))["pending"]
            await alice.goto(f"/call?run={handle.id}&id={call['call_id']}")
            await alice.locator("#arguments").wait_for(timeout=WAIT)
            pages[kind] = await judge(alice)
            if kind == "hostile":
                shown = await alice.locator("main").inner_text()
                for visible in ("<script>window.__pwned=1</script></textarea></pre>", "\\u202egnp.exe", "\\u200b"):
                    assert visible in shown
                assert "\u202e" not in shown and "\u200b" not in shown and "\x1b" not in shown
                edited = json.loads(await alice.locator("textarea[name=arguments]").input_value())
                assert edited == call["arguments"]  # the edit field holds exactly the arguments
        assert pages["hostile"] == pages["benign"]  # element for element
        assert (pages["hostile"]["pwned"], pages["hostile"]["injected"], pages["hostile"]["handlers"]) == (None, 0, 0)
        assert dialogs == []
        for handle in runs.values():
            await handle.terminate()


async def test_hostile_ids_requester_and_arguments_of_a_real_run_render_inert(stack: Stack) -> None:
    run_input = AgentRunInput(
        prompt=f"please, calls: {json.dumps([['run_command', {'command': HOSTILE}]])}",
        options=RunOptions(requested_by="<img src=x onerror=window.__pwned=8>eve"),
    )
    handle = await stack.client.start_workflow(
        "AgentRun",
        run_input,
        id=f"<img src=x onerror=window.__pwned=9>\u200b-{uuid.uuid4().hex[:6]}",
        task_queue=stack.task_queue,
    )

    async def waiting() -> Any:
        (call,) = await handle.query("pending_approvals")
        return call

    call = await assert_eventually(waiting)
    alice = await stack.user("alice")
    dialogs: list[str] = []
    alice.on("dialog", lambda dialog: dialogs.append(dialog.message))
    await alice.goto("/")
    await alice.locator("tr[data-key]", has_text="window.__pwned=9").first.wait_for(timeout=WAIT)
    await alice.locator("tr[data-key]", has_text="window.__pwned=9").first.locator("td.tool a").click()
    await alice.locator("#arguments").wait_for(timeout=WAIT)
    verdict = await judge(alice)
    assert (verdict["pwned"], verdict["scripts"], verdict["injected"], verdict["handlers"]) == (None, 1, 0, 0)
    facts = await alice.locator("dl.facts").inner_text()
    assert "<img src=x onerror=window.__pwned=8>eve" in facts
    assert "\\u200b" in await alice.locator("p.crumbs").inner_text()
    await alice.locator("input.reason").fill(HOSTILE)  # a denial's reason is shown back too
    await alice.get_by_role("button", name="Deny").click()
    await alice.locator("tr.result.denied").wait_for(timeout=WAIT)
    await alice.goto(f"/call?run={handle.id}&id={call['call_id']}")
    await alice.locator("#decided-text", has_text="denied by alice").wait_for(timeout=WAIT)
    verdict = await judge(alice)
    assert (verdict["pwned"], verdict["scripts"], verdict["injected"], verdict["handlers"]) == (None, 1, 0, 0)
    assert "<script>window.__pwned=1</script>" in await alice.locator("#decided-banner").inner_text()
    assert dialogs == []


if not Path(CHROMIUM).exists() and not os.environ.get("CI"):  # .ci/run installs it: there, a missing one fails
    pytestmark = pytest.mark.skip(reason=f"no chromium at {CHROMIUM}: apt-get install chromium (.ci/run does)")
