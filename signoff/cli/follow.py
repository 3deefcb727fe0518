"""Following a run: its events as they come, and approval requests handed to a decider.

A request is shown as the run holds it (the `pending_approvals` query, whole: the event
feed may cut large values short), recorded as shown, and decided bound to its digest.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from temporalio.client import Client, WorkflowFailureError
from temporalio.service import RPCError

from signoff.approval.requests import ToolApprovalRequest, ToolApprovalResponse
from signoff.cli.calls import approval_block, approval_prompt
from signoff.cli.input import Answer, LineReader, parse_answer
from signoff.cli.render import (
    final_text_seqs,
    gated_call_seqs,
    painted_event,
    render_result,
)
from signoff.cli.style import Console
from signoff.cli.who import Who
from signoff.cli.workers import describe_run, no_worker
from signoff.contract import TOPIC_TOKENS, AgentRunResult
from signoff.errors import CommandError, RunPaused
from signoff.messages import ApprovalDecisionEvent, ApprovalRequestEvent, TextEvent
from signoff.operator import run_client
from signoff.operator.run_client import Handle, Seen
from signoff.operator.stream import TurnText, follow
from signoff.views.links import inbox_root

if TYPE_CHECKING:
    from signoff.cli.main import CommandContext

POLL_SECONDS = 0.5
DecideCall = Callable[[Handle, ToolApprovalRequest], Awaitable[None]]


async def decide(handle: Handle, console: Console, request: ToolApprovalRequest, answer: Answer, who: Who) -> None:
    """Submit one answer, bound to the call as shown (signed, for a verified call, when a key
    is set); its decision event will show, a refusal shows now."""
    try:
        run = await run_client.handle_facts(handle) if who.signs(request) else None
        response = who.decision(
            request,
            ToolApprovalResponse(
                call_id=request.call_id,
                approved=answer.approved,
                reason=answer.reason,
                arguments_digest=request.arguments_digest or None,
            ),
            run,
        )
        await run_client.submit(handle, [response])
    except CommandError as exc:
        console.print(console.style.paint(f"not accepted: {exc}", "red"))


async def wait_until_decided(handle: Handle, call_id: str) -> None:
    """Return once `call_id` is no longer pending (decided in the UI, another terminal...)."""
    while True:
        with contextlib.suppress(CommandError):  # a worker restarting: ask again
            if call_id not in [r.call_id for r in await run_client.pending(handle)]:
                return
        await asyncio.sleep(POLL_SECONDS)


class Follower:
    """Prints a run's events as they come and hands approval requests to a decider."""

    def __init__(
        self, handle: Handle, ctx: CommandContext, decider: DecideCall | None, client: Client | None = None
    ) -> None:
        self.handle, self.ctx, self.decider, self.client = handle, ctx, decider, client
        self.console = ctx.console
        self.seq = 0
        self.waiting: set[str] = set()
        self.warned = False

    async def run(self) -> Any:
        """Follow until the run closes; its raw result (WorkflowFailureError if it failed)."""
        result = asyncio.ensure_future(self.handle.result())
        try:
            while True:
                closed = result.done()  # read before the last poll, so no event is missed
                await self._show(await self._events())
                if closed:
                    return result.result()
                label = f"waiting for a decision on {', '.join(sorted(self.waiting))}" if self.waiting else "working"
                await self.console.spinner.wait(POLL_SECONDS, label, until=result)
        finally:
            result.cancel()

    async def _events(self) -> list[Seen]:
        try:
            events = await run_client.events(self.handle, self.seq)
        except CommandError as exc:
            if not self.warned:
                why = await self._why_silent(exc)
                self.console.print(self.console.style.paint(f"(no events yet: {why}; still waiting)", "dim"))
                self.warned = True
            return []
        self.warned = False  # if it falls silent again, say so again
        return events

    async def _why_silent(self, exc: CommandError) -> str:
        """Why the run does not answer: no worker polls its task queue, it is paused, or what the query said."""
        if self.client is not None and not isinstance(exc, RunPaused):
            try:
                info = await describe_run(self.client, self.handle.id)
            except CommandError:
                return str(exc)
            if (problem := await no_worker(self.client, info.task_queue)) is not None:
                return problem
        return str(exc)

    async def _show(self, events: list[Seen]) -> None:
        # Shown once, elsewhere: the final answer with the result, a gated call as its request.
        hidden = final_text_seqs(events) | gated_call_seqs(events)
        decided = {e.event.record.call_id for e in events if isinstance(e.event, ApprovalDecisionEvent)}
        for seen in events:
            self.seq = seen.seq + 1
            if seen.seq in hidden or seen.event is None:
                continue
            event = seen.event
            if isinstance(event, ApprovalRequestEvent) and event.request.call_id not in decided:
                await self._request(event.request)
                continue
            if isinstance(event, ApprovalDecisionEvent):
                self.waiting.discard(event.record.call_id)
            self.console.print(painted_event(event, self.console.style, self.console.width))

    async def _request(self, announced: ToolApprovalRequest) -> None:
        console, ctx = self.console, self.ctx
        try:
            request = next((r for r in await run_client.pending(self.handle) if r.call_id == announced.call_id), None)
        except CommandError:
            request = None  # no worker to answer now: wait, and show what the event says
        if request is None:
            console.print(painted_event(ApprovalRequestEvent(request=announced), console.style, console.width))
            self.waiting.add(announced.call_id)
            return
        self.waiting.add(request.call_id)
        console.print(
            *approval_block(
                request,
                self.handle.id,
                ctx.link(self.handle.id),
                console.style,
                ctx.options,
                console.width,
                inbox_root(ctx.env),
            )
        )
        ctx.shown.record(self.handle.id, [request])
        if self.decider is not None:
            await self.decider(self.handle, request)


