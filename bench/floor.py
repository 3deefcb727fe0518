"""The floor's activities and worker: `python -m bench.floor` (env as worker.py's).

The chat activity sends the same request through the same client as signoff's
(`OpenAIChatClient`, streamed), with the bench agent's instructions and tools fixed
worker-side; the tool activity calls the same tool functions. The worker uses
signoff's sandbox settings and data converter, so only the workflow differs.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from datetime import timedelta
from typing import cast

from pydantic import BaseModel
from temporalio import activity
from temporalio.worker import Worker

from bench.bench_agents import bench_agent, gated_noop, noop
from bench.tool_calls import INSTRUCTIONS
from signoff.chat.config import LLMConfig
from signoff.chat.openai import OpenAIChatClient
from signoff.messages import ChatMessage, ToolCall

SPECS = bench_agent().definition([]).specs
# `ApprovalRequiredTool.inner` is any Tool; the bench's is the function tool `_gated`, callable.
FUNCTIONS: dict[str, Callable[..., str]] = {"noop": noop, "gated_noop": cast("Callable[..., str]", gated_noop.inner)}
_client: OpenAIChatClient | None = None


class FloorInput(BaseModel):
    prompt: str
    max_rounds: int = 10


class FloorResult(BaseModel):
    text: str | None
    messages: list[ChatMessage]


class FloorChatInput(BaseModel):
    messages: list[ChatMessage]


@activity.defn(name="floor.chat")
async def chat(input: FloorChatInput) -> ChatMessage:
    global _client
    _client = _client or OpenAIChatClient(LLMConfig.from_env())
    response = await _client.complete([ChatMessage.system(INSTRUCTIONS), *input.messages], SPECS)
    return response.message


@activity.defn(name="floor.tool")
async def tool(call: ToolCall) -> str:
    return FUNCTIONS[call.name](**json.loads(call.arguments))


async def serve() -> None:
    from bench.floor_workflow import FloorRun
    from bench.serving import run_until_stopped
    from signoff.runtime.worker import connect_address, sandbox_runner

    client = await connect_address(os.environ["TEMPORAL_ADDRESS"])
    worker = Worker(
        client,
        task_queue=os.environ["SIGNOFF_TASK_QUEUE"],
        workflows=[FloorRun],
        activities=[chat, tool],
        workflow_runner=sandbox_runner(),
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=1),
        graceful_shutdown_timeout=timedelta(seconds=10),
    )
    await run_until_stopped("floor", worker)


if __name__ == "__main__":
    asyncio.run(serve())
