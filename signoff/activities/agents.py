"""The agents a worker serves, their chat clients, and the snapshots runs start with.

A run's snapshot (instructions, tool specs, gates, policies, limits) is taken by the
first activity of the run and recorded in its history. The worker keeps the tool
registry each snapshot was taken from, by digest, so later turns gate and run calls
with the tools the run started with. A worker that has not seen the snapshot rebuilds
the agent; if that gives another digest (its configuration changed since), it gates
per-call tools conservatively (`signoff.agent.gate`).

An agent with MCP servers lists their tools when a run starts, over the worker's
sessions (`mcp_sessions`, closed when the worker shuts down). Listings change, so a
worker cannot rebuild such a snapshot from its configuration alone: it takes the run's
own (the `agent_snapshot` query, checked against the digest) and rebuilds the MCP tools
it records, bound to this worker's servers by name; when the rest of the agent matches
too, the snapshot is this worker's own.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from temporalio import activity
from temporalio.exceptions import ApplicationError

from signoff.agent.builder import AgentDefinition, ChatClientAgent
from signoff.agent.delegation import tightened_by
from signoff.agent.gate import Configured, configured
from signoff.agent.snapshot import RunSnapshot
from signoff.agent.subagent import SubAgentTool
from signoff.approval.policy import PolicyBook
from signoff.chat.base import ChatClient
from signoff.contract import QUERY_SNAPSHOT, InheritedGate
from signoff.errors import ConfigError
from signoff.loop.limits import DEFAULT_PAYLOAD_BUDGET, Limits
from signoff.messages import ChatMessage, MCPUnavailableEvent
from signoff.tools.base import Tool
from signoff.tools.mcp.tool import OwnSessions, rebuilt_tools
from signoff.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from signoff.activities.needs import ActivitySettings
    from signoff.tools.mcp.sessions import MCPSessions

SNAPSHOTS_REMEMBERED = 1000


@dataclass(frozen=True)
class Taken:
    """What this worker took for a run: the snapshot, its digest, the live tools it was taken of."""

    snapshot: RunSnapshot
    digest: str
    registry: ToolRegistry
    unavailable: tuple[MCPUnavailableEvent, ...] = ()
    """MCP servers or tools left out when it was taken (reported in the run's events)."""


@dataclass(frozen=True)
class Resolved:
    """A run's snapshot and the tools to run its calls with.

    `own` is False when this worker cannot reproduce the run's snapshot (its configuration
    changed): `registry` is then the worker's current one, and per-call gates ask a person.
    """

    snapshot: RunSnapshot
    registry: ToolRegistry
    own: bool


class ServedAgents:
    """The worker's agents by name, with the defaults for those that bring no chat client.

    Args:
        agents: the agents, by name.
        default_client: a factory for the chat client of agents without one (called once,
            lazily, so a worker without model configuration still starts).
        settings: the worker's; each run's snapshot records its limits, policies and
            notification channels (None: the contract's limits, no policies, no channels).
        payload_budget: the largest payload a run may write (None: no limit), recorded too.
    """

    def __init__(
        self,
        agents: Mapping[str, ChatClientAgent],
        default_client: Callable[[], ChatClient] | None = None,
        settings: ActivitySettings | None = None,
        payload_budget: int | None = DEFAULT_PAYLOAD_BUDGET,
    ) -> None:
        self._agents = with_sub_agents(agents)
        self.payload_budget = payload_budget
        self.notify = settings.notify_plan if settings else None
        self._default_factory = default_client
        self._default: ChatClient | None = None
        self.limits = settings.limits if settings else Limits()
        self.policies = settings.policies if settings else PolicyBook()
        self._taken: OrderedDict[str, Taken] = OrderedDict()
        self._foreign: OrderedDict[str, Resolved] = OrderedDict()
        self._made: OrderedDict[tuple[object, ...], Taken] = OrderedDict()
        self._books: dict[str, PolicyBook] = {}
        self._sessions = OwnSessions()

    @property
    def mcp_sessions(self) -> MCPSessions:
        """The worker's sessions to its agents' MCP servers (opened on first use)."""
        return self._sessions.get()

    async def aclose(self) -> None:
        """Close the MCP sessions (stdio servers are stopped)."""
        await self._sessions.aclose()

    def agent(self, name: str) -> ChatClientAgent:
        agent = self._agents.get(name)
        if agent is None:
            known = ", ".join(sorted(self._agents)) or "none"
            raise ApplicationError(
                f"unknown agent {name!r} (known agents: {known})", type="UnknownAgent", non_retryable=True
            )
        return agent

    def client(self, name: str) -> ChatClient:
        agent = self.agent(name)
        if agent.chat_client is not None:
            return agent.chat_client
        if self._default is None:
            if self._default_factory is None:
                raise ApplicationError(f"agent {name!r} has no chat client", non_retryable=True)
            try:
                self._default = self._default_factory()
            except ConfigError as exc:
                raise ApplicationError(str(exc), type="ConfigError", non_retryable=True) from exc
        return self._default

    def book(self, name: str) -> PolicyBook:
        """The policies agent `name` runs under: the worker's file over the agent's own."""
        book = self._books.get(name)
        if book is None:
            book = self._books[name] = self.policies.merged_over(self.agent(name).policies)
        return book

    def configured(self, name: str, tool: Tool) -> Configured:
        """How this worker's own configuration gates and governs `tool` of agent `name` now (its
        code and the policy file), whatever a run's snapshot says: what the tool activity enforces."""
        return configured(tool, self.book(name))

    async def take(
        self, name: str, transcript: list[ChatMessage], inherited: Mapping[str, InheritedGate] | None = None
    ) -> Taken:
        """Snapshot an agent for a run starting with `transcript` (providers see it), its MCP
        servers' tools listed now; a child run's, with its ancestors' gates over its own."""
        agent = self.agent(name)
        if not agent.mcp_servers:
            return self._made_from(name, agent, agent.definition(transcript), inherited)
        definition = await agent.open_definition(transcript, self.mcp_sessions)
        return replace(self._made_from(name, agent, definition, inherited), unavailable=definition.unavailable)

    def _made_from(
        self,
        name: str,
        agent: ChatClientAgent,
        definition: AgentDefinition,
        inherited: Mapping[str, InheritedGate] | None = None,
    ) -> Taken:
        """The run's snapshot of `definition` and its digest, remembered by digest.

        Providers usually give the same instructions and the same tool objects every time
        (MCP tools too, while a server's listing does not change): then the serialisable
        snapshot and its digest are the ones already made."""
        gates = {k: v.model_dump_json() for k, v in sorted((inherited or {}).items())}
        key = (name, definition.instructions, tuple(gates.items()), *map(id, definition.registry))
        made = self._made.get(key)
        if made is None or [*made.registry] != [*definition.registry]:  # ids of live tools: the same objects
            snapshot = tightened_by(definition.snapshot(name, self.limits, self.book(name)), inherited or {})
            snapshot.payload_budget = self.payload_budget
            snapshot.notify = self.notify
            made = self._made[key] = Taken(snapshot, snapshot.digest(), definition.registry)
            while len(self._made) > SNAPSHOTS_REMEMBERED:
                self._made.popitem(last=False)
        self._remember(made)
        return made

    def own(self, name: str, digest: str) -> Resolved | None:
        """The run's snapshot if this worker can reproduce it (no I/O), else None."""
        agent = self.agent(name)
        if digest not in self._taken and not agent.mcp_servers:
            self._made_from(name, agent, agent.definition([]))  # the same configuration gives the same digest
        taken = self._taken.get(digest)
        if taken is None:
            return None
        self._taken.move_to_end(digest)
        return Resolved(taken.snapshot, taken.registry, own=True)

    async def resolve(self, name: str, digest: str) -> Resolved:
        """The run's snapshot `digest` of agent `name`: this worker's if it can reproduce it,
        else the run's own from its history (the `agent_snapshot` query).

        What a run answers is kept (for every run of that snapshot) only if it hashes to
        `digest`: a workflow that answers with another snapshot cannot plant it for others.

        Raises:
            ApplicationError: non-retryable, the run's snapshot does not match its digest.
        """
        if digest in self._foreign:  # asked already: skip rebuilding the agent to compare
            return await self.from_run(name, digest)
        return self.own(name, digest) or await self.from_run(name, digest)

    async def from_run(self, name: str, digest: str) -> Resolved:
        """The run's snapshot `digest` of agent `name` as the run has it (`resolve`), for a
        worker that cannot reproduce it (`own` said None)."""
        foreign = self._foreign.get(digest)
        if foreign is not None:
            self._foreign.move_to_end(digest)
            return foreign
        info = activity.info()
        handle = activity.client().get_workflow_handle(info.workflow_id or "", run_id=info.workflow_run_id)
        snapshot = await handle.query(QUERY_SNAPSHOT, result_type=RunSnapshot)
        if snapshot is None or snapshot.digest() != digest:
            raise ApplicationError(
                f"the run's agent_snapshot does not match its snapshot digest {digest[:16]}",
                type="SnapshotMismatch",
                non_retryable=True,
            )
        agent = self.agent(name)
        rebuilt = self._rebuilt(name, agent, snapshot)
        if rebuilt.digest == digest:
            return Resolved(rebuilt.snapshot, rebuilt.registry, own=True)
        foreign = self._foreign[digest] = Resolved(snapshot, rebuilt.registry, own=False)
        while len(self._foreign) > SNAPSHOTS_REMEMBERED:
            self._foreign.popitem(last=False)
        return foreign

    def _rebuilt(self, name: str, agent: ChatClientAgent, snapshot: RunSnapshot) -> Taken:
        """The agent as this worker has it, with the MCP tools the run's snapshot records (bound
        to this worker's servers by name): the run's own snapshot when nothing else changed."""
        base = agent.definition([])
        recorded = [(t.spec, t.mcp) for t in snapshot.tools if t.mcp is not None and t.spec.name not in base.registry]
        if not recorded:
            return self._made_from(name, agent, base, snapshot.inherited)
        servers = {server.name: server for server in agent.mcp_servers}
        tools = rebuilt_tools(recorded, servers, self.mcp_sessions)
        definition = AgentDefinition(base.instructions, ToolRegistry([*base.registry, *tools]))
        return self._made_from(name, agent, definition, snapshot.inherited)

    def _remember(self, taken: Taken) -> None:
        self._taken[taken.digest] = taken
        self._taken.move_to_end(taken.digest)
        while len(self._taken) > SNAPSHOTS_REMEMBERED:
            self._taken.popitem(last=False)


def with_sub_agents(agents: Mapping[str, ChatClientAgent]) -> dict[str, ChatClientAgent]:
    """The agents by name, with every built agent a sub-agent tool delegates to (at any depth)
    that is not served under its name already.

    Raises:
        ConfigError: a sub-agent is another agent of a name the worker already serves.
    """
    served = dict(agents)
    todo = list(agents.values())
    while todo:
        for tool in todo.pop().tools:
            if not isinstance(tool, SubAgentTool) or isinstance(tool.agent, str):
                continue
            known = served.get(tool.agent.name)
            if known is None:
                served[tool.agent.name] = tool.agent
                todo.append(tool.agent)
            elif known is not tool.agent:
                raise ConfigError(
                    f"sub-agent tool {tool.name!r} delegates to an agent named {tool.agent.name!r}, "
                    "and the worker serves another agent of that name"
                )
    return served
