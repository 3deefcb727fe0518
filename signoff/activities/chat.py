"""Where the model is called: one streamed model turn of a durable run (`signoff.chat`).

The first turn of a run takes the agent's snapshot (listing its MCP servers' tools) and
returns it, to be recorded in history, with the MCP servers it could not reach; later
turns name it by digest. Which of the answer's calls need approval is
decided here, worker-side, with the run's snapshot (`signoff.agent.gate`), and so is each
gated call's preview (`signoff.tools.preview.gather`). What the model said is checked
first (`signoff.loop.answer`: unique, well-formed call ids; texts that can be recorded),
and only the calls within the per-turn limit are gated and previewed. An answer too large
to record fails the run at once rather than being retried: every retry would be another
billed request with the same outcome.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio.exceptions import ApplicationError

from signoff.activities.agents import ServedAgents, Taken
from signoff.activities.heartbeat import heartbeating
from signoff.activities.memory import RunMemory
from signoff.activities.models import ChatInput, ChatTurn, Requester
from signoff.activities.tokens import published_tokens
from signoff.activities.tool import Callers
from signoff.agent.gate import gated_call_ids
from signoff.agent.snapshot import RunSnapshot
from signoff.approval.authority import requester_problem
from signoff.chat.base import ChatOptions
from signoff.errors import ProviderError
from signoff.loop.answer import checked_answer, within_limit
from signoff.loop.limits import size_over, too_large
from signoff.messages import ChatMessage, ToolCall
from signoff.tools.preview.gather import previews
from signoff.tools.registry import ToolRegistry


async def model_turn(
    served: ServedAgents, memory: RunMemory, callers: Callers, input: ChatInput, budget: int | None
) -> ChatTurn:
    """One model turn: the transcript from memory, the model's answer, its gated calls.

    When the answer has calls that need approval and the tool activity will ask the server
    about the run to run them (`_asks_the_server`), it is asked now, in the background, whether
    the run is a genuine AgentRun of this task queue, so the tool activity finds it known and
    neither the pause nor the approval waits for it; other turns do not ask."""
    client = served.client(input.agent)
    transcript = await memory.transcript(input.transcript)
    snapshot, registry, first = await _snapshot(served, input, transcript)
    system = [ChatMessage.system(snapshot.instructions)] if snapshot.instructions else []
    options = ChatOptions(model=input.model, temperature=input.temperature)
    try:
        async with heartbeating(), published_tokens(input.stream_turn) as tokens:
            on_text = tokens.on_text if tokens is not None else None
            response = await client.complete(system + transcript, snapshot.specs, options, on_text=on_text)
    except ProviderError as exc:
        raise provider_failure(exc) from None
    # From here on nothing the model said may fail the activity: a retry is another paid request.
    response = checked_answer(response, len(transcript))
    memory.keep_answer(response.assistant_message())
    calls = within_limit(response.message, snapshot.limits.max_calls_per_turn)
    gated = gated_call_ids(snapshot, registry, calls)
    if gated and _asks_the_server(served, input.agent, registry, [c for c in calls if c.id in gated]):
        callers.prefetch()
    async with heartbeating():  # previews read files: bounded, but not instant
        shown = await previews(registry, calls, gated)
    turn = ChatTurn(response=response, gated=gated, previews=shown)
    if first is not None:
        turn.snapshot, turn.snapshot_digest, turn.unavailable = snapshot, first.digest, list(first.unavailable)
    _check_size(turn, budget)
    return turn


async def _snapshot(
    served: ServedAgents, input: ChatInput, transcript: list[ChatMessage]
) -> tuple[RunSnapshot, ToolRegistry | None, Taken | None]:
    """The run's snapshot, the tools to gate with, and (on the run's first turn, which takes
    the snapshot) what was taken."""
    if input.snapshot_digest is None:
        async with heartbeating():  # listing MCP servers may start their processes
            taken = await served.take(input.agent, transcript, input.inherited)
        check_requester(taken.snapshot, input.requester)
        return taken.snapshot, taken.registry, taken
    run = await served.resolve(input.agent, input.snapshot_digest)
    return run.snapshot, run.registry if run.own else None, None


def _asks_the_server(served: ServedAgents, agent: str, registry: ToolRegistry | None, gated: list[ToolCall]) -> bool:
    """Whether the tool activity will ask the server about this run to run one of the `gated`
    calls: under a verified policy of the worker's own (signatures name the run's chain), or for
    a snapshot this worker cannot reproduce (`registry` None)."""
    if registry is None:
        return True
    tools = [tool for call in gated if (tool := registry.get(call.name)) is not None]
    return any(served.configured(agent, tool).policy.verified for tool in tools)


def check_requester(snapshot: RunSnapshot, requester: Requester | None) -> None:
    """Fail the run at its start, before the model is asked, when its tools' policies need a
    verified requester it does not have (`authority.requester_problem`)."""
    requester = requester or Requester()
    problem = requester_problem(snapshot.policies, requester.verified, requester.bound)
    if problem is not None:
        raise ApplicationError(f"invalid input: {problem}", type="InvalidInput", non_retryable=True)


def _check_size(turn: ChatTurn, budget: int | None) -> None:
    size = size_over(turn, budget)
    if size is not None:
        assert budget is not None
        message = too_large("the model's answer", size, budget)
        raise ApplicationError(message, type="PayloadTooLarge", non_retryable=True)


def provider_failure(exc: ProviderError) -> ApplicationError:
    """Map a provider's status to Temporal's retry behaviour (the client never retries)."""
    if exc.retryable:
        delay = timedelta(seconds=exc.retry_after) if exc.retry_after else None
        return ApplicationError(str(exc), exc.status, type="ProviderError", next_retry_delay=delay)
    return ApplicationError(str(exc), exc.status, type="ProviderError", non_retryable=True)
