"""A worker's settings, in one object: read from the environment once, when the worker starts.

`WorkerSettings.load` reads everything a worker is configured with (each variable through
`signoff.config.environment`) and checks it against the agents it serves, so a configuration
that cannot work stops the worker with a message instead of failing runs later: a policy
file that does not parse, a limit out of range, a policy file entry that would relax a
policy a tool's code declares, policies that need verified approvers or requesters while the
worker has no keys to verify them with (the message names each agent and tool), a state key
that cannot be read, a model configured but unusable, or an MCP server whose command is not
found (`SIGNOFF_MCP_CONFIG` itself is read with the agents). A policy file entry that changes
nothing (a tool that never asks for approval, without `always`) is named in the start-up log.

The worker (`signoff.runtime.worker`: `serve`, `build_worker`) and its activities
(`signoff.activities`) read from it; the CLI loads its `connection` part alone
(`ConnectionSettings.load`), so it reaches the runs as the workers do (the same namespace,
payload store and codec keys) without needing what only a worker needs.

It lives with the worker, in `runtime/`: its parts are the Temporal side's own types (the
connection, the Worker Deployment version, the notification channels), so the core never
imports it (the variables themselves are `config/environment.py`'s, core).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path

from pydantic import ValidationError

from signoff.activities.auto import AutoSettings
from signoff.activities.notify import NotifyConfig
from signoff.activities.state import local_state_key, read_state_key
from signoff.agent.builder import ChatClientAgent
from signoff.agent.snapshot import NotifyPlan, SnapshotTool
from signoff.approval.identity import ApproverKeys, Verifier
from signoff.approval.policy import DEFAULT_KEY, PolicyBook
from signoff.approval.spent import DEFAULT_MAX_AGE as DEFAULT_SIGNATURE_MAX_AGE
from signoff.approval.spent import RECORD_TYPE
from signoff.chat.config import LLMConfig
from signoff.config.environment import (
    APPROVER_AUDIENCE_ENV,
    APPROVER_ISSUER_ENV,
    APPROVER_KEY_FILE_ENV,
    APPROVER_KEYS_ENV,
    AUTO_MODEL_ENV,
    AUTO_SIGNING_KEY_FILE_ENV,
    AUTO_SIGNING_KID_ENV,
    DATA_DIR,
    LLM_BASE_URL_ENV,
    LLM_MODEL_ENV,
    LOCAL_STATE_KEY,
    MAX_CACHED_WORKFLOWS_ENV,
    MAX_CALLS_PER_TURN_ENV,
    MAX_TOOL_OUTPUT_ENV,
    POLICY_FILE_ENV,
    SIGNATURE_MAX_AGE_ENV,
    STATE_KEY_FILE_ENV,
    TRANSCRIPT_BUDGET_ENV,
    Environment,
    key_file,
)
from signoff.errors import ConfigError
from signoff.loop.limits import Limits
from signoff.runtime.connection import ConnectionSettings
from signoff.runtime.deployment import DeploymentSettings
from signoff.runtime.filestore import make_private_dir
from signoff.signing.keys import SigningKey
from signoff.tools.base import Tool, capabilities_of
from signoff.tools.mcp import MCPServer
from signoff.tools.mcp.listing import PREFIX

NO_MODEL = (
    f"no model configured ({LLM_BASE_URL_ENV} is not set): runs of {{agents}} will fail at their first model turn. "
    "Set SIGNOFF_LLM_BASE_URL and SIGNOFF_LLM_MODEL (and SIGNOFF_LLM_API_KEY) for a provider; or, to try signoff "
    "without one, serve the scripted model in another terminal: `python -m signoff.testing --port 8400`, then "
    f"start the worker with {LLM_BASE_URL_ENV}=http://127.0.0.1:8400/v1 {LLM_MODEL_ENV}=scripted"
)

_LIMITS: dict[str, str] = {
    "max_tool_output": MAX_TOOL_OUTPUT_ENV,
    "max_calls_per_turn": MAX_CALLS_PER_TURN_ENV,
    "transcript_budget": TRANSCRIPT_BUDGET_ENV,
}


def read_limits(env: Environment) -> Limits:
    """`SIGNOFF_MAX_TOOL_OUTPUT`, `SIGNOFF_MAX_CALLS_PER_TURN`, `SIGNOFF_TRANSCRIPT_BUDGET`
    (whole numbers, `_` and `,` allowed); the contract's defaults for the rest.

    Raises:
        ConfigError: a value is not a whole number in its allowed range (named).
    """
    given = {}
    for field_name, name in _LIMITS.items():
        raw = (env.get(name) or "").strip()
        if raw:
            try:
                given[field_name] = int(raw.replace("_", "").replace(",", ""))
            except ValueError:
                raise ConfigError(f"{name}={raw!r} is not a whole number") from None
    try:
        return Limits(**given)
    except ValidationError as exc:
        error = exc.errors()[0]
        name = _LIMITS.get(str(error["loc"][0]), str(error["loc"][0]))
        raise ConfigError(f"{name}: {error['msg']}") from None


def read_policies(env: Environment) -> PolicyBook:
    """The book of the file `SIGNOFF_POLICY_FILE` names (TOML or JSON), or an empty one.

    Raises:
        ConfigError: the file cannot be read, or an entry is invalid (named).
    """
    path = env.get(POLICY_FILE_ENV)
    return PolicyBook.load(path) if path else PolicyBook()


def read_approver_keys(env: Environment) -> ApproverKeys | None:
    """The keys of the file `SIGNOFF_APPROVER_KEYS` names, with `SIGNOFF_APPROVER_ISSUER`
    and `SIGNOFF_APPROVER_AUDIENCE`; None when no file is set.

    Raises:
        ConfigError: issuer or audience without the file, or a file that cannot work.
    """
    path = env.read(APPROVER_KEYS_ENV)
    issuer, audience = env.read(APPROVER_ISSUER_ENV), env.read(APPROVER_AUDIENCE_ENV)
    if not path:
        if issuer or audience:
            raise ConfigError(
                f"{APPROVER_ISSUER_ENV}/{APPROVER_AUDIENCE_ENV} are set but {APPROVER_KEYS_ENV} is not: "
                "name the key file"
            )
        return None
    return ApproverKeys.load(path, issuer, audience)


@dataclass(frozen=True)
class WorkerSettings:
    """Everything a worker is configured with; `load` reads and checks it.

    Attributes:
        connection: how it reaches Temporal: address, namespace, TLS, task queue, payload
            store, codec keys, telemetry (`TEMPORAL_*`, `SIGNOFF_TASK_QUEUE`, ...).
        limits: the limits runs snapshot (`SIGNOFF_MAX_*`, `SIGNOFF_TRANSCRIPT_BUDGET`).
        policies: approval policies by tool name (`SIGNOFF_POLICY_FILE`).
        verifier: checks approvers' and requesters' tokens (`SIGNOFF_APPROVER_KEYS`).
        state_key: seals the state runs carry across continue-as-new (`SIGNOFF_STATE_KEY_FILE`;
            every worker of the task queue needs the same one). None: nothing is sealed, and a
            continued run is adopted only if the server says it continues an `AgentRun` of
            this task queue.
        state_key_from: where the state key came from, for the start-up log.
        notify: where runs send notices (`SIGNOFF_NOTIFY_URLS`); None sends none.
        deployment: this worker's Worker Deployment version (`SIGNOFF_DEPLOYMENT_NAME`,
            `SIGNOFF_BUILD_ID`): versioning on, `AgentRun` pinned. None: unversioned.
        max_cached_workflows: runs kept in memory between their workflow tasks
            (`SIGNOFF_MAX_CACHED_WORKFLOWS`; None: the SDK's 1,000); the others replay their
            history when their next task comes (a decision, a timer).
        notes: what the start-up log adds about the checked policies (never a secret).
        model_note: the start-up log's warning that agents need the worker's model and none
            is configured (`SIGNOFF_LLM_*`); None when all is well.
        signature_max_age: how long after it was signed a signed approval is honoured by the
            tool activity (`SIGNOFF_SIGNATURE_MAX_AGE`; at most the namespace's retention less
            an hour, `signoff.approval.spent`).
        auto: auto mode's evaluator model and signing key (`SIGNOFF_AUTO_MODEL`,
            `SIGNOFF_AUTO_SIGNING_KEY_FILE`); None: the agent's model, no signing key.
    """

    connection: ConnectionSettings = field(default_factory=ConnectionSettings)
    limits: Limits = field(default_factory=Limits)
    policies: PolicyBook = field(default_factory=PolicyBook)
    verifier: Verifier | None = None
    state_key: bytes | None = field(default=None, repr=False)
    state_key_from: str = ""
    notify: NotifyConfig | None = None
    deployment: DeploymentSettings | None = None
    max_cached_workflows: int | None = None
    notes: tuple[str, ...] = ()
    model_note: str | None = None
    signature_max_age: timedelta = DEFAULT_SIGNATURE_MAX_AGE
    auto: AutoSettings | None = None

    @classmethod
    def load(
        cls, env: Environment, agents: Mapping[str, ChatClientAgent], connection: ConnectionSettings
    ) -> WorkerSettings:
        """The settings `env` gives a worker of `agents` reaching Temporal by `connection`,
        checked (`check`).

        Without `SIGNOFF_STATE_KEY_FILE`, a worker whose connection is not configured (the
        embedded or a local dev server) seals with `.signoff/state.key`, made if missing.

        Raises:
            ConfigError: a setting cannot work, a policy file entry would relax a tool's
                own policy, policies need keys the worker lacks, or a model is configured
                but cannot work (a missing model name, a key set twice).
        """
        path = env.read(STATE_KEY_FILE_ENV)
        if path:
            state_key, source = read_state_key(path), path
        elif not connection.configured:
            make_private_dir(Path.cwd() / DATA_DIR)
            state_key, source = local_state_key(Path.cwd() / LOCAL_STATE_KEY), str(LOCAL_STATE_KEY)
        else:
            state_key, source = None, ""
        settings = cls(
            connection,
            read_limits(env),
            read_policies(env),
            read_approver_keys(env),
            state_key,
            source,
            # The embedded server's Web UI is the local default's (http://localhost:8233).
            notify=NotifyConfig.from_env(env, connection.address, connection.namespace),
            deployment=DeploymentSettings.from_env(env),
            max_cached_workflows=env.read(MAX_CACHED_WORKFLOWS_ENV),
            signature_max_age=env.read(SIGNATURE_MAX_AGE_ENV) or DEFAULT_SIGNATURE_MAX_AGE,
            auto=_auto_settings(env),
        )
        return replace(settings.check(agents), model_note=_model_note(agents, env))

    def check(self, agents: Mapping[str, ChatClientAgent]) -> WorkerSettings:
        """Refuse MCP servers that cannot start, policy file entries that relax a tool's own
        policy, and policies that need verified approvers or requesters when no keys are
        configured (MCP tools are listed only when runs start: their policies are found by
        the `mcp__<server>__` of the agent's servers); note entries that change nothing.
        Returns the settings with their notes."""
        for server in _servers(agents):
            server.check()
        relaxing, needing, idle = [], [], []
        for name, tool, entry in self._tools(agents):
            where = f"{name}/{tool.name}"
            relaxing += [f"{where} {why}" for why in self.policies.relaxations(tool.name, capabilities_of(tool).policy)]
            if entry.policy is not None and (entry.policy.verified or entry.policy.separate_requester):
                needing.append(where)
            if tool.name in self.policies.policies and entry.gate == "never" and capabilities_of(tool).gate == "never":
                idle.append(where)
        needing += [
            f"{name}/{tool}"
            for name, agent in sorted(agents.items())
            for tool, policy in sorted(self.policies.merged_over(agent.policies).policies.items())
            if (policy.verified or policy.separate_requester)
            and any(tool.startswith(f"{PREFIX}{s.name}__") for s in agent.mcp_servers)
        ]
        if relaxing:
            raise ConfigError(
                f"{POLICY_FILE_ENV} may add to a tool's own approval policy, never relax it: "
                + "; ".join(relaxing)
                + ". Remove those settings from the file (or change the tools' code)"
            )
        if needing and self.verifier is None:
            raise ConfigError(
                f"approval policies need verified approvers or requesters ({', '.join(needing)}) but the worker "
                f"has no keys to verify their tokens: set {APPROVER_KEYS_ENV} (an HS256 secret file, PEM public keys "
                f"or a JWKS file), or drop `verified`/`separate_requester` from those policies ({POLICY_FILE_ENV} or "
                "the tools' own)"
            )
        notes = tuple(
            f"policy for {where} has no effect: the tool never asks for approval; add always = true to gate every call"
            for where in idle
        )
        return replace(self, notes=notes)

    def _tools(self, agents: Mapping[str, ChatClientAgent]) -> Iterator[tuple[str, Tool, SnapshotTool]]:
        for name, agent in sorted(agents.items()):
            definition = agent.definition([])
            snapshot = definition.snapshot(name, self.limits, self.policies.merged_over(agent.policies))
            for tool, entry in zip(definition.registry, snapshot.tools, strict=True):
                yield name, tool, entry

    @property
    def notify_plan(self) -> NotifyPlan | None:
        """What a run records of the notification channels (None: it sends none)."""
        return self.notify.plan if self.notify else None

    def describe(self, agents: Mapping[str, ChatClientAgent] | None = None) -> list[str]:
        """Lines for the worker's start-up log (never a secret)."""
        lines = [self.verifier.describe() if self.verifier else "approver tokens: not configured"]
        if self.verifier is not None:
            hours = self.signature_max_age.total_seconds() / 3600
            lines.append(
                f"signed approvals: each spent once, in the server's records (workflow type {RECORD_TYPE}), "
                f"honoured up to {hours:g} h after signing ({SIGNATURE_MAX_AGE_ENV}; at most the namespace's retention)"
            )
        lines.append(self.deployment.describe() if self.deployment else "worker deployment: none (unversioned)")
        if self.max_cached_workflows is not None:
            lines.append(
                f"workflow cache: {self.max_cached_workflows:,} runs in memory ({MAX_CACHED_WORKFLOWS_ENV}); "
                "the others replay when woken"
            )
        if self.policies.policies or self.policies.always:
            lines.append(f"approval policies for: {', '.join(sorted(self.policies.policies))}")
        if gated := sorted(self.policies.always):
            lines.append(
                "every call needs approval (always): "
                + ", ".join("every tool without an entry" if g == DEFAULT_KEY else g for g in gated)
            )
        lines.append(
            f"continue-as-new state: sealed with the key in {self.state_key_from}"
            if self.state_key
            else f"continue-as-new state: checked with the server only (set {STATE_KEY_FILE_ENV} to seal it)"
        )
        servers = _servers(agents or {})
        if servers:
            lines.append(f"MCP servers: {', '.join(server.describe() for server in servers)}")
        lines += self.notes
        lines += [self.notify.describe()] if self.notify else []
        lines += self.connection.telemetry.describe()
        codec = self.connection.codec_keys
        lines.append(codec.describe() if codec else "payload encryption: off")
        return lines + ([self.model_note] if self.model_note else [])


def _model_note(agents: Mapping[str, ChatClientAgent], env: Environment) -> str | None:
    """A warning when agents need the worker's model and none is configured; None when all is well.

    Raises:
        ConfigError: a model is configured but cannot work (a missing model name, a key set twice).
    """
    needing = sorted(name for name, agent in agents.items() if agent.chat_client is None)
    if not needing:
        return None
    if env.read(LLM_BASE_URL_ENV):
        LLMConfig.from_env(env)  # fails now, naming the variable, not at the first model turn
        return None
    return NO_MODEL.format(agents=", ".join(needing))


def _servers(agents: Mapping[str, ChatClientAgent]) -> list[MCPServer]:
    """Every agent's MCP servers, each configuration once."""
    return list({server.key: server for agent in agents.values() for server in agent.mcp_servers}.values())


__all__ = ["NO_MODEL", "WorkerSettings", "read_approver_keys", "read_limits", "read_policies"]


def _auto_settings(env: Environment) -> AutoSettings:
    """Auto mode's model and signing key (`SIGNOFF_AUTO_*`; the key read now, so a bad one stops the worker)."""
    key = key_file(env, AUTO_SIGNING_KEY_FILE_ENV, AUTO_SIGNING_KID_ENV)
    signer = None
    if key is not None:
        try:
            signer = SigningKey.load(key.path, key.kid)
        except ConfigError as exc:
            raise ConfigError(str(exc).replace(APPROVER_KEY_FILE_ENV, AUTO_SIGNING_KEY_FILE_ENV)) from None
    return AutoSettings(
        env.read(AUTO_MODEL_ENV), signer, env.read(APPROVER_ISSUER_ENV), env.read(APPROVER_AUDIENCE_ENV)
    )
