"""The signoff worker: `python worker.py [--agents myapp.agents ...]`.

Configured by the environment (CONTRACT.md), read once at start into one `WorkerSettings`
(`signoff/runtime/settings.py`; each variable is `signoff/config/environment.py`'s); how it
connects (TLS, mTLS, API key, `temporal.toml` profiles, the payload store) is
`runtime/connection.py`. With nothing configured and nothing listening on localhost:7233 it
starts the embedded dev server.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import signal
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import timedelta
from enum import Enum
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import (
    SandboxedWorkflowRunner,
    SandboxRestrictions,
)

from signoff.activities import AgentActivities
from signoff.activities.agents import with_sub_agents
from signoff.agent.builder import ChatClientAgent
from signoff.agent.defaults import default_agent
from signoff.chat.base import ChatClient
from signoff.chat.config import LLMConfig
from signoff.chat.openai import OpenAIChatClient
from signoff.config.environment import AGENTS_ENV, Environment
from signoff.contract import DEFAULT_TASK_QUEUE
from signoff.errors import SignoffError, UsageError
from signoff.loop.limits import DEFAULT_PAYLOAD_BUDGET
from signoff.runtime.connection import (
    DEFAULT_NAMESPACE,
    ConnectionSettings,
    ensure_search_attributes,
    open_client,
)
from signoff.runtime.connection import connect as connect_with
from signoff.runtime.deployment import routing_note
from signoff.runtime.guard import worker_client
from signoff.runtime.hardening import harden_process
from signoff.runtime.settings import WorkerSettings
from signoff.runtime.storage import close_storage
from signoff.runtime.telemetry import PendingGauge, flush_traces
from signoff.runtime.tokens import SignedDecisionCheck
from signoff.tools.files.scope import WorkspaceScope
from signoff.tools.mcp import MCPServer
from signoff.workflows.agent_run import AgentRun

__all__ = [  # connecting lives in runtime/connection.py; these names stay importable from here
    "ConnectionSettings",
    "build_worker",
    "connect_address",
    "ensure_search_attributes",
    "load_agents",
    "main",
    "open_client",
    "sandbox_runner",
    "serve",
]


def load_agents(
    modules: Iterable[str] = (), include_default: bool = True, env: Environment | None = None
) -> dict[str, ChatClientAgent]:
    """The agents to serve: `default` (its workspace and MCP servers from `env`, the process's
    environment when None) plus those of each module named.

    A module offers agents as `agents()` (a function returning them) or `AGENTS`
    (a list or a dict); either may hold `ChatClientAgent`s built with `AgentBuilder`.
    Modules are found on the path, then in the current directory (as `python -m` would),
    which comes last so that nothing there shadows an installed module.

    Raises:
        UsageError: a module cannot be found, or offers no agents.
        ConfigError: a sub-agent has the name of another agent served.
    """
    found: dict[str, ChatClientAgent] = {}
    if include_default:
        found["default"] = default_agent(WorkspaceScope.from_env(env), mcp_servers=MCPServer.from_env(env))
    if modules and os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
    for name in modules:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is None or not (name == exc.name or name.startswith(exc.name + ".")):
                raise  # the module exists, and something it imports does not: its traceback says what
            raise UsageError(
                f"cannot import agents module {name!r}: no module named {exc.name!r} here "
                f"({os.getcwd()}) or on PYTHONPATH"
            ) from None
        offered: Any = module.agents() if callable(getattr(module, "agents", None)) else getattr(module, "AGENTS", None)
        if offered is None:
            raise UsageError(f"module {name!r} defines neither agents() nor AGENTS")
        for agent in offered.values() if isinstance(offered, Mapping) else offered:
            found[agent.name] = agent
    return with_sub_agents(found)  # a built sub-agent is served under its own name


def _default_chat_client() -> ChatClient:
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
    passthrough = ("signoff", "pydantic", "pydantic_core", "annotated_types", "httpx", "httpx_sse")
    return SandboxedWorkflowRunner(restrictions=SandboxRestrictions.default.with_passthrough_modules(*passthrough))


class _FromClient(Enum):
    FROM_CLIENT = "from the client"


_FROM_CLIENT = _FromClient.FROM_CLIENT
"""`build_worker`'s default payload budget: none if the client has a payload store, else the limit."""


