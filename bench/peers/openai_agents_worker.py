"""The OpenAI Agents peer's worker: `python -m bench.peers.openai_agents_worker` (env as worker.py's).

As Temporal's integration documents it: a client with `OpenAIAgentsPlugin` (its payload
converter, the model activity, its sandbox pass-through of openai, agents, mcp) and a
`Worker` with the workflow and the tool activities. The plugin's model provider is the Agents
SDK's `OpenAIProvider` on the scripted server with the Chat Completions API
(`use_responses=False`: the scripted model speaks Chat Completions, as signoff's provider
does), its client's own retries off (Temporal retries the activity). Tracing is off: its
exporter would send every trace to OpenAI's API. As for the Pydantic AI peer, the sandbox
passes the bench's own modules through.
"""

from __future__ import annotations

import asyncio
import os

from agents import set_tracing_disabled
from agents.models.openai_provider import OpenAIProvider
from openai import AsyncOpenAI
from temporalio.client import Client
from temporalio.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from bench.peers.openai_agents_run import OpenAIAgentsBenchRun, gated_noop, noop
from bench.peers.shared import ACTIVITY_TIMEOUT, API_KEY, model_base_url, worker_options
from bench.serving import run_until_stopped


def plugin() -> OpenAIAgentsPlugin:
    client = AsyncOpenAI(base_url=model_base_url(), api_key=API_KEY, max_retries=0)
    return OpenAIAgentsPlugin(
        model_params=ModelActivityParameters(start_to_close_timeout=ACTIVITY_TIMEOUT),
        model_provider=OpenAIProvider(openai_client=client, use_responses=False),
    )


async def main() -> None:
    set_tracing_disabled(True)
    client = await Client.connect(os.environ["TEMPORAL_ADDRESS"], plugins=[plugin()])
    runner = SandboxedWorkflowRunner(restrictions=SandboxRestrictions.default.with_passthrough_modules("bench"))
    worker = Worker(
        client,
        workflows=[OpenAIAgentsBenchRun],
        activities=[noop, gated_noop],
        workflow_runner=runner,
        **worker_options(),
    )
    await run_until_stopped("openai_agents", worker)


if __name__ == "__main__":
    asyncio.run(main())
