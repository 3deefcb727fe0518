"""The in-process driver: the loop's actions turned into direct calls of the model and the tools.

`ChatClientAgent.run()` (`signoff.agent.builder`) sets a run up (its definition, snapshot and
loop) and hands the loop to `InProcessDriver.drive`, which dispatches on the loop's closed set of
next steps; the durable driver is the workflow (`signoff.workflows.agent_run`), over the same loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypeVar, assert_never

from signoff.agent.delegation import child_id, inherited_gates
from signoff.agent.gate import gated_call_ids
from signoff.agent.session import AgentRunOptions, AgentSession, CancellationToken
from signoff.agent.snapshot import RunSnapshot
from signoff.agent.subagent import ChildRun, Delegation, SubAgentTool
from signoff.approval.requests import ToolApprovalRequest, ToolApprovalResponse, parse_arguments
from signoff.chat.base import ChatClient, ChatOptions
from signoff.errors import RunFailedError
from signoff.loop.agent_loop import AgentLoop, AwaitApproval, CallModel, Fail, Finish, RunTools
from signoff.loop.answer import checked_answer, within_limit
from signoff.messages import (
    AgentEvent,
    ApprovalRequestEvent,
    ChatMessage,
    ChatResponse,
    ErrorEvent,
    FinishEvent,
    FinishReason,
    TextEvent,
)
from signoff.tools.dispatch import execute_call
from signoff.tools.preview.gather import previews

if TYPE_CHECKING:
    from signoff.agent.builder import AgentDefinition

T = TypeVar("T")


@dataclass
class ChildRuns:
    """A run's in-process sub-agent runs: its id (theirs are `<id>--<call id>`), those that
    wait (their sessions, kept in the run's session) and the decisions routed to them."""

    run_id: str
    waiting: dict[str, AgentSession]
    routed: dict[str, list[ToolApprovalResponse]]


class InProcessDriver:
    """Drives one in-process run of an agent, as it was defined when the run started.

    Args:
        client: the agent's chat client.
        options: the run's options (model, temperature, cancellation).
        definition: the agent's instructions and live tools for this run.
        snapshot: what the run recorded of the agent (specs, gates, limits).
        depth: how deep in sub-agents this run is (0: the top).
        waiting: where the run leaves what waits when it finishes `awaiting_approval`: its own
            requests and its sub-agents' (with `workflow_id` and `path`).
        children: its sub-agents' runs (None: a new run's, named after the agent).
    """

    def __init__(
        self,
        client: ChatClient,
        options: AgentRunOptions,
        definition: AgentDefinition,
        snapshot: RunSnapshot,
        depth: int,
        waiting: list[ToolApprovalRequest] | None,
        children: ChildRuns | None = None,
    ) -> None:
        self.client = client
        self.definition = definition
        self.snapshot = snapshot
        self.depth = depth
        self.waiting = waiting
        self.children = children or ChildRuns(snapshot.agent, {}, {})
        self.parked: list[ToolApprovalRequest] = []
        """What waits in the sub-agent calls of this round that stopped for a person."""
        self.requested_by = options.requested_by
        self.token = options.cancellation or CancellationToken()
        self.chat_options = ChatOptions(model=options.model, temperature=options.temperature)

    async def drive(self, loop: AgentLoop) -> AsyncIterator[AgentEvent]:
        """Turn the loop's actions into effects, with the agent as the run started with it."""
        token, waiting = self.token, self.waiting
        while True:
            for event in loop.drain_events():
                yield event
            if token.cancelled and loop.state.finish_reason is None:
                loop.cancel(now())
                continue
            match loop.next_action():
                case Finish():
                    return
                case Fail(message=message):
                    raise RunFailedError(message)
                case AwaitApproval():
                    if waiting is not None:
                        waiting.extend(loop.pending_requests())
                    yield FinishEvent(reason=FinishReason.AWAITING_APPROVAL, usage=loop.state.usage)
                    return
                case RunTools() as action:
                    await self._run_tools(loop, action)
                    if self.parked and not token.cancelled:  # the round cannot close: stop, as for a wait
                        for event in loop.drain_events():
                            yield event
                        for request in self.parked:
                            yield ApprovalRequestEvent(request=request)
                        if waiting is not None:
                            waiting.extend([*loop.pending_requests(), *self.parked])
                        yield FinishEvent(reason=FinishReason.AWAITING_APPROVAL, usage=loop.state.usage)
                        return
                case CallModel():
                    async for event in self._call_model(loop):
                        yield event
                case unknown:
                    assert_never(unknown)

    async def _call_model(self, loop: AgentLoop) -> AsyncIterator[AgentEvent]:
        definition, snapshot, token = self.definition, self.snapshot, self.token
        prompt = ([ChatMessage.system(definition.instructions)] if definition.instructions else []) + loop.messages
        deltas: asyncio.Queue[str] = asyncio.Queue()
        request = self.client.complete(prompt, snapshot.specs, self.chat_options, on_text=deltas.put_nowait)
        task: asyncio.Task[ChatResponse] = asyncio.ensure_future(request)
        stop = asyncio.ensure_future(token.wait())
        try:
            while True:
                getter = asyncio.ensure_future(deltas.get())
                done, _ = await asyncio.wait({task, getter, stop}, return_when=asyncio.FIRST_COMPLETED)
                if getter in done:
                    yield TextEvent(text=getter.result())
                    continue
                getter.cancel()
                if task in done:
                    break
                return  # cancelled: the next step of the drive finishes the run
            response = task.result()
        except Exception as exc:
            yield ErrorEvent(message=str(exc))
            raise
        finally:
            task.cancel()
            stop.cancel()
        response = checked_answer(response, len(loop.messages))
        calls = within_limit(response.message, snapshot.limits.max_calls_per_turn)
        gated = gated_call_ids(snapshot, definition.registry, calls)
        shown = await previews(definition.registry, calls, gated)
        loop.apply_model_turn(response, gated, now(), text_streamed=True, previews=shown)

    async def _run_tools(self, loop: AgentLoop, action: RunTools) -> None:
        registry, snapshot, token = self.definition.registry, self.snapshot, self.token
        for call in action.calls:
            approved = loop.approval_of(call.id) is not None
            tool = registry.get(call.name)
            if isinstance(tool, SubAgentTool):
                done = await _unless_cancelled(self._delegate(tool, call.id, call.arguments), token)
                if done is None:
                    return
                if done.text is not None:
                    loop.apply_tool_result(call.id, done.text)
                continue
            work = execute_call(registry, call, approved=approved, max_output=snapshot.limits.max_tool_output)
            result = await _unless_cancelled(work, token)
            if result is None:
                return
            loop.apply_tool_result(call.id, result)

    async def _delegate(self, tool: SubAgentTool, call_id: str, arguments: str) -> Delegation:
        """Run (or resume) the sub-agent call's child inline; one that stops for a person is
        kept, with what waits in it, until the run's next `run()` takes the call up again."""
        children, name = self.children, child_id(self.children.run_id, call_id)
        run = ChildRun(
            id=name,
            session=children.waiting.pop(name, AgentSession()),
            responses=children.routed.pop(name, []),
            cancellation=self.token,
            requested_by=self.requested_by,
        )
        done = await tool.delegate(parse_arguments(arguments), inherited_gates(self.snapshot), self.depth, run)
        if done.text is None:
            children.waiting[run.id] = run.session
            self.parked.extend(done.waiting)
        return done


async def _unless_cancelled(work: Awaitable[T], token: CancellationToken) -> T | None:
    task = asyncio.ensure_future(work)
    stop = asyncio.ensure_future(token.wait())
    await asyncio.wait({task, stop}, return_when="FIRST_COMPLETED")
    stop.cancel()
    if task.done():
        return task.result()
    task.cancel()
    return None


def as_messages(messages: str | ChatMessage | Sequence[ChatMessage]) -> list[ChatMessage]:
    """What `run()` takes, as a transcript: a text is one user message."""
    if isinstance(messages, str):
        return [ChatMessage.user(messages)]
    if isinstance(messages, ChatMessage):
        return [messages]
    return list(messages)


def now() -> datetime:
    """The in-process clock (a durable run's is the workflow's)."""
    return datetime.now(UTC)
