"""Test-only variants of `AgentRun`, registered under its name, as a code change would make them.

Imported inside the workflow sandbox: nothing here but `temporalio` and `signoff`.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RawValue

from signoff.contract import WORKFLOW_TYPE, AgentRunResult
from signoff.workflows.agent_run import AgentRun


@workflow.defn(name=WORKFLOW_TYPE)
class WaitsBeforeTheModel(AgentRun):
    """A change of command order: a short timer before every model turn."""

    @workflow.run
    async def run(self, raw: RawValue) -> AgentRunResult:
        return await super().run(raw)

    async def _chat(self) -> None:
        await workflow.sleep(timedelta(seconds=1))
        await super()._chat()


@workflow.defn(name=WORKFLOW_TYPE)
class ToolsInReverse(AgentRun):
    """Starts a turn's tool calls in reverse order: the same activity type each time, so the
    commands differ only in their input, which replay does not compare."""

    @workflow.run
    async def run(self, raw: RawValue) -> AgentRunResult:
        return await super().run(raw)

    async def _run_tools(self, calls: list) -> None:
        results = await asyncio.gather(*(self._tool(call) for call in reversed(calls)))
        for call, content in zip(reversed(calls), results, strict=True):
            self._loop.apply_tool_result(call.id, content.content)
