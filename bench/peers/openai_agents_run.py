"""The OpenAI Agents SDK on Temporal: the bench's tools and workflow, as Temporal's integration
(`temporalio.openai_agents`) documents them.

The tools do I/O (they count their calls in a file), so they are activities made into agent
tools with `activity_as_tool`; `gated_noop`'s tool has `needs_approval=True`. The agent is
built in the workflow, and `Runner.run` runs in it, each model call an activity of the
plugin's. A call that needs approval ends the run with `interruptions`; the workflow keeps
the run's `RunState` (`to_state()`), waits for a `decide` update, approves or rejects the call
on the state (`rejection_message`: what the model reads) and resumes with `Runner.run(agent,
state)`, as the Agents SDK's human-in-the-loop docs do it.
"""

from __future__ import annotations

import dataclasses
from typing import cast

from agents import Agent, FunctionTool, Runner, RunState
from temporalio import activity, workflow
from temporalio.openai_agents.workflow import activity_as_tool

from bench import tool_calls
from bench.peers.shared import ACTIVITY_TIMEOUT, MODEL, Decision


@activity.defn
async def noop(x: str) -> str:
    """Do nothing and say so.

    Args:
        x: any text, echoed back.
    """
    return tool_calls.noop(x)


@activity.defn
async def gated_noop(x: str) -> str:
    """Do nothing, once a person has approved it.

    Args:
        x: any text, echoed back.
    """
    return tool_calls.gated(x)


def bench_agent() -> Agent[None]:
    # `activity_as_tool` returns the `Tool` union; what it builds is a `FunctionTool`.
    gated = cast("FunctionTool", activity_as_tool(gated_noop, start_to_close_timeout=ACTIVITY_TIMEOUT))
    return Agent[None](
        name="bench",
        instructions=tool_calls.INSTRUCTIONS,
        model=MODEL,
        tools=[
            activity_as_tool(noop, start_to_close_timeout=ACTIVITY_TIMEOUT),
            dataclasses.replace(gated, needs_approval=True),
        ],
    )


@workflow.defn(name="OpenAIAgentsBenchRun")
class OpenAIAgentsBenchRun:
    def __init__(self) -> None:
        self._decisions: dict[str, Decision] = {}
        self._pending: list[str] = []

    @workflow.run
    async def run(self, prompt: str) -> str:
        agent = bench_agent()
        result = await Runner.run(agent, prompt)
        while result.interruptions:
            state = result.to_state()
            self._pending = [item.call_id or "" for item in result.interruptions]
            await workflow.wait_condition(self._all_decided)
            self._answer(state)
            result = await Runner.run(agent, state)
        return str(result.final_output)

    def _all_decided(self) -> bool:
        return all(i in self._decisions for i in self._pending)

    def _answer(self, state: RunState[None]) -> None:
        for item in state.get_interruptions():
            decision = self._decisions[item.call_id or ""]
            if decision.approved:
                state.approve(item)
            else:
                state.reject(item, rejection_message=f"Rejected: {decision.reason}")

    @workflow.update
    def decide(self, decision: Decision) -> None:
        self._decisions[decision.call_id] = decision
