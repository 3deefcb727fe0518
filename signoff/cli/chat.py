"""`signoff chat [--id ID]`: a terminal client of a durable session (CONTRACT v4 "Sessions").

It starts a session (an `AgentRun` with `options.session: true`, waiting for its first
message) or reconnects to one, showing its transcript so far. Each line read is sent as
`send_message`; the answer is printed when the turn settles. A turn that parks shows each
waiting call whole, as `signoff run --wait` does, and asks `y/n/reason` (a decision made
elsewhere ends the question); the turn then goes on and its answer is printed. `/end`
ends the session (its result is printed); `/quit`, end of input or Ctrl-C leave it parked,
waiting for the next message, to come back to with `signoff chat --id ID`.
"""

from __future__ import annotations

import argparse
import asyncio
import uuid
from typing import TYPE_CHECKING, Any

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from signoff.cli.calls import approval_block
from signoff.cli.follow import POLL_SECONDS, Prompter
from signoff.cli.input import LineReader
from signoff.cli.render import render_result
from signoff.cli.who import Who
from signoff.contract import (
    STATUS_AWAITING,
    TURN_ENDED,
    TURN_RUNNING,
    WORKFLOW_TYPE,
    AgentRunInput,
    RunOptions,
    SessionView,
    TurnAnswer,
)
from signoff.errors import CommandError, UpdateNotTaken
from signoff.messages import ChatMessage
from signoff.operator import run_client
from signoff.operator.run_client import Handle
from signoff.views.links import inbox_root
from signoff.views.text import safe
from signoff.workflows.feed import start_attributes

if TYPE_CHECKING:
    from signoff.cli.main import CommandContext

END, QUIT = "/end", "/quit"
RESULT_CHARS = 200


async def cmd_chat(args: argparse.Namespace, ctx: CommandContext) -> int:
    client = await ctx.connect()
    who = Who.from_args(args, ctx.env)
    handle = await _open(client, args, ctx, who)
    chat = Chat(handle, ctx, who)
    try:
        return await chat.run()
    except _Left:
        return 0
    except asyncio.CancelledError:  # Ctrl-C
        chat.leave()
        raise


