"""`signoff inbox`: serve the inbox, the web page where people decide (`signoff/inbox/`)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import socket
import sys
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from signoff.config.environment import INBOX_ALLOWED_HOSTS_ENV, INBOX_SCOPE_ENV, INBOX_URL_ENV
from signoff.errors import CommandError, ConfigError
from signoff.signing.derived import ServedRuns
from signoff.views.links import inbox_root, ui_root

if TYPE_CHECKING:
    import uvicorn
    from temporalio.client import Client

    from signoff.cli.main import CommandContext

DEFAULT_INBOX_PORT = 8765


def add_inbox_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("inbox", parents=[common], help="serve the inbox: a web page to decide waiting calls, live")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=DEFAULT_INBOX_PORT, help=f"port (default {DEFAULT_INBOX_PORT})")
    p.add_argument(
        "--local-user",
        metavar="NAME",
        help="for one person on this machine: everyone who reaches the page is NAME (loopback only)",
    )


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def inbox_server(
    client: Client, ctx: CommandContext, sock: socket.socket, local_user: str | None
) -> tuple[uvicorn.Server, str]:
    """The inbox for `ctx`'s namespace as a uvicorn server for the bound `sock`, not yet
    serving (`serve(sockets=[sock])`), and what it is.

    Raises:
        CommandError: its settings cannot work (who is deciding, the signing key, its hosts).
    """
    import uvicorn

    from signoff.inbox import InboxSigner, WhoIsAsking, inbox_app
    from signoff.inbox.slack import SlackSettings
    from signoff.runtime.hosts import AllowedHosts

    host, port = sock.getsockname()[:2]
    if local_user is not None and not _loopback(host):
        raise CommandError(
            f"--local-user is for one person on this machine: listen on 127.0.0.1, not {host} "
            "(for more people, put the inbox behind a sign-in proxy)",
            2,
        )
    try:
        who = WhoIsAsking.from_env(ctx.env, local_user)
        signer = InboxSigner.from_env(ctx.env)
        hosts = AllowedHosts.of((host, port), inbox_root(ctx.env), ctx.env.read(INBOX_ALLOWED_HOSTS_ENV))
        scope = ctx.env.read(INBOX_SCOPE_ENV)
        slack = SlackSettings.from_env(ctx.env)
    except ConfigError as exc:
        raise CommandError(str(exc), 2) from None
    served = ServedRuns.from_env(ctx.env)
    app = inbox_app(
        client,
        who,
        signer,
        hosts=hosts,
        namespace=ctx.settings.namespace,
        public_url=inbox_root(ctx.env),
        ui_root=ui_root(ctx.settings.address, ctx.ui_base, ctx.env),
        scope=scope,
        served=served,
        slack=slack,
    )
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=2, proxy_headers=False)
    queues = ", ".join(served.task_queues)
    signing = (
        f"{signer.describe()}, for AgentRun runs on task queue(s) {queues}"
        if signer
        else "no signing key: verified policies cannot be met from it"
    )
    what = f"namespace {ctx.settings.namespace}; {who.describe()}; {signing}; scope {scope}; hosts {hosts.describe()}"
    what += f"; {slack.describe()}" if slack else ""
    return uvicorn.Server(config), what


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to `host:port`, or to a free port when that one is taken."""
    from signoff.runtime.hosts import bound_socket

    try:
        return bound_socket(host, port)
    except OSError:
        return bound_socket(host, 0)


@contextlib.asynccontextmanager
async def inbox_beside(client: Client, ctx: CommandContext, user: str) -> AsyncIterator[str]:
    """The inbox for `user` on 127.0.0.1 (port 8765, or a free one) while the block runs; its URL."""
    sock = listening_socket("127.0.0.1", DEFAULT_INBOX_PORT)
    server, _ = inbox_server(client, ctx, sock, user)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await asyncio.wait_for(task, timeout=5)
        sock.close()


async def cmd_inbox(args: argparse.Namespace, ctx: CommandContext) -> int:
    """Serve until interrupted."""
    from signoff.runtime.hosts import bound_socket

    client = await ctx.connect()
    try:
        sock = bound_socket(args.host, args.port)
    except OSError as exc:  # the port is taken, or the address is not this machine's
        print(f"signoff: the inbox could not listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    with sock:
        server, what = inbox_server(client, ctx, sock, args.local_user)
        public = inbox_root(ctx.env)
        port = sock.getsockname()[1]
        url = public or f"http://{_url_host(_reachable(args.host))}:{port}"
        print(f"signoff: inbox on {url} ({what})" + ("" if public else _link_hint(args.host, url)), flush=True)
        try:
            await server.serve(sockets=[sock])
        except (OSError, SystemExit) as exc:
            print(f"signoff: the inbox stopped serving on {args.host}:{args.port}: {exc}", file=sys.stderr)
            return 1
        except asyncio.CancelledError:
            return 130
    return 0 if server.started else 1


def _reachable(host: str) -> str:
    """An address a browser can name: a wildcard bind (`0.0.0.0`, `::`) is reached, here, as
    loopback; `0.0.0.0:PORT` names no address, and the inbox answers it 421."""
    return {"0.0.0.0": "127.0.0.1", "::": "::1", "[::]": "::1"}.get(host, host)


def _link_hint(host: str, url: str) -> str:
    if _reachable(host) == host:
        return f"\nsignoff: set {INBOX_URL_ENV}={url} for workers and the CLI to link to it"
    return (
        f"\nsignoff: listening on every address; from other machines it answers the host of"
        f" {INBOX_URL_ENV} (set it to the URL people open, for workers and the CLI to link to it)"
        " or a name in SIGNOFF_INBOX_ALLOWED_HOSTS, and 421 to any other"
    )


def _url_host(host: str) -> str:
    """`host` as a URL names it: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
