"""Agents: how they are built (`AgentBuilder`) and what they are for a run (the in-process
driver that runs them is `signoff.agent.driver`).

`ChatClientAgent.run()` is the original API: a stream of `AgentEvent`s that ends
with a finish event — `awaiting_approval` when gated calls wait — and a next
`run()` with `AgentRunOptions(tool_approval_responses=[...])` resumes.

What an agent is for a run (`AgentDefinition`: its instructions and live tools, its
context providers' included) is fixed when the run starts; what the run records of it
is its snapshot (`RunSnapshot`, `signoff.agent.snapshot`). An agent with MCP servers
(`with_mcp_server`) lists their tools when a run starts (`open_definition`, async I/O):
in process over the agent's own sessions (close them with `await agent.aclose()` or
`async with agent:`), in a durable run over the worker's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING

from signoff.agent.delegation import child_id, tightened_by
from signoff.agent.driver import ChildRuns, InProcessDriver, as_messages, now
from signoff.agent.gate import gated_call_ids, snapshot_of
from signoff.agent.session import AgentRunOptions, AgentSession
from signoff.agent.snapshot import RunSnapshot
from signoff.agent.subagent import ChildRun, Delegation, SubAgentTool
from signoff.approval.auto import AutoEvaluator
from signoff.approval.policy import ApprovalPolicy, PolicyBook
from signoff.approval.requests import ToolApprovalRequest, ToolApprovalResponse
from signoff.chat.base import ChatClient
from signoff.contract import InheritedGate
from signoff.errors import DecisionError, UsageError
from signoff.loop.agent_loop import AgentLoop, unanswered_calls
from signoff.loop.limits import Limits
from signoff.loop.state import DEFAULT_MAX_ROUNDS
from signoff.messages import (
    AgentEvent,
    ChatMessage,
    MCPUnavailableEvent,
    ToolSpec,
)
from signoff.tools.base import Tool, tool_spec
from signoff.tools.context import ContextProvider
from signoff.tools.mcp.config import MCPServer
from signoff.tools.mcp.tool import MCPTool, OwnSessions, open_tools
from signoff.tools.preview.gather import previews
from signoff.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from signoff.tools.mcp.sessions import MCPSessions


@dataclass(frozen=True)
class AgentDefinition:
    """What the agent is for a run: its instructions and the live tools that run the calls,
    fixed when the run starts. What the run records of it is `snapshot()`."""

    instructions: str
    registry: ToolRegistry
    unavailable: tuple[MCPUnavailableEvent, ...] = ()
    """MCP servers (or tools) that could not be listed; the run goes on without them."""

    @property
    def specs(self) -> list[ToolSpec]:
        return [tool_spec(t) for t in self.registry]

    def snapshot(self, agent: str, limits: Limits, book: PolicyBook | None = None) -> RunSnapshot:
        """What a run records of it: tool specs, gates and policies, limits, MCP listings."""
        snapshot = snapshot_of(agent, self.instructions, self.registry, limits, book)
        for entry, tool in zip(snapshot.tools, self.registry, strict=True):
            if isinstance(tool, MCPTool):
                entry.mcp = tool.mcp
            if isinstance(tool, SubAgentTool):
                entry.sub_agent = tool.info
        return snapshot


class ChatClientAgent:
    """An agent: instructions, a chat client, tools and context providers."""

    def __init__(
        self,
        name: str,
        instructions: str,
        chat_client: ChatClient | None,
        tools: Sequence[Tool],
        context_providers: Sequence[ContextProvider] = (),
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        limits: Limits | None = None,
        policies: PolicyBook | None = None,
        mcp_servers: Sequence[MCPServer] = (),
    ) -> None:
        self.name = name
        self.instructions = instructions
        self.chat_client = chat_client
        self.tools = list(tools)
        self.context_providers = list(context_providers)
        self.max_rounds = max_rounds
        self.limits = limits or Limits()
        self.policies = policies or PolicyBook()
        self.mcp_servers = list(mcp_servers)
        self.auto_evaluators: dict[str, AutoEvaluator] = {}
        """Auto mode's evaluators in code, by criteria set name (`AgentBuilder.with_auto_evaluator`)."""
        self._sessions = OwnSessions()
        names = [s.name for s in self.mcp_servers]
        if len(set(names)) != len(names):
            raise UsageError(f"agent {name!r} has two MCP servers of the same name: {names}")
        self.definition([])  # a duplicate tool name is an error now, not at the first run

    def definition(self, messages: list[ChatMessage]) -> AgentDefinition:
        """Instructions and tools for a run: the agent's own plus each provider's.

        Both drivers take it once, when a run starts, with the run's first transcript:
        the in-process `run()` and the first model turn of a durable run."""
        parts = [self.instructions] if self.instructions else []
        registry = ToolRegistry()
        for tool in self.tools:
            registry.register(tool)
        for provider in self.context_providers:  # the original on_invoking() chain
            context = provider.on_invoking(messages)
            parts.extend(context.instructions)
            for tool in context.tools:
                registry.register(tool)
        return AgentDefinition(instructions="\n\n".join(p for p in parts if p), registry=registry)

    async def open_definition(self, messages: list[ChatMessage], sessions: MCPSessions) -> AgentDefinition:
        """`definition(messages)` with the tools each MCP server lists now, over `sessions`;
        a server that cannot be listed is left out and named in `unavailable`."""
        base = self.definition(messages)
        if not self.mcp_servers:
            return base
        tools, unavailable = await open_tools(self.mcp_servers, sessions, base.registry.names())
        registry = ToolRegistry([*base.registry, *tools])
        return AgentDefinition(base.instructions, registry, tuple(unavailable))

    def mcp_sessions(self) -> MCPSessions:
        """This agent's own sessions to its MCP servers, for in-process runs (opened lazily)."""
        return self._sessions.get()

    async def aclose(self) -> None:
        """Close the in-process runs' MCP sessions (stdio servers are stopped)."""
        await self._sessions.aclose()

    async def __aenter__(self) -> ChatClientAgent:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def run(
        self,
        messages: str | ChatMessage | Sequence[ChatMessage] = (),
        session: AgentSession | None = None,
        options: AgentRunOptions | None = None,
    ) -> AsyncIterator[AgentEvent]:
        """Run until the model stops, approvals are needed, or rounds run out.

        Yields events; the last is a `FinishEvent`. Provider errors are yielded as
        an `ErrorEvent`, then raised.
        """
        async for event in self._run(messages, session, options, {}, 0):
            yield event

    async def delegated(
        self, task: str, inherited: Mapping[str, InheritedGate], depth: int, child: ChildRun
    ) -> Delegation:
        """A sub-agent's call in process: this agent's run on `task` (or, when `child.session`
        waits, its resumption with `child.responses`), its tools gated at least as `inherited`.
        Answered with its final text, or with what waits in it (paths relative to the parent)."""
        session, waiting = child.session, list[ToolApprovalRequest]()
        options = AgentRunOptions(
            tool_approval_responses=child.responses, cancellation=child.cancellation, requested_by=child.requested_by
        )
        messages: list[ChatMessage] = [] if session.messages else [ChatMessage.user(task)]
        async for _ in self._run(messages, session, options, inherited, depth, waiting, child.id):
            pass
        if waiting:
            return Delegation(None, [_below(child.id, r) for r in waiting])
        answers = [m.content for m in session.messages if m.role == "assistant" and m.content]
        return Delegation(answers[-1] if answers else "")

    async def _run(
        self,
        messages: str | ChatMessage | Sequence[ChatMessage],
        session: AgentSession | None,
        options: AgentRunOptions | None,
        inherited: Mapping[str, InheritedGate],
        depth: int,
        waiting: list[ToolApprovalRequest] | None = None,
        run_id: str | None = None,
    ) -> AsyncIterator[AgentEvent]:
        if self.chat_client is None:
            raise UsageError(f"agent {self.name!r} has no chat client; use with_chat_client(...)")
        options = options or AgentRunOptions()
        run_id = run_id or self.name
        session = session if session is not None else AgentSession()
        history = session.messages + as_messages(messages)
        definition = self.definition(history)
        if self.mcp_servers:
            definition = await self.open_definition(history, self.mcp_sessions())
        for unavailable in definition.unavailable:
            yield unavailable
        snapshot = tightened_by(definition.snapshot(self.name, self.limits, self.policies), inherited)
        loop = AgentLoop(
            history,
            snapshot.descriptions,
            max_rounds=options.max_rounds or self.max_rounds,
            policies=snapshot.policies,
            limits=snapshot.limits,
            max_total_tokens=options.max_total_tokens,
            requested_by=options.requested_by,
        )
        open_calls = unanswered_calls(history)
        parked = {child_id(run_id, c.id): c.id for c in open_calls if child_id(run_id, c.id) in session.children}
        session.children = {k: v for k, v in session.children.items() if k in parked}
        own, routed = _routed(options.tool_approval_responses, run_id, session, set(parked.values()))
        fresh = [c for c in open_calls if c.id not in parked.values()]
        gated = gated_call_ids(snapshot, definition.registry, fresh)
        shown = await previews(definition.registry, fresh, gated)
        loop.resume(own, gated, now(), previews=shown)
        here: list[ToolApprovalRequest] = []
        try:
            driver = InProcessDriver(
                self.chat_client,
                options,
                definition,
                snapshot,
                depth,
                here,
                ChildRuns(run_id, session.children, routed),
            )
            async for event in driver.drive(loop):
                yield event
        finally:
            session.messages = loop.messages
            still_open = {child_id(run_id, c.id) for c in unanswered_calls(loop.messages)}
            session.children = {k: v for k, v in session.children.items() if k in still_open}
            session.pending = here
            if waiting is not None:
                waiting.extend(here)