class StreamFollower(Follower):
    """`signoff watch`: the run's Workflow Stream (operator/stream.py), the model's text as it
    comes and the events as they are recorded; a broken connection is taken up again from the
    offset after the last item shown, so nothing is shown twice or missed."""

    async def run(self) -> Any:
        assert self.client is not None
        console, texts = self.console, TurnText()
        offset, open_turn, streamed = 0, None, set()
        while True:
            try:
                async for item in follow(self.client, self.handle.id, offset):
                    offset = item.offset + 1
                    if item.topic == TOPIC_TOKENS:
                        turn, delta, over = texts.add(item.data)
                        if not delta:
                            continue
                        if turn != open_turn or over:
                            head = console.style.paint("assistant (again):" if over else "assistant:", "bold")
                            console.write(("\n" if open_turn is not None else "") + head + " ")
                            open_turn = turn
                        streamed.add(turn)
                        console.write(delta)
                        continue
                    if open_turn is not None:
                        console.print("")
                        open_turn = None
                    seen = run_client.parse_event(item.data)
                    if isinstance(seen.event, TextEvent) and streamed:
                        self.seq = seen.seq + 1  # shown as it came
                        continue
                    await self._show([seen])
                break
            except (RPCError, OSError) as exc:
                console.print(console.style.paint(f"(the stream broke off: {exc}; again from offset {offset})", "dim"))
                await asyncio.sleep(POLL_SECONDS)
        if open_turn is not None:
            console.print("")
        return await self.handle.result()


class InputEnded(Exception):
    """Standard input ended at a prompt whose owner ends with it (`signoff demo`)."""


class Prompter:
    """Decides at the prompt: a line of standard input per call (a terminal or not).

    While it waits for the line it also watches the run, so a decision made elsewhere
    ends the question; once input ends it leaves the decision to others, or (`end_on_eof`)
    raises InputEnded.
    """

    def __init__(self, console: Console, who: Who, reader: LineReader | None = None, end_on_eof: bool = False) -> None:
        self.console, self.who = console, who
        self.reader = reader or LineReader()
        self.echo = not sys.stdin.isatty()
        self.end_on_eof = end_on_eof

    async def __call__(self, handle: Handle, request: ToolApprovalRequest) -> None:
        while (line := await self._ask(handle, request)) is not None:
            if (answer := parse_answer(line)) is not None:
                await decide(handle, self.console, request, answer, self.who)
                return

    async def _ask(self, handle: Handle, request: ToolApprovalRequest) -> str | None:
        if self.reader.at_eof:
            return None
        self.console.write(approval_prompt(request, self.console.style, self.console.width))
        line = asyncio.ensure_future(self.reader.readline())
        gone = asyncio.ensure_future(wait_until_decided(handle, request.call_id))
        done, _ = await asyncio.wait({line, gone}, return_when=asyncio.FIRST_COMPLETED)
        answer = line.result() if line in done else None
        line.cancel()
        gone.cancel()
        if answer is not None:
            if self.echo:
                self.console.print(answer)  # piped answers are not echoed by a terminal: show them
            return answer
        if gone not in done and self.end_on_eof:
            raise InputEnded("standard input ended")
        why = "decided elsewhere" if gone in done else "no more input; waiting for a decision made elsewhere"
        self.console.print("", self.console.style.paint(f"({why})", "dim"))
        return None


def auto_approver(console: Console, who: Who) -> DecideCall:
    """Approves every request as shown (`demo --yes`)."""

    async def approve(handle: Handle, request: ToolApprovalRequest) -> None:
        console.print(console.style.paint("approving automatically (--yes)", "dim"))
        await decide(handle, console, request, Answer(approved=True), who)

    return approve


def elsewhere(console: Console) -> DecideCall:
    """Leaves the decision to the Web UI or another terminal, and says so."""

    async def wait(handle: Handle, request: ToolApprovalRequest) -> None:
        console.print(
            console.style.paint(
                "waiting for a decision made elsewhere (the inbox, the Web UI or another terminal); Ctrl-C to stop",
                "dim",
            )
        )

    return wait


async def follow_to_end(
    handle: Handle,
    ctx: CommandContext,
    decider: DecideCall | None,
    client: Client | None = None,
    follower: type[Follower] = Follower,
) -> int:
    """Follow a run, then show its result; 1 when the run failed. With `client`, a run nobody
    answers for is explained (no worker polls its task queue)."""
    style = ctx.console.style
    try:
        raw = await follower(handle, ctx, decider, client).run()
    except WorkflowFailureError as exc:
        ctx.console.print(style.paint(f"the run failed: {run_client.failure_text(exc)}", "red", "bold"))
        return 1
    except RPCError as exc:
        raise CommandError(run_client.rpc_text(exc, handle.id)) from None
    ctx.console.print("", *render_result(AgentRunResult.model_validate(raw), style, ctx.console.width))
    return 0


async def follow_or_leave(
    handle: Handle,
    ctx: CommandContext,
    decider: DecideCall | None,
    client: Client | None = None,
    follower: type[Follower] = Follower,
) -> int:
    """`follow_to_end`; on Ctrl-C, say that the run goes on and how to follow it again."""
    try:
        return await follow_to_end(handle, ctx, decider, client, follower)
    except asyncio.CancelledError:
        ctx.console.print("", f"The run goes on. Follow it again with: signoff watch {handle.id}{ctx.options}")
        raise
