"""`signoff demo`: a dev server if needed, an in-process worker, a model, and a run to approve."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import signal
import sys
import uuid
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from temporalio.client import Client

from signoff.agent.defaults import default_agent
from signoff.chat.base import ChatClient
from signoff.cli.args import identity
from signoff.cli.demo import configured_model, demo_banner, demo_model, demo_workspace
from signoff.cli.follow import (
    DecideCall,
    InputEnded,
    Prompter,
    auto_approver,
    elsewhere,
    follow_to_end,
)
from signoff.cli.inbox import inbox_beside
from signoff.cli.runs import announce, start
from signoff.cli.style import Console
from signoff.cli.who import Who
from signoff.config.environment import Environment
from signoff.contract import AgentRunInput
from signoff.errors import CommandError, ConfigError
from signoff.operator.run_client import Handle
from signoff.runtime.connection import ConnectError, open_client
from signoff.runtime.devserver import EmbeddedServer
from signoff.tools.files.scope import WorkspaceScope
from signoff.views.links import ui_root

if TYPE_CHECKING:
    from signoff.cli.main import CommandContext


ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
"""Signals that end the demo like Ctrl-C does: its run is cancelled first."""


def demo_decider(args: argparse.Namespace, console: Console, env: Environment) -> DecideCall:
    """--yes approves; a terminal asks (and its end of input, Ctrl-D, ends the demo); otherwise a
    decision made elsewhere is awaited."""
    if args.yes:
        return auto_approver(console, Who.from_args(args, env))
    if sys.stdin.isatty():
        return Prompter(console, Who.from_args(args, env), end_on_eof=True)
    return elsewhere(console)


async def run_demo(
    client: Client,
    ctx: CommandContext,
    args: argparse.Namespace,
    model: str,
    chat: Callable[[], ChatClient],
    started: bool,
) -> int:
    """Serve the demo's run (and, with --inbox, the inbox beside it) until it finishes. However the
    demo ends otherwise (Ctrl-C, SIGTERM or SIGHUP, the end of input at its prompt, a reader of
    its output gone), it cancels the run first: nobody will serve its task queue again."""
    async with contextlib.AsyncExitStack() as stack:
        inbox = None
        if args.inbox:
            inbox = await stack.enter_async_context(inbox_beside(client, ctx, identity(args, ctx.env)[0] or "you"))
        return await _demo_run(client, ctx, args, model, chat, started, inbox)


async def _demo_run(
    client: Client,
    ctx: CommandContext,
    args: argparse.Namespace,
    model: str,
    chat: Callable[[], ChatClient],
    started: bool,
    inbox: str | None,
) -> int:
    from signoff.runtime.worker import build_worker  # the worker stack: only the demo needs it

    workspace, task_queue = demo_workspace(), f"signoff-demo-{uuid.uuid4().hex[:8]}"
    ui = ui_root(ctx.settings.address, ctx.ui_base, ctx.env)
    ctx.console.print(
        *demo_banner(ctx.console.style, ctx.settings.address, started, ui, model, workspace, task_queue, inbox)
    )
    agents = {"default": default_agent(WorkspaceScope(workspace))}
    async with build_worker(client, agents, task_queue, default_client=chat):
        run_id = f"signoff-demo-{uuid.uuid4().hex[:8]}"
        handle = await start(client, AgentRunInput(prompt=args.prompt), run_id, task_queue)
        finished, ended = False, _Ended()
        try:
            with ended.by_signals():
                announce(ctx, handle.id)
                code = await follow_to_end(handle, ctx, demo_decider(args, ctx.console, ctx.env), client)
            finished = True
            return code
        except InputEnded:
            return 1
        except asyncio.CancelledError:
            if ended.signal is None:
                raise  # Ctrl-C: asyncio turns it into KeyboardInterrupt
            current = asyncio.current_task()
            if current is not None:
                current.uncancel()  # the signal's cancellation is handled here
            return 128 + ended.signal  # as if the signal had ended the process
        finally:
            if not finished:
                await _cancel(ctx, handle)


async def _cancel(ctx: CommandContext, handle: Handle) -> None:
    with contextlib.suppress(OSError):  # the terminal, or the reader of a pipe, may be gone
        ctx.console.print("", "Cancelling the demo run: no worker will serve it once the demo ends.")
    with contextlib.suppress(Exception):
        await asyncio.shield(_cancelled(handle))


async def _cancelled(handle: Handle) -> None:
    await handle.cancel()
    await asyncio.wait_for(handle.result(), timeout=10)


class _Ended:
    """Which of `ENDING_SIGNALS` ended the demo, if one did."""

    def __init__(self) -> None:
        self.signal: int | None = None

    @contextlib.contextmanager
    def by_signals(self) -> Iterator[None]:
        """SIGTERM and SIGHUP cancel the running task, as Ctrl-C does, so the demo cleans up."""
        loop, task = asyncio.get_running_loop(), asyncio.current_task()
        assert task is not None

        def end(sig: int) -> None:
            self.signal = sig
            task.cancel()

        for sig in ENDING_SIGNALS:
            loop.add_signal_handler(sig, end, sig)
        try:
            yield
        finally:
            for sig in ENDING_SIGNALS:
                loop.remove_signal_handler(sig)


async def _temporal_for_demo(ctx: CommandContext) -> tuple[Client, EmbeddedServer | None]:
    try:
        return await open_client(ctx.settings)
    except ConnectError as exc:  # it names the address itself
        raise CommandError(str(exc)) from None
    except (ConfigError, RuntimeError) as exc:
        raise CommandError(f"cannot reach or start Temporal at {ctx.settings.address}: {exc}") from None


async def cmd_demo(args: argparse.Namespace, ctx: CommandContext) -> int:
    """One command on a fresh machine: server (if needed), worker, model, a run to approve."""
    try:
        config = configured_model(ctx.env)  # a bad LLM config fails before any server starts
    except ConfigError as exc:
        raise CommandError(str(exc), 2) from None
    with demo_model(config) as (model, chat):
        client, server = await _temporal_for_demo(ctx)
        try:
            ctx = dataclasses.replace(ctx, ui_base=server.ui_url) if server else ctx
            return await run_demo(client, ctx, args, model, chat, started=server is not None)
        finally:
            if server is not None:
                server.stop()
                ctx.console.print(ctx.console.style.paint("stopped the embedded Temporal dev server", "dim"))
