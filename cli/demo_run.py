"""`signoff demo`: a dev server if needed, an in-process worker, a model, and a run to approve."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import sys
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from temporalio.client import Client

from signoff.chat.base import ChatClient
from signoff.cli.args import identity
from signoff.cli.demo import configured_model, demo_banner, demo_model, demo_workspace
from signoff.cli.follow import (
    Decider,
    Prompter,
    auto_approver,
    elsewhere,
    follow_to_end,
)
from signoff.cli.inbox import inbox_beside
from signoff.cli.runs import announce, start
from signoff.cli.style import Console
from signoff.cli.talk import CommandError
from signoff.cli.who import Who
from signoff.contract import AgentRunInput
from signoff.defaults import default_agent
from signoff.errors import ConfigError
from signoff.links import ui_root
from signoff.runtime.connection import ConnectError, open_client
from signoff.runtime.devserver import EmbeddedServer
from signoff.tools.scope import WorkspaceScope

if TYPE_CHECKING:
    from signoff.cli.main import Context


def demo_decider(args: argparse.Namespace, console: Console) -> Decider:
    """--yes approves; a terminal asks; otherwise a decision made elsewhere is awaited."""
    if args.yes:
        return auto_approver(console, Who.from_args(args))
    if sys.stdin.isatty():
        return Prompter(console, Who.from_args(args))
    return elsewhere(console)


async def run_demo(client: Client, ctx: Context, args: argparse.Namespace, model: str,
                   chat: Callable[[], ChatClient], started: bool) -> int:
    """Serve the demo's run (and, with --inbox, the inbox beside it); on Ctrl-C cancel the run cleanly."""
    async with contextlib.AsyncExitStack() as stack:
        inbox = None
        if args.inbox:
            inbox = await stack.enter_async_context(inbox_beside(client, ctx, identity(args)[0] or "you"))
        return await _demo_run(client, ctx, args, model, chat, started, inbox)


async def _demo_run(client: Client, ctx: Context, args: argparse.Namespace, model: str,
                    chat: Callable[[], ChatClient], started: bool, inbox: str | None) -> int:  # fmt: skip
    from signoff.runtime.worker import build_worker  # the worker stack: only the demo needs it

    workspace, task_queue = demo_workspace(), f"signoff-demo-{uuid.uuid4().hex[:8]}"
    ui = ui_root(ctx.settings.address, ctx.ui_base)
    ctx.console.print(*demo_banner(ctx.console.style, ctx.settings.address, started, ui, model, workspace, task_queue,
                                   inbox))  # fmt: skip
    agents = {"default": default_agent(WorkspaceScope(workspace))}
    async with build_worker(client, agents, task_queue, default_client=chat):
        run_id = f"signoff-demo-{uuid.uuid4().hex[:8]}"
        handle = await start(client, AgentRunInput(prompt=args.prompt), run_id, task_queue)
        announce(ctx, handle.id)
        try:
            return await follow_to_end(handle, ctx, demo_decider(args, ctx.console))
        except asyncio.CancelledError:  # Ctrl-C: nobody will serve this task queue again
            ctx.console.print("", "Cancelling the demo run: no worker will serve it once the demo ends.")
            with contextlib.suppress(Exception):
                await handle.cancel()
                await asyncio.wait_for(handle.result(), timeout=10)
            raise


async def _temporal_for_demo(ctx: Context) -> tuple[Client, EmbeddedServer | None]:
    try:
        return await open_client(ctx.settings)
    except ConnectError as exc:  # it names the address itself
        raise CommandError(str(exc)) from None
    except (ConfigError, RuntimeError) as exc:
        raise CommandError(f"cannot reach or start Temporal at {ctx.settings.address}: {exc}") from None


async def cmd_demo(args: argparse.Namespace, ctx: Context) -> int:
    """One command on a fresh machine: server (if needed), worker, model, a run to approve."""
    try:
        config = configured_model()  # a bad LLM config fails before any server starts
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
