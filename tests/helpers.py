"""Helpers for the Temporal tests: an agent-run harness, runs, and waiting for their pauses."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowHandle

from signoff.activities.auto import AutoSettings
from signoff.activities.notify import NotifyConfig
from signoff.agent.builder import ChatClientAgent
from signoff.agent.defaults import default_agent
from signoff.approval.identity import Verifier
from signoff.approval.policy import PolicyBook
from signoff.chat.config import LLMConfig
from signoff.chat.openai import OpenAIChatClient
from signoff.config.environment import Environment
from signoff.contract import AgentRunInput, AgentRunResult, RunOptions
from signoff.loop.limits import Limits
from signoff.messages import ToolCall
from signoff.runtime.connection import ConnectionSettings
from signoff.runtime.deployment import DeploymentSettings
from signoff.runtime.settings import WorkerSettings
from signoff.runtime.worker import build_worker
from signoff.testing import Reply, ScriptedModelServer, ScriptedRequest
from signoff.tools.files.scope import ScopePolicy, WorkspaceScope
from tests.waiting import assert_eventually


def call(name: str, call_id: str | None = None, **arguments: Any) -> ToolCall:
    return ToolCall(id=call_id or f"call_{name}", name=name, arguments=json.dumps(arguments))


def agents_for(
    workspace: Path, policy: ScopePolicy = ScopePolicy.APPROVE_OUTSIDE, extra: Sequence[ChatClientAgent] = ()
) -> dict[str, ChatClientAgent]:
    agents = {"default": default_agent(WorkspaceScope(workspace, policy))}
    agents.update({a.name: a for a in extra})
    return agents


def worker_settings(agents: dict[str, ChatClientAgent], env: dict[str, str], *, local: bool = False) -> WorkerSettings:
    """The settings `env` gives a worker of `agents`, checked; `local`: of the embedded or a local
    dev server (no Temporal address, TLS or API key configured)."""
    return WorkerSettings.load(Environment(env), agents, ConnectionSettings(configured=not local))


@asynccontextmanager
async def running_worker(
    client: Client,
    task_queue: str,
    model: ScriptedModelServer,
    agents: dict[str, ChatClientAgent],
    *,
    limits: Limits | None = None,
    policies: PolicyBook | None = None,
    verifier: Verifier | None = None,
    notify: NotifyConfig | None = None,
    state_key: bytes | None = None,
    deployment: DeploymentSettings | None = None,
    auto: AutoSettings | None = None,
    **options: Any,
) -> AsyncIterator[None]:
    """A worker with the scripted model, these of its settings (the rest: none set) and these
    options of `temporalio.worker.Worker`."""
    settings = WorkerSettings(
        limits=limits or Limits(),
        policies=policies or PolicyBook(),
        verifier=verifier,
        notify=notify,
        state_key=state_key,
        deployment=deployment,
        auto=auto,
    )
    config = LLMConfig(base_url=model.base_url, model="scripted")
    worker = build_worker(
        client, agents, task_queue, default_client=lambda: OpenAIChatClient(config), settings=settings, **options
    )
    async with worker:
        yield


async def start_run(client: Client, task_queue: str, prompt: str | None = "go", **kwargs: Any) -> WorkflowHandle:
    """Start an AgentRun (`id`: its workflow id, default a fresh one; `search_attributes`: given
    at the start, as signoff's own clients give `SignoffAgent`; the rest: its input). Without
    them it starts as a plain Temporal client would, and the run upserts `SignoffAgent` itself."""
    options = kwargs.pop("options", None) or RunOptions()
    workflow_id = kwargs.pop("id", None) or f"run-{uuid.uuid4()}"
    attributes = kwargs.pop("search_attributes", None)
    run_input = AgentRunInput(prompt=prompt, options=options, **kwargs)
    return await client.start_workflow(
        "AgentRun",
        run_input,
        id=workflow_id,
        task_queue=task_queue,
        result_type=AgentRunResult,
        search_attributes=attributes,
    )


async def result_unless(handle: WorkflowHandle, ran_again: Callable[[], str | None]) -> AgentRunResult:
    """The run's result; fails at once, not at a timeout, when `ran_again()` says something ran twice."""
    result_task = asyncio.ensure_future(handle.result())
    while not result_task.done():
        why = ran_again()
        if why is not None:
            result_task.cancel()
            pytest.fail(why)
        await asyncio.wait({result_task}, timeout=0.1)
    result: AgentRunResult = result_task.result()
    return result


async def wait_pending(handle: WorkflowHandle, count: int = 1, timeout: float = 10.0) -> list[dict[str, Any]]:
    async def check() -> list[dict[str, Any]]:
        pending = await handle.query("pending_approvals")
        assert len(pending) == count, pending
        return pending

    return await assert_eventually(check, timeout)


__all__ = ["Reply", "ScriptedModelServer", "ScriptedRequest", "assert_eventually"]


async def task_failures(handle: WorkflowHandle) -> list[str]:
    """The messages of the run's WorkflowTaskFailed events (a wedged run has them, retried forever)."""
    return [
        event.workflow_task_failed_event_attributes.failure.message
        async for event in handle.fetch_history_events()
        if event.HasField("workflow_task_failed_event_attributes")
    ]
