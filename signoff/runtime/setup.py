"""What a worker reads at start besides its connection: limits, policies, keys, its Worker
Deployment version (`runtime/deployment.py`) and how many runs it keeps in memory.

Each is checked when the worker starts, so a configuration that cannot work stops it
with a message instead of failing runs later: a policy file that does not parse, a
limit out of range, a policy file entry that would relax a policy a tool's code declares,
policies that need verified approvers or requesters while the worker has no keys to
verify them with (the message names each agent and tool), a state key that cannot be
read, or an MCP server whose command is not found (`SIGNOFF_MCP_CONFIG` itself is read with
the agents). A policy file entry that changes nothing (a tool that never asks for approval,
without `always`) is named in the start-up log.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from signoff.activities.state import STATE_KEY_ENV, local_state_key, read_state_key
from signoff.agent.builder import ChatClientAgent
from signoff.agent.snapshot import SnapshotTool
from signoff.approval.identity import ENV_KEYS, ApproverKeys
from signoff.approval.policy import DEFAULT_KEY, POLICY_FILE_ENV, PolicyBook
from signoff.errors import ConfigError
from signoff.loop.limits import Limits
from signoff.runtime.deployment import DeploymentSettings
from signoff.runtime.devserver import DATA_DIR
from signoff.runtime.filestore import make_private_dir
from signoff.tools.base import Tool, capabilities_of
from signoff.tools.mcp import MCPServer
from signoff.tools.mcp.listing import PREFIX

LOCAL_STATE_KEY = DATA_DIR / "state.key"
CACHE_ENV = "SIGNOFF_MAX_CACHED_WORKFLOWS"
MAX_CACHE = 100_000


@dataclass(frozen=True)
class WorkerSetup:
    """The worker's limits, approval policies, approver keys, state key and deployment version."""

    limits: Limits
    policies: PolicyBook
    keys: ApproverKeys | None
    state_key: bytes | None = field(default=None, repr=False)
    state_key_from: str = ""
    """Where the state key came from, for the start-up log."""
    notes: tuple[str, ...] = ()
    deployment: DeploymentSettings | None = None
    cache: int | None = None
    """Runs kept in memory between their workflow tasks (None: the SDK's 1,000); the others
    replay their history when their next task comes (a decision, a timer)."""

    @classmethod
    def from_env(
        cls, agents: Mapping[str, ChatClientAgent], env: Mapping[str, str] | None = None, *, local: bool = False
    ) -> WorkerSetup:
        """Read and check `SIGNOFF_MAX_*`/`SIGNOFF_TRANSCRIPT_BUDGET`, `SIGNOFF_POLICY_FILE`,
        `SIGNOFF_APPROVER_KEYS` (with its issuer and audience), `SIGNOFF_STATE_KEY_FILE`,
        `SIGNOFF_DEPLOYMENT_NAME` with `SIGNOFF_BUILD_ID`, and `SIGNOFF_MAX_CACHED_WORKFLOWS`.

        Args:
            local: no Temporal address, TLS or API key is configured (the embedded or a
                local dev server): without `SIGNOFF_STATE_KEY_FILE`, the state key is
                `.signoff/state.key`, made if missing.

        Raises:
            ConfigError: a setting cannot work, a policy file entry would relax a tool's
                own policy, or policies need keys the worker lacks.
        """
        values = os.environ if env is None else env
        path = values.get(STATE_KEY_ENV, "").strip()
        if path:
            state_key, source = read_state_key(path), path
        elif local:
            make_private_dir(Path.cwd() / DATA_DIR)
            state_key, source = local_state_key(Path.cwd() / LOCAL_STATE_KEY), str(LOCAL_STATE_KEY)
        else:
            state_key, source = None, ""
        setup = cls(
            Limits.from_env(env),
            PolicyBook.from_env(env),
            ApproverKeys.from_env(env),
            state_key,
            source,
            deployment=DeploymentSettings.from_env(values),
            cache=_cache(values.get(CACHE_ENV, "")),
        )
        return setup.check(agents)

    def _tools(self, agents: Mapping[str, ChatClientAgent]) -> Iterator[tuple[str, Tool, SnapshotTool]]:
        for name, agent in sorted(agents.items()):
            definition = agent.definition([])
            snapshot = definition.snapshot(name, self.limits, self.policies.merged_over(agent.policies))
            for tool, entry in zip(definition.registry, snapshot.tools, strict=True):
                yield name, tool, entry

    def check(self, agents: Mapping[str, ChatClientAgent]) -> WorkerSetup:
        """Refuse MCP servers that cannot start, policy file entries that relax a tool's own
        policy, and policies that need verified approvers or requesters when no keys are
        configured (MCP tools are listed only when runs start: their policies are found by
        the `mcp__<server>__` of the agent's servers); note entries that change nothing.
        Returns the setup with its notes."""
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
        if needing and self.keys is None:
            raise ConfigError(
                f"approval policies need verified approvers or requesters ({', '.join(needing)}) but the worker "
                f"has no keys to verify their tokens: set {ENV_KEYS} (an HS256 secret file, PEM public keys or a "
                f"JWKS file), or drop `verified`/`separate_requester` from those policies ({POLICY_FILE_ENV} or "
                "the tools' own)"
            )
        notes = tuple(
            f"policy for {where} has no effect: the tool never asks for approval; add always = true to gate every call"
            for where in idle
        )
        return replace(self, notes=notes)

    def worker_options(self) -> dict[str, Any]:
        """Keyword arguments for `build_worker`."""
        options: dict[str, Any] = {
            "limits": self.limits,
            "policies": self.policies,
            "verifier": self.keys,
            "state_key": self.state_key,
            "deployment": self.deployment,
        }
        return options | ({"max_cached_workflows": self.cache} if self.cache is not None else {})

    def describe(self, agents: Mapping[str, ChatClientAgent] | None = None) -> list[str]:
        """Lines for the worker's start-up log (never a secret)."""
        lines = [self.keys.describe() if self.keys else "approver tokens: not configured"]
        lines.append(self.deployment.describe() if self.deployment else "worker deployment: none (unversioned)")
        if self.cache is not None:
            lines.append(f"workflow cache: {self.cache:,} runs in memory ({CACHE_ENV}); the others replay when woken")
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
            else f"continue-as-new state: checked with the server only (set {STATE_KEY_ENV} to seal it)"
        )
        servers = _servers(agents or {})
        if servers:
            lines.append(f"MCP servers: {', '.join(server.describe() for server in servers)}")
        return lines + list(self.notes)


def _cache(text: str) -> int | None:
    if not text.strip():
        return None
    try:
        value = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_CACHE:
        raise ConfigError(
            f"{CACHE_ENV} must be a whole number of runs from 0 (replay every task) to {MAX_CACHE:,}, got {text!r}"
        )
    return value


def _servers(agents: Mapping[str, ChatClientAgent]) -> list[MCPServer]:
    """Every agent's MCP servers, each configuration once."""
    return list({server.key: server for agent in agents.values() for server in agent.mcp_servers}.values())