def _below(child: str, request: ToolApprovalRequest) -> ToolApprovalRequest:
    """A request of sub-agent run `child` (or of a run below it) as its parent lists it."""
    return request.model_copy(
        update={"workflow_id": request.workflow_id or child, "path": [child, *(request.path or [])]}
    )


def _routed(
    responses: Sequence[ToolApprovalResponse], run_id: str, session: AgentSession, parked_calls: set[str]
) -> tuple[list[ToolApprovalResponse], dict[str, list[ToolApprovalResponse]]]:
    """The run's own decisions, and those for its waiting sub-agents' runs by child id (a
    decision names the run that waits with `workflow_id`, as it would a durable child).

    Raises:
        DecisionError: a decision names a run that does not wait below this one, or decides a
            sub-agent call whose child waits (its calls are decided, not the delegation).
    """
    own: list[ToolApprovalResponse] = []
    routed: dict[str, list[ToolApprovalResponse]] = {}
    below = {r.workflow_id: child for child, s in session.children.items() for r in s.pending if r.workflow_id}
    for response in responses:
        target = response.workflow_id
        if target is None or target == run_id:
            if response.call_id in parked_calls:
                raise DecisionError(
                    f"call {response.call_id!r} is a sub-agent's run that waits: decide the calls that wait "
                    "in it, each with its workflow_id",
                    sorted(parked_calls),
                )
            own.append(response.model_copy(update={"workflow_id": None}))
            continue
        child = target if target in session.children else below.get(target)
        if child is None:
            known = ", ".join(sorted(set(below))) or "none"
            raise DecisionError(
                f"workflow_id {target[:200]!r} is not a sub-agent run of this one that waits (waiting: {known})", []
            )
        routed.setdefault(child, []).append(response)
    return own, routed


