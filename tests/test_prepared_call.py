"""One call through the tool activity is prepared once: its arguments parsed once, the gate
asked once, what its tool declares read once, and the server asked nothing an unverified policy
does not need (`signoff.activities.tool.prepare_call`).

The counts are taken on the real objects of a real run (a dev server, the scripted model, an
in-process worker): the tool counts what it is asked, and wrappers installed on the real
functions count the parses and the server's descriptions made inside `signoff.tool`.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from temporalio import activity
from temporalio.client import Client

import signoff.activities.tool as tool_activity
from signoff.activities.models import TOOL_ACTIVITY
from signoff.agent.builder import AgentBuilder
from signoff.text import strict_json
from signoff.tools.base import ToolCapabilities, ToolResult
from tests.helpers import (
    Reply,
    ScriptedModelServer,
    ScriptedRequest,
    agents_for,
    call,
    running_worker,
    start_run,
    wait_pending,
)

ARGUMENTS = {"ticket": 7, "risky": True}


def in_the_tool_activity() -> bool:
    return activity.in_activity() and activity.info().activity_type == TOOL_ACTIVITY


class CountingTool:
    """A tool gated per call (its arguments say whether a person must approve), told whether a
    call was approved, counting inside `signoff.tool` what it is asked."""

    name, description, kind, idempotent = "close_ticket", "Close a ticket", "function", True

    def __init__(self) -> None:
        self.parameters: dict[str, Any] = {"type": "object", "properties": {"ticket": {"type": "integer"}}}
        self.asked: Counter[str] = Counter()
        self.ran: list[tuple[dict[str, Any], bool]] = []

    def _count(self, what: str) -> None:
        if in_the_tool_activity():
            self.asked[what] += 1

    @property
    def capabilities(self) -> ToolCapabilities:
        self._count("capabilities")
        return ToolCapabilities(gate="per_call", approval_aware=self._execute)

    def requires_approval(self, arguments: dict[str, Any]) -> bool:
        self._count("gate")
        return bool(arguments.get("risky"))

    async def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return await self._execute(arguments, approved=False)

    async def _execute(self, arguments: dict[str, Any], *, approved: bool) -> ToolResult:
        self.ran.append((arguments, approved))
        return ToolResult(content=f"closed {arguments['ticket']}")


def one_call(request: ScriptedRequest) -> Reply:
    if request.round == 1:
        return Reply.tool_calls([call("close_ticket", "call_1", **ARGUMENTS)])
    return Reply.text("done")


async def test_one_approved_call_is_parsed_once_gated_once_and_its_caller_not_described(
    client: Client, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counting = CountingTool()
    agent = AgentBuilder("tickets").with_tool(counting).build()
    text = json.dumps(ARGUMENTS)
    parses, describes = Counter[str](), Counter[str]()
    loads, describe = strict_json.loads, tool_activity.raw_description

    def counted_loads(raw: Any, *args: Any, **kwargs: Any) -> Any:
        if in_the_tool_activity() and raw == text:
            parses[raw] += 1
        return loads(raw, *args, **kwargs)

    async def counted_describe(*args: Any) -> Any:
        describes[activity.info().activity_type] += 1
        return await describe(*args)

    monkeypatch.setattr(strict_json, "loads", counted_loads)
    monkeypatch.setattr(tool_activity, "raw_description", counted_describe)
    with ScriptedModelServer(one_call) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path, extra=[agent])):
            handle = await start_run(client, task_queue, agent="tickets")
            (pending,) = await wait_pending(handle)
            decision = {"call_id": "call_1", "approved": True, "arguments_digest": pending["arguments_digest"]}
            await handle.execute_update("submit_tool_approval", decision)
            result = await handle.result()
    assert result.text == "done" and result.messages[-2].content == "closed 7"
    assert counting.ran == [(ARGUMENTS, True)]  # it ran once, told it was approved
    assert parses == {text: 1}  # the arguments, parsed once in the tool activity
    assert counting.asked == {"gate": 1, "capabilities": 1}  # the gate asked once, its declaration read once
    assert describes == {}  # no verified policy: the server is not asked about the run
