"""The signoff worker: `python worker.py [--agents myapp.agents ...]`.

Configured by the environment (CONTRACT.md); how it connects (TLS, mTLS, API key,
`temporal.toml` profiles, the payload store) is `runtime/connection.py`. With nothing
configured and nothing listening on localhost:7233 it starts the embedded dev server.
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

from signoff.activities import ActivitySettings, AgentActivities
from signoff.activities.identify import Verifier
from signoff.activities.notify import NotifyConfig
from signoff.agent.builder import ChatClientAgent
from signoff.agent.defaults import default_agent
from signoff.approval.policy import PolicyBook
from signoff.chat.base import ChatClient
from signoff.chat.config import ENV_BASE_URL, ENV_MODEL, LLMConfig
from signoff.chat.openai import OpenAIChatClient
from signoff.contract import DEFAULT_TASK_QUEUE
from signoff.errors import SignoffError, UsageError
from signoff.loop.limits import DEFAULT_PAYLOAD_BUDGET, Limits
from signoff.runtime.connection import (
    DEFAULT_NAMESPACE,
    ConnectionSettings,
    ensure_search_attributes,
    open_client,
)
from signoff.runtime.connection import connect as connect_with
from signoff.runtime.deployment import DeploymentSettings, routing_note
from signoff.runtime.guard import worker_client
from signoff.runtime.hardening import harden_process
from signoff.runtime.setup import WorkerSetup
from signoff.runtime.storage import close_storage
from signoff.runtime.telemetry import PendingGauge, flush_traces
from signoff.runtime.tokens import SignedDecisionCheck
from signoff.workflows.agent_run import AgentRun

AGENTS_ENV = "SIGNOFF_AGENTS"
__all__ = [  # connecting lives in runtime/connection.py; these names stay importable from here
    "ConnectionSettings",
    "WorkerSettings",
    "build_worker",
    "connect",
    "ensure_search_attributes",
    "load_agents",
    "main",
    "open_client",
    "sandbox_runner",
    "serve",
]


# The worker's settings are the connection settings (address, TLS, task queue, store).
WorkerSettings = ConnectionSettings


def load_agents(modules: Iterable[str] = (), include_default: bool = True) -> dict[str, ChatClientAgent]:
    """The agents to serve: `default` plus those of each module named.

    A module offers agents as `agents()` (a function returning them) or `AGENTS`
    (a list or a dict); either may hold `ChatClientAgent`s built with `AgentBuilder`.
    Modules are found on the path, then in the current directory (as `python -m` would),
    which comes last so that nothing there shadows an installed module.

    Raises:
        UsageError: a module cannot be found, or offers no agents.
    """
    found: dict[str, ChatClientAgent] = {"default": default_agent()} if include_default else {}
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
    return found


def default_chat_client() -> ChatClient:
    """The provider of `SIGNOFF_LLM_*`; ConfigError names the variable that is missing."""
    return OpenAIChatClient(LLMConfig.from_env())


NO_MODEL = (
    f"no model configured ({ENV_BASE_URL} is not set): runs of {{agents}} will fail at their first model turn. "
    "Set SIGNOFF_LLM_BASE_URL and SIGNOFF_LLM_MODEL (and SIGNOFF_LLM_API_KEY) for a provider; or, to try signoff "
    "without one, serve the scripted model in another terminal: `python -m signoff.testing --port 8400`, then "
    f"start the worker with {ENV_BASE_URL}=http://127.0.0.1:8400/v1 {ENV_MODEL}=scripted"
)


def model_check(agents: Mapping[str, ChatClientAgent], environ: Mapping[str, str] | None = None) -> str | None:
    """A warning when agents need the worker's model and none is configured; None when all is well.

    Raises:
        ConfigError: a model is configured but cannot work (a missing model name, a key set twice).
    """
    env = os.environ if environ is None else environ
    needing = sorted(name for name, agent in agents.items() if agent.chat_client is None)
    if not needing:
        return None
    if env.get(ENV_BASE_URL, "").strip():
        LLMConfig.from_env(env)  # fails now, naming the variable, not at the first model turn
        return None
    return NO_MODEL.format(agents=", ".join(needing))


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


FROM_CLIENT = _FromClient.FROM_CLIENT
"""`build_worker`'s default payload budget: none if the client has a payload store, else the limit."""