def build_worker(
    client: Client,
    agents: Mapping[str, ChatClientAgent],
    task_queue: str = DEFAULT_TASK_QUEUE,
    default_client: Callable[[], ChatClient] | None = _default_chat_client,
    *,
    settings: WorkerSettings | None = None,
    payload_budget: int | _FromClient | None = _FROM_CLIENT,
    **options: Any,
) -> Worker:
    """A worker for `AgentRun` and its activities, serving `agents` (by name).

    Args:
        settings: the worker's (`WorkerSettings`: limits, policies, approver keys, state key,
            notification channels, deployment version, workflow cache); default: none set,
            the contract's limits.
        payload_budget: the largest payload a run may write (None: no limit). By default
            none when the client's data converter has an external store for large
            payloads, else Temporal's limit less a margin.
        **options: passed to `temporalio.worker.Worker` (they win over `settings`).
    """
    settings = settings or WorkerSettings()
    if payload_budget is _FROM_CLIENT:
        payload_budget = None if client.data_converter.external_storage is not None else DEFAULT_PAYLOAD_BUDGET
    client = worker_client(client)  # a payload it cannot resolve never fails a workflow task (runtime/guard.py)
    activities = AgentActivities(agents, default_client, settings=settings, payload_budget=payload_budget)
    options.setdefault("sticky_queue_schedule_to_start_timeout", timedelta(seconds=1))
    if settings.max_cached_workflows is not None:
        options.setdefault("max_cached_workflows", settings.max_cached_workflows)
    options["interceptors"] = [SignedDecisionCheck(settings.verifier), *options.get("interceptors", ())]
    options["plugins"] = [*options.get("plugins", ()), activities.plugin()]  # MCP sessions close with the worker
    if settings.deployment is not None:
        options["deployment_config"] = settings.deployment.worker_config()
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[AgentRun],
        activities=activities.all,
        workflow_runner=sandbox_runner(),
        **options,
    )


async def connect_address(address: str, namespace: str = DEFAULT_NAMESPACE) -> Client:
    """A client for `address` with this process's other settings (TLS, payload store...)."""
    return await connect_with(ConnectionSettings.load(address=address, namespace=namespace))


async def serve(agent_modules: Sequence[str] = (), env: Environment | None = None) -> None:
    """Run a worker until SIGINT/SIGTERM, then shut down gracefully.

    Args:
        agent_modules: modules offering agents besides `default` (`--agents`, `SIGNOFF_AGENTS`).
        env: the environment it is configured by; the process's when None.
    """
    harden_process()  # before anything reads a secret: tools must not read our memory
    env = env or Environment()
    connection = ConnectionSettings.load(env)
    agents = load_agents(agent_modules, env=env)
    settings = WorkerSettings.load(env, agents, connection)  # what cannot work stops the worker here
    runtime = connection.telemetry.runtime()  # binds SIGNOFF_METRICS_ADDRESS now, or says why it cannot
    client, server = await open_client(connection, runtime=runtime, worker=True)
    pending: asyncio.Task[None] | None = None
    try:
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
        worker = build_worker(
            client, agents, connection.task_queue, settings=settings, graceful_shutdown_timeout=timedelta(seconds=10)
        )
        if runtime is not None:
            pending = asyncio.create_task(PendingGauge(client, runtime.metric_meter, connection.task_queue).run())
        for line in settings.describe(agents):
            print(f"signoff: {line}", flush=True)
        if settings.deployment is not None:
            print(f"signoff: {await routing_note(client, settings.deployment)}", flush=True)
        print(
            f"signoff: worker on task queue {connection.task_queue!r} at {connection.describe()}, "
            f"agents: {', '.join(sorted(agents))}",
            flush=True,
        )
        async with worker:
            await stop.wait()
            print("signoff: shutting down", flush=True)
    finally:
        if pending is not None:
            pending.cancel()
        flush_traces()
        await close_storage(client.data_converter)
        if server:
            server.stop()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Run a signoff worker.")
    parser.add_argument(
        "--agents",
        action="append",
        default=[],
        help=f"module offering agents() or AGENTS (repeatable; env {AGENTS_ENV}, comma-separated)",
    )
    args = parser.parse_args(argv)
    env = Environment()
    code = 0
    try:
        asyncio.run(serve([*args.agents, *env.read(AGENTS_ENV)], env))
    except SignoffError as exc:  # settings that cannot work, or Temporal not reachable: say so, no traceback
        print(f"signoff: {exc}", file=sys.stderr)
        code = 1
    # The SDK's runtime threads can abort the interpreter at exit (exit code 134);
    # everything is shut down by now, so leave without running the finalizers.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