class AgentBuilder:
    """Builds an agent: `AgentBuilder("ops").with_instructions(...).with_tool(...).build()`."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._instructions = ""
        self._client: ChatClient | None = None
        self._tools: list[Tool] = []
        self._providers: list[ContextProvider] = []
        self._max_rounds = DEFAULT_MAX_ROUNDS
        self._limits: Limits | None = None
        self._policies: PolicyBook | None = None
        self._mcp_servers: list[MCPServer] = []
        self._evaluators: dict[str, AutoEvaluator] = {}

    def with_instructions(self, instructions: str) -> AgentBuilder:
        self._instructions = instructions
        return self

    def with_chat_client(self, client: ChatClient) -> AgentBuilder:
        self._client = client
        return self

    def with_tool(self, tool: Tool) -> AgentBuilder:
        self._tools.append(tool)
        return self

    def with_tools(self, tools: Sequence[Tool]) -> AgentBuilder:
        self._tools.extend(tools)
        return self

    def with_context_provider(self, provider: ContextProvider) -> AgentBuilder:
        self._providers.append(provider)
        return self

    def with_max_rounds(self, max_rounds: int) -> AgentBuilder:
        if max_rounds < 1:
            raise UsageError("max_rounds must be at least 1")
        self._max_rounds = max_rounds
        return self

    def with_limits(self, limits: Limits) -> AgentBuilder:
        """Per-turn calls, tool output, transcript and audit budgets (default: the contract's)."""
        self._limits = limits
        return self

    def with_policies(self, policies: PolicyBook) -> AgentBuilder:
        """Approval policies by tool name, overriding those declared with the tools."""
        self._policies = policies
        return self

    def with_mcp_server(self, server: MCPServer) -> AgentBuilder:
        """Offer the tools of an MCP server, listed when each run starts (`mcp__<server>__<tool>`)."""
        self._mcp_servers.append(server)
        return self

    def with_mcp_servers(self, servers: Sequence[MCPServer]) -> AgentBuilder:
        """Offer the tools of these MCP servers (e.g. `MCPServer.load_all("mcp.json")`)."""
        self._mcp_servers.extend(servers)
        return self

    def with_sub_agent(
        self,
        name: str,
        agent: ChatClientAgent | str,
        description: str = "",
        *,
        task_queue: str | None = None,
        max_depth: int = 3,
        policy: ApprovalPolicy | None = None,
    ) -> AgentBuilder:
        """Offer `agent` (built, or the name of another agent the worker serves) as the tool
        `name`, taking `{"task": string}`: in a durable run a call starts a child `AgentRun`
        (`<parent workflow id>--<call id>`, on `task_queue` or the parent's) whose final text is
        the result; its tools are gated at least as this agent gates the same names. `policy`
        gates the delegation itself; `max_depth`: how deep sub-agents may nest below the top run."""
        self._tools.append(
            SubAgentTool(name, agent, description, task_queue=task_queue, max_depth=max_depth, policy=policy)
        )
        return self

    def with_auto_evaluator(self, criteria: str, evaluator: AutoEvaluator) -> AgentBuilder:
        """Judge calls whose policy names criteria set `criteria` with `evaluator` (a function,
        sync or async, of an `AutoCall`, returning an `AutoVerdict`) instead of the model.
        Its answer is read as the model's is: anything but a confident approve or deny, or an
        exception, leaves the call to a person."""
        self._evaluators[criteria] = evaluator
        return self

    def build(self) -> ChatClientAgent:
        agent = self._built()
        agent.auto_evaluators = dict(self._evaluators)
        return agent

    def _built(self) -> ChatClientAgent:
        return ChatClientAgent(
            self._name,
            self._instructions,
            self._client,
            self._tools,
            self._providers,
            self._max_rounds,
            self._limits,
            self._policies,
            self._mcp_servers,
        )
