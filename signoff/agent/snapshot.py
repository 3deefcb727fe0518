"""The agent as a run started with it: instructions, tools, who decides what, limits.

Taken worker-side when a run starts and recorded in its history, so a paused run keeps
the definition it started with whatever the worker's configuration does meanwhile.
`gate` records how each tool decides whether a call needs approval: `always`
(`ApprovalRequiredTool`, a tool with an approval policy), `never`, or `per_call` (the
tool looks at the arguments, e.g. a file tool's workspace scope). An MCP tool also
records its listing (`mcp`: server, tool, annotations, trust), so any worker can call it
by name and its approval requests say where it comes from.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from signoff.approval.digest import canonical_json, sha256_hex
from signoff.approval.policy import DEFAULT_POLICY, ApprovalPolicy, Gate
from signoff.contract import InheritedGate
from signoff.loop.limits import Limits
from signoff.messages import ToolSpec
from signoff.text.wire import Compact
from signoff.tools.mcp.listing import MCPToolInfo


class SubAgentInfo(Compact):
    """A tool that delegates to another agent (`AgentBuilder.with_sub_agent`): a call starts a
    child `AgentRun` of `agent` (on `task_queue`, None: the parent's) whose final text is its result."""

    agent: str
    task_queue: str | None = None
    max_depth: int = 3
    """How deep delegation may go below the top run through this tool (the top run is depth 0)."""


class SnapshotTool(Compact):
    spec: ToolSpec
    idempotent: bool = False
    gate: Gate = "per_call"
    policy: ApprovalPolicy | None = None
    """None: the default policy (anyone may decide); kept out of the payload."""
    mcp: MCPToolInfo | None = None
    """Where an MCP tool comes from and what it declared; absent (not null) for other tools,
    so the snapshots and digests of runs without MCP tools are those they always were."""

    sub_agent: SubAgentInfo | None = None
    """For a sub-agent tool: the agent a call delegates to; absent (not null) for other tools."""

    absent_when_none: ClassVar[frozenset[str]] = frozenset({"mcp", "sub_agent"})

    @property
    def approver_description(self) -> str:
        """What an approval request says of the tool (for an MCP tool: server, annotations, trust)."""
        return self.mcp.describe(self.spec.description) if self.mcp else self.spec.description


class NotifyPlan(Compact):
    """Where a run's notifications go: the worker's channels, named by fingerprint.

    Channels are named by a fingerprint of their URL, never the URL itself: webhook URLs
    are often secrets, and the snapshot is recorded in history.
    """

    channels: list[str] = Field(default_factory=list)
    retry_seconds: float = Field(300.0, gt=0)
    """How long Temporal retries one notification before it is recorded as failed."""


class RunSnapshot(Compact):
    """What a run records of its agent when it starts (`AgentDefinition.snapshot`); fixed for
    the run (and carried across continue-as-new)."""

    agent: str
    instructions: str = ""
    tools: list[SnapshotTool] = Field(default_factory=list)
    limits: Limits = Field(default_factory=Limits)
    payload_budget: int | None = None
    """The largest payload the run may write (None: an external store takes large ones)."""
    notify: NotifyPlan | None = None
    """Notification channels (`SIGNOFF_NOTIFY_URLS`); None sends none. Not part of the digest:
    where notices go has nothing to do with which calls need approval."""
    inherited: dict[str, InheritedGate] | None = None
    """A child run's: its ancestors' gates by tool name, applied over its own tools' (absent, not
    null, for top runs: their digests are what they always were)."""

    absent_when_none: ClassVar[frozenset[str]] = frozenset({"inherited"})

    @property
    def specs(self) -> list[ToolSpec]:
        return [t.spec for t in self.tools]

    @property
    def descriptions(self) -> dict[str, str]:
        """What the run's approval requests say of each tool, by name."""
        return {t.spec.name: t.approver_description for t in self.tools}

    @property
    def policies(self) -> dict[str, ApprovalPolicy]:
        return {t.spec.name: t.policy or DEFAULT_POLICY for t in self.tools}

    @property
    def tool_names(self) -> frozenset[str]:
        return frozenset(t.spec.name for t in self.tools)

    def tool(self, name: str) -> SnapshotTool | None:
        return next((t for t in self.tools if t.spec.name == name), None)

    def digest(self) -> str:
        """A stable fingerprint, so activities can refer to the snapshot by it."""
        return sha256_hex(canonical_json(self.model_dump(mode="json", exclude={"notify"})))[:32]
