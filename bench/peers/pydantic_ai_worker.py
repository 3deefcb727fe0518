"""The Pydantic AI peer's worker: `python -m bench.peers.pydantic_ai_worker` (env as worker.py's).

As the docs show it: a client with `PydanticAIPlugin` (Pydantic's payload converter, the
agent's activities registered, its sandbox pass-through of pydantic_ai, openai, httpx...), a
`Worker` with the workflow. One addition the docs leave to the user, as signoff does for its
own code: the sandbox passes the bench's modules through (the workflow module and what it
imports), instead of importing them again for every run.
"""

from __future__ import annotations

import asyncio
import os

from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from bench.peers.pydantic_ai_run import PydanticAIBenchRun
from bench.peers.shared import worker_options
from bench.serving import run_until_stopped


async def main() -> None:
    client = await Client.connect(os.environ["TEMPORAL_ADDRESS"], plugins=[PydanticAIPlugin()])
    runner = SandboxedWorkflowRunner(restrictions=SandboxRestrictions.default.with_passthrough_modules("bench"))
    worker = Worker(client, workflows=[PydanticAIBenchRun], workflow_runner=runner, **worker_options())
    await run_until_stopped("pydantic_ai", worker)


if __name__ == "__main__":
    asyncio.run(main())
