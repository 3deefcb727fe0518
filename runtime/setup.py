"""What a worker reads at start besides its connection: limits, policies, approver keys, its
Worker Deployment version (`runtime/deployment.py`) and how many runs it keeps in memory.

Each is checked when the worker starts, so a configuration that cannot work stops it
with a message instead of failing runs later: a policy file that does not parse, a
limit out of range, policies that need verified approvers while the worker has no
keys to verify them with (the message names each agent and tool), or an MCP server
whose command is not found (`SIGNOFF_MCP_CONFIG` itself is read with the agents).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from signoff.agent import ChatClientAgent
from signoff.errors import ConfigError
from signoff.identity import ENV_KEYS, ApproverKeys
from signoff.limits import Limits
from signoff.policy import POLICY_FILE_ENV, PolicyBook
from signoff.runtime.deployment import DeploymentSettings
from signoff.tools.mcp import MCPServer
from signoff.tools.mcp.listing import PREFIX

CACHE_ENV = "SIGNOFF_MAX_CACHED_WORKFLOWS"
MAX_CACHE = 100_000


@dataclass(frozen=True)
class WorkerSetup:
    """The worker's limits, approval policies, approver keys and deployment version."""

    limits: Limits
    policies: PolicyBook
    keys: ApproverKeys | None
    deployment: DeploymentSettings | None = None
    cache: int | None = None
    """Runs kept in memory between their workflow tasks (None: the SDK's 1,000); the others
    replay their history when their next task comes (a decision, a timer)."""

    @classmethod
    def from_env(cls, agents: Mapping[str, ChatClientAgent], env: Mapping[str, str] | None = None) -> WorkerSetup:
        """Read and check `SIGNOFF_MAX_*`/`SIGNOFF_TRANSCRIPT_BUDGET`, `SIGNOFF_POLICY_FILE`,
        `SIGNOFF_APPROVER_KEYS` (with its issuer and audience), `SIGNOFF_DEPLOYMENT_NAME` with
        `SIGNOFF_BUILD_ID`, and `SIGNOFF_MAX_CACHED_WORKFLOWS`.

        Raises:
            ConfigError: a setting cannot work, or policies need keys the worker lacks.
        """
        environ = os.environ if env is None else env
        setup = cls(Limits.from_env(env), PolicyBook.from_env(env), ApproverKeys.from_env(env),
                    DeploymentSettings.from_env(environ), _cache(environ.get(CACHE_ENV, "")))  # fmt: skip
        setup.check(agents)
        return setup

    def check(self, agents: Mapping[str, ChatClientAgent]) -> None:
        """Refuse MCP servers that cannot start, and policies that need verified approvers
        when no keys are configured (MCP tools are listed only when runs start: their
        policies are found by the `mcp__<server>__` of the agent's servers)."""
        for server in _servers(agents):
            server.check()
        if self.keys is not None:
            return
        needing = [
            f"{name}/{tool.spec.name}"
            for name, agent in sorted(agents.items())
            for tool in agent.snapshot([]).model(name, self.limits, self.policies.merged_over(agent.policies)).tools
            if tool.policy is not None and tool.policy.verified
        ]
        needing += [
            f"{name}/{tool}"
            for name, agent in sorted(agents.items())
            for tool, policy in sorted(self.policies.merged_over(agent.policies).policies.items())
            if policy.verified and any(tool.startswith(f"{PREFIX}{s.name}__") for s in agent.mcp_servers)
        ]
        if needing:
            raise ConfigError(
                f"approval policies need verified approvers ({', '.join(needing)}) but the worker has no "
                f"keys to verify their tokens: set {ENV_KEYS} (an HS256 secret file, PEM public keys or a "
                f"JWKS file), or drop `verified` from those policies ({POLICY_FILE_ENV} or the tools' own)"
            )

    def worker_options(self) -> dict[str, Any]:
        """Keyword arguments for `build_worker`."""
        options: dict[str, Any] = {"limits": self.limits, "policies": self.policies, "verifier": self.keys}
        options["deployment"] = self.deployment
        return options | ({"max_cached_workflows": self.cache} if self.cache is not None else {})

    def describe(self, agents: Mapping[str, ChatClientAgent] | None = None) -> list[str]:
        """Lines for the worker's start-up log (never a secret)."""
        lines = [self.keys.describe() if self.keys else "approver tokens: not configured"]
        lines.append(self.deployment.describe() if self.deployment else "worker deployment: none (unversioned)")
        if self.cache is not None:
            lines.append(f"workflow cache: {self.cache:,} runs in memory ({CACHE_ENV}); the others replay when woken")
        if self.policies.policies:
            lines.append(f"approval policies for: {', '.join(sorted(self.policies.policies))}")
        servers = _servers(agents or {})
        if servers:
            lines.append(f"MCP servers: {', '.join(server.describe() for server in servers)}")
        return lines


def _cache(text: str) -> int | None:
    if not text.strip():
        return None
    try:
        value = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_CACHE:
        raise ConfigError(f"{CACHE_ENV} must be a whole number of runs from 0 (replay every task) to {MAX_CACHE:,}, "
                          f"got {text!r}")  # fmt: skip
    return value


def _servers(agents: Mapping[str, ChatClientAgent]) -> list[MCPServer]:
    """Every agent's MCP servers, each configuration once."""
    return list({server.key: server for agent in agents.values() for server in agent.mcp_servers}.values())