class Chat:
    """One terminal's conversation with a session."""

    def __init__(self, handle: Handle, ctx: CommandContext, who: Who) -> None:
        self.handle, self.ctx = handle, ctx
        self.console = ctx.console
        self.reader = LineReader()
        self.prompter = Prompter(ctx.console, who, self.reader)
        self.asked: set[str] = set()
        """Calls this terminal has answered (a quorum may still wait for others)."""

    async def run(self) -> int:
        await self._history()
        while True:
            view = await self._settled()
            if view.status == TURN_ENDED:
                return await self._ended()
            if view.status == STATUS_AWAITING:
                await self._approvals(view)
                continue
            self.console.write(self.console.style.paint("you> ", "bold"))
            line = await self.reader.readline()
            if line is None or line.strip() == QUIT:
                self.leave()
                return 0
            text = line.strip()
            if not text:
                continue
            if text == END:
                result = await run_client.end_session(self.handle)
                self.console.print(*render_result(result, self.console.style, self.console.width))
                return 0
            try:
                answer = await self._waiting(run_client.send_message(self.handle, line), "thinking")
            except UpdateNotTaken:
                raise
            except CommandError as exc:
                self.console.print(self.console.style.paint(f"not sent: {exc}", "red"))
                continue
            self._answer(answer)

    def leave(self) -> None:
        self.console.print(
            "",
            f"The session waits for your next message. Come back with: signoff chat --id {self.handle.id}"
            f"{self.ctx.options}",
        )

    async def _history(self) -> None:
        messages = await run_client.transcript(self.handle)
        if messages:
            self.console.print(self.console.style.paint(f"session {self.handle.id}, so far:", "dim"))
        for message in messages:
            self._message(message)

    def _message(self, message: ChatMessage) -> None:
        style = self.console.style
        if message.role == "user":
            self.console.print(style.paint("you> ", "bold") + safe(message.content or ""))
        elif message.role == "assistant":
            if message.content:
                self.console.print(style.paint("agent> ", "bold") + safe(message.content))
            for call in message.tool_calls or []:
                self.console.print(style.paint(f"  [{safe(call.id)}] {safe(call.name)} {safe(call.arguments)}", "dim"))
        elif message.role == "tool":
            first = (message.content or "").strip().splitlines()[:1]
            text = first[0][:RESULT_CHARS] if first else ""
            self.console.print(style.paint(f"  [{safe(message.tool_call_id or '')}] -> {safe(text)}", "dim"))

    def _answer(self, answer: TurnAnswer) -> None:
        if answer.text:
            self.console.print(self.console.style.paint("agent> ", "bold") + safe(answer.text))

    async def _settled(self) -> SessionView:
        """The session once its turn is not running (printing the answer of a turn that went on)."""
        view = await run_client.session(self.handle)
        if not view.session:
            raise CommandError(f"run {self.handle.id!r} is not a session; follow it with `signoff watch`")
        if view.status != TURN_RUNNING:
            return view
        view = SessionView.model_validate(await self._waiting(self._until_settled(), "thinking"))
        if view.status != TURN_ENDED:
            self._answer(TurnAnswer(status=view.status, text=view.text))
        return view

    async def _until_settled(self) -> SessionView:
        while True:
            view = await run_client.session(self.handle)
            if view.status != TURN_RUNNING:
                return view
            await asyncio.sleep(POLL_SECONDS)

    async def _approvals(self, view: SessionView) -> None:
        """Show each waiting call and ask about the ones not answered here yet; then wait for the turn."""
        fresh = [r for r in view.pending if r.call_id not in self.asked]
        if not fresh:  # answered here: others' votes, or a decision made elsewhere, move it on
            await self._waiting(self._until_changed(view), "waiting for other approvers")
            return
        ctx = self.ctx
        for request in fresh:
            self.console.print(
                *approval_block(
                    request,
                    self.handle.id,
                    ctx.link(self.handle.id),
                    self.console.style,
                    ctx.options,
                    self.console.width,
                    inbox_root(ctx.env),
                )
            )
            ctx.shown.record(self.handle.id, [request])
            await self.prompter(self.handle, request)
            if self.reader.at_eof:
                self.leave()
                raise _Left
            self.asked.add(request.call_id)

    async def _until_changed(self, view: SessionView) -> None:
        before = [(r.call_id, r.votes) for r in view.pending]
        while True:
            now = await run_client.session(self.handle)
            if now.status != STATUS_AWAITING or [(r.call_id, r.votes) for r in now.pending] != before:
                return
            await asyncio.sleep(POLL_SECONDS)

    async def _ended(self) -> int:
        self.console.print(self.console.style.paint("the session has ended", "dim"))
        return 0

    async def _waiting(self, work: Any, label: str) -> Any:
        task = asyncio.ensure_future(work)
        try:
            while not task.done():
                await self.console.spinner.wait(POLL_SECONDS, label, until=task)
            return task.result()
        finally:
            task.cancel()


class _Left(Exception):
    """Input ended at an approval: the session stays parked."""


async def _open(client: Client, args: argparse.Namespace, ctx: CommandContext, who: Who) -> Handle:
    """The session `--id` names (started if there is none), or a new one."""
    workflow_id = args.id or f"chat-{uuid.uuid4().hex[:8]}"
    if args.id:
        try:
            described = await client.get_workflow_handle(workflow_id).describe()
        except RPCError as exc:
            if exc.status != RPCStatusCode.NOT_FOUND:
                raise CommandError(run_client.rpc_text(exc, workflow_id)) from None
        else:
            if described.status != WorkflowExecutionStatus.RUNNING:
                raise CommandError(f"the session {workflow_id!r} has ended; see `signoff result {workflow_id}`")
            return client.get_workflow_handle(workflow_id)
    options: dict[str, Any] = {"session": True, "requester_token": who.requester(workflow_id)}
    if args.max_rounds is not None:
        options["max_rounds"] = args.max_rounds
    run_input = AgentRunInput(
        agent=args.agent, options=RunOptions(**{k: v for k, v in options.items() if v is not None})
    )
    try:
        handle = await client.start_workflow(
            WORKFLOW_TYPE,
            run_input,
            id=workflow_id,
            task_queue=args.task_queue or ctx.settings.task_queue,
            static_summary=f"{args.agent}: chat session",
            search_attributes=start_attributes(args.agent),
        )
    except WorkflowAlreadyStartedError:
        raise CommandError(f"a run with id {workflow_id!r} already exists; choose another --id") from None
    ctx.console.print(
        f"started session {ctx.console.style.paint(workflow_id, 'bold')} (/end ends it; /quit, Ctrl-D or Ctrl-C "
        f"leave it waiting: signoff chat --id {workflow_id}{ctx.options})"
    )
    return handle
