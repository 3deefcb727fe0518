"""Pydantic AI on Temporal: the bench agent and its workflow, in the layout Pydantic AI's docs show.

The agent is defined at module level with the `TemporalDurability` capability (its model
requests and tool calls become activities); the workflow lists it in `__pydantic_ai_agents__`,
so that `PydanticAIPlugin` registers those activities on the worker. `gated_noop` has
`requires_approval=True`: the agent run ends with `DeferredToolRequests`, the workflow waits
for a `decide` update, and a second `agent.run` goes on from the first one's messages with
`deferred_tool_results` (approved: the tool activity runs; denied: `ToolDenied`, whose message
the model reads), as Pydantic AI's deferred-tools docs do it. The model is `OpenAIChatModel` on
the scripted server (Chat Completions), its client's own retries off, as the Temporal docs
recommend (Temporal retries the activity).
"""

from __future__ import annotations

from openai import AsyncOpenAI
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, Tool, ToolDenied
from pydantic_ai.durable_exec.temporal import PydanticAIWorkflow, TemporalDurability
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from temporalio import workflow

from bench import tool_calls
from bench.peers.shared import API_KEY, MODEL, Decision, model_base_url


async def noop(x: str) -> str:
    """Do nothing and say so.

    Args:
        x: any text, echoed back.
    """
    return tool_calls.noop(x)


async def gated_noop(x: str) -> str:
    """Do nothing, once a person has approved it.

    Args:
        x: any text, echoed back.
    """
    return tool_calls.gated(x)


client = AsyncOpenAI(base_url=model_base_url(), api_key=API_KEY, max_retries=0)
agent = Agent(
    OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=client)),
    name="bench",
    instructions=tool_calls.INSTRUCTIONS,
    tools=[Tool(noop), Tool(gated_noop, requires_approval=True)],
    output_type=[str, DeferredToolRequests],
    capabilities=[TemporalDurability()],
)


@workflow.defn(name="PydanticAIBenchRun")
class PydanticAIBenchRun(PydanticAIWorkflow):
    __pydantic_ai_agents__ = (agent,)

    def __init__(self) -> None:
        self._decisions: dict[str, Decision] = {}
        self._pending: list[str] = []

    @workflow.run
    async def run(self, prompt: str) -> str:
        result = await agent.run(prompt)
        while isinstance(result.output, DeferredToolRequests):
            self._pending = [call.tool_call_id for call in result.output.approvals]
            await workflow.wait_condition(self._all_decided)
            answers = DeferredToolResults(approvals={i: self._answer(self._decisions[i]) for i in self._pending})
            result = await agent.run(message_history=result.all_messages(), deferred_tool_results=answers)
        return result.output

    def _all_decided(self) -> bool:
        return all(i in self._decisions for i in self._pending)

    @staticmethod
    def _answer(decision: Decision) -> bool | ToolDenied:
        return True if decision.approved else ToolDenied(f"Rejected: {decision.reason}")

    @workflow.update
    def decide(self, decision: Decision) -> None:
        self._decisions[decision.call_id] = decision
