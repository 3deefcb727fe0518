"""The activities of an agent run: prepare (snapshot), one model turn, one tool call.

Everything that touches the machine happens here, worker-side, so its answer is
recorded in history: the agent's tools and instructions, which calls need
approval (a scope resolves real paths), the model's turn, a tool's output.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta

from temporalio import activity
from temporalio.exceptions import ApplicationError

from signoff.activities.run_memory import RunMemory
from signoff.activities.models import ChatInput, ChatTurn, PrepareInput, PrepareOutput, ToolInput, ToolOutput
from signoff.agent import ChatClientAgent
from signoff.chat.base import ChatClient, ChatOptions
from signoff.contract import AgentSnapshotModel
from signoff.dispatch import execute_call, gated_call_ids
from signoff.errors import ConfigError, ProviderError
from signoff.messages import ChatMessage
from signoff.tools.registry import ToolRegistry

HEARTBEAT_EVERY = 2.0


@contextlib.asynccontextmanager
async def heartbeating(every: float = HEARTBEAT_EVERY) -> AsyncIterator[None]:
    """Heartbeat in the background: a dead worker is noticed, a cancel is delivered.

    The first beat comes after `every` seconds, not at once: an immediate one costs every
    short call a server round trip (4-5 ms on a noop tool, bench/README.md), and the
    heartbeat timeouts (10 s, 30 s) are far longer than `every`.
    """

    async def beat() -> None:
        while True:
            await asyncio.sleep(every)
            activity.heartbeat()

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()


@dataclass(frozen=True)
class _Served:
    registry: ToolRegistry
    model: AgentSnapshotModel
    digest: str


class AgentActivities:
    """The activities, bound to the worker's agents and its default chat client.

    Args:
        agents: the agents this worker serves, by name.
        default_client: a factory for the chat client of agents that bring none
            (called once, lazily, so a worker without model config still starts).
    """

    def __init__(
        self, agents: Mapping[str, ChatClientAgent], default_client: Callable[[], ChatClient] | None = None
    ) -> None:
        self._agents = dict(agents)
        self._default_factory = default_client
        self._default: ChatClient | None = None
        self._served: dict[str, _Served] = {}
        self._memory = RunMemory(self._serve)

    def _agent(self, name: str) -> ChatClientAgent:
        agent = self._agents.get(name)
        if agent is None:
            known = ", ".join(sorted(self._agents)) or "none"
            raise ApplicationError(
                f"unknown agent {name!r} (known agents: {known})", type="UnknownAgent", non_retryable=True
            )
        return agent

    def _serve(self, name: str) -> _Served:
        """The agent as this worker serves it, built once: its registry, snapshot and digest."""
        if name not in self._served:
            snapshot = self._agent(name).snapshot([])
            model = AgentSnapshotModel(
                agent=name,
                instructions=snapshot.instructions,
                tools=snapshot.specs,
                idempotent={t.name: bool(t.idempotent) for t in snapshot.registry},
            )
            self._served[name] = _Served(snapshot.registry, model, model.digest())
            self._memory.remember_snapshot(self._served[name].digest, model)
        return self._served[name]

    def _client(self, agent: ChatClientAgent) -> ChatClient:
        if agent.chat_client is not None:
            return agent.chat_client
        if self._default is None:
            if self._default_factory is None:
                raise ApplicationError(f"agent {agent.name!r} has no chat client", non_retryable=True)
            try:
                self._default = self._default_factory()
            except ConfigError as exc:
                raise ApplicationError(str(exc), type="ConfigError", non_retryable=True) from exc
        return self._default

    @activity.defn(name="signoff.prepare")
    async def prepare(self, input: PrepareInput) -> PrepareOutput:
        """Snapshot the agent for this run, and gate a resumed transcript's open calls."""
        served = self._serve(input.agent)
        gated = gated_call_ids(served.registry, input.open_calls)
        return PrepareOutput(snapshot=served.model, snapshot_digest=served.digest, gated=gated)

    @activity.defn(name="signoff.chat")
    async def chat(self, input: ChatInput) -> ChatTurn:
        """One model turn, streamed; which of its calls need approval."""
        client, served = self._client(self._agent(input.agent)), self._serve(input.agent)
        if input.snapshot_digest:  # later turns: the snapshot the run started with
            snapshot, digest = await self._memory.snapshot(input.agent, input.snapshot_digest), None
        else:  # the first turn takes the snapshot and returns it, to be kept in history
            snapshot, digest = served.model, served.digest
        transcript = await self._memory.transcript(input.base, input.messages)
        system = [ChatMessage.system(snapshot.instructions)] if snapshot.instructions else []
        options = ChatOptions(model=input.model, temperature=input.temperature)
        try:
            async with heartbeating():
                response = await client.complete(system + transcript, snapshot.tools, options)
        except ProviderError as exc:
            raise _provider_failure(exc) from None
        self._memory.append(response.message.model_copy(update={"role": "assistant"}))
        gated = gated_call_ids(served.registry, response.message.tool_calls or [])
        if digest is None:
            return ChatTurn(response=response, gated=gated)
        return ChatTurn(response=response, gated=gated, snapshot=snapshot, snapshot_digest=digest)

    @activity.defn(name="signoff.tool")
    async def tool(self, input: ToolInput) -> ToolOutput:
        """Run one tool call; its own failure is the message `Error: ...`."""
        registry = self._serve(input.agent).registry
        async with heartbeating():
            return ToolOutput(content=await execute_call(registry, input.call))

    @property
    def all(self) -> list[Callable]:
        return [self.prepare, self.chat, self.tool]


def _provider_failure(exc: ProviderError) -> ApplicationError:
    """Map a provider's status to Temporal's retry behaviour (the client never retries)."""
    if exc.retryable:
        delay = timedelta(seconds=exc.retry_after) if exc.retry_after else None
        return ApplicationError(str(exc), exc.status, type="ProviderError", next_retry_delay=delay)
    return ApplicationError(str(exc), exc.status, type="ProviderError", non_retryable=True)