def build_worker(
    client: Client,
    agents: Mapping[str, ChatClientAgent],
    task_queue: str = DEFAULT_TASK_QUEUE,
    default_client: Callable[[], ChatClient] | None = default_chat_client,
    *,
    limits: Limits | None = None,
    policies: PolicyBook | None = None,
    payload_budget: int | _FromClient | None = FROM_CLIENT,
    verifier: Verifier | None = None,
    notify: NotifyConfig | None = None,
    state_key: bytes | None = None,
    deployment: DeploymentSettings | None = None,
    **options: Any,
) -> Worker:
    """A worker for `AgentRun` and its activities, serving `agents` (by name).

    Args:
        limits: the limits runs snapshot (default: the contract's).
        policies: approval policies by tool name (`SIGNOFF_POLICY_FILE`).
        payload_budget: the largest payload a run may write (None: no limit). By default
            none when the client's data converter has an external store for large
            payloads, else Temporal's limit less a margin.
        verifier: checks approvers' tokens (`SIGNOFF_APPROVER_KEYS`).
        notify: where runs send notices (`SIGNOFF_NOTIFY_URLS`); None sends none.
        state_key: seals the state runs carry across continue-as-new (`SIGNOFF_STATE_KEY_FILE`;
            every worker of the task queue needs the same one). None: nothing is sealed, and a
            continued run is adopted only if the server says it continues an `AgentRun` of
            this task queue.
        deployment: this worker's Worker Deployment version (`SIGNOFF_DEPLOYMENT_NAME`,
            `SIGNOFF_BUILD_ID`): versioning on, `AgentRun` pinned. None: unversioned.
        **options: passed to `temporalio.worker.Worker`.
    """
    if payload_budget is FROM_CLIENT:
        payload_budget = None if client.data_converter.external_storage is not None else DEFAULT_PAYLOAD_BUDGET
    client = worker_client(client)  # a payload it cannot resolve never fails a workflow task (runtime/guard.py)
    settings = ActivitySettings(
        limits or Limits(), policies or PolicyBook(), payload_budget, verifier, notify, state_key
    )
    activities = AgentActivities(agents, default_client, settings)
    options.setdefault("sticky_queue_schedule_to_start_timeout", timedelta(seconds=1))
    options["interceptors"] = [SignedDecisionCheck(verifier), *options.get("interceptors", ())]
    options["plugins"] = [*options.get("plugins", ()), activities.plugin()]  # MCP sessions close with the worker
    if deployment is not None:
        options["deployment_config"] = deployment.worker_config()
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[AgentRun],
        activities=activities.all,
        workflow_runner=sandbox_runner(),
        **options,
    )


async def connect(address: str, namespace: str = DEFAULT_NAMESPACE) -> Client:
    """A client for `address` with this process's other settings (TLS, payload store...)."""
    return await connect_with(ConnectionSettings.load(address=address, namespace=namespace))


async def serve(agent_modules: Sequence[str] = (), settings: WorkerSettings | None = None) -> None:
    """Run a worker until SIGINT/SIGTERM, then shut down gracefully."""
    harden_process()  # before anything reads a secret: tools must not read our memory
    settings = settings or ConnectionSettings.load()
    agents = load_agents(agent_modules)
    setup = WorkerSetup.from_env(agents, local=not settings.configured)  # what cannot work stops the worker here
    no_model = model_check(agents)
    runtime = settings.telemetry.runtime()  # binds SIGNOFF_METRICS_ADDRESS now, or says why it cannot
    client, server = await open_client(settings, runtime=runtime, worker=True)
    pending: asyncio.Task[None] | None = None
    try:
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
        notify = NotifyConfig.from_env(settings.address, settings.namespace, server.ui_url if server else None)
        worker = build_worker(
            client,
            agents,
            settings.task_queue,
            graceful_shutdown_timeout=timedelta(seconds=10),
            notify=notify,
            **setup.worker_options(),
        )
        if runtime is not None:
            pending = asyncio.create_task(PendingGauge(client, runtime.metric_meter, settings.task_queue).run())
        lines = setup.describe(agents) + ([notify.describe()] if notify else []) + _observability(settings)
        for line in lines + ([no_model] if no_model else []):
            print(f"signoff: {line}", flush=True)
        if setup.deployment is not None:
            print(f"signoff: {await routing_note(client, setup.deployment)}", flush=True)
        print(
            f"signoff: worker on task queue {settings.task_queue!r} at {settings.describe()}, "
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


def _observability(settings: WorkerSettings) -> list[str]:
    """Start-up log lines for metrics, traces and payload encryption (never a key)."""
    codec = [settings.codec_keys.describe()] if settings.codec_keys else ["payload encryption: off"]
    return settings.telemetry.describe() + codec


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Run a signoff worker.")
    parser.add_argument(
        "--agents",
        action="append",
        default=[],
        help=f"module offering agents() or AGENTS (repeatable; env {AGENTS_ENV}, comma-separated)",
    )
    args = parser.parse_args(argv)
    modules = args.agents + [m.strip() for m in os.environ.get(AGENTS_ENV, "").split(",") if m.strip()]
    code = 0
    try:
        asyncio.run(serve(modules))
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
