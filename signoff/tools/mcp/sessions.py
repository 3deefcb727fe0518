"""The live connections of one process (a worker, or an in-process agent) to its MCP servers.

One session per server configuration, opened on first use and shared by every run and
call after it (a JSON-RPC session carries many requests at once):

- A stdio server is started once and started again, on the next use, after it died: its
  end of the connection is watched, so a server that exits while idle is noticed before
  a call is sent to it. It gets the allow-listed environment of `run_command` plus its
  `env`, and runs as `SIGNOFF_TOOL_USER` when that is set (a worker that may switch users).
- A streamable HTTP session is reused likewise, and opened again once it has failed.
- Each session is held open by a task of its own (the SDK's transports are task-scoped);
  `aclose()` ends them all (the worker does so when it shuts down; stdio servers are
  stopped as the MCP specification says: stdin closed, then SIGTERM, then SIGKILL).

The protocol is the official `mcp` SDK's (`mcp.Client`); nothing here speaks it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import urllib.parse
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client import Transport
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from signoff.tools.base import ToolResult
from signoff.tools.mcp.bounded import MAX_MESSAGE_BYTES, MessageTooLarge, bounded_http_client, bounded_stdio
from signoff.tools.mcp.config import MCPServer
from signoff.tools.mcp.listing import annotations_of
from signoff.tools.mcp.results import input_required, tool_result
from signoff.tools.process import ToolUser, tool_environment

CONNECT_TIMEOUT = 30.0
"""Seconds to start (or reach) a server and finish the handshake."""
LIST_TIMEOUT = 30.0
"""Seconds to list a server's tools, every page."""
_MAX_LIST_PAGES = 50
_SESSION_GONE = "Session terminated"
"""The SDK's error for an HTTP 404 on a session it had (a stateful server dropped it, e.g. after
its idle timeout, or restarted): the request was refused unread, so it is sent again once on a
new session. Servers on the 2026-07-28 protocol are stateless and never answer so."""
_STOP_TIMEOUT = 10.0
"""Seconds a session is given to close (the SDK stops a stdio server within about 5)."""
_AS_USER = (
    "import os,sys;os.setgroups([]);os.setgid(int(sys.argv[2]));os.setuid(int(sys.argv[1]));"
    "os.execvp(sys.argv[3],sys.argv[3:])"
)
"""Starts a stdio server as the tool user: the SDK's stdio transport cannot, so a tiny Python
drops to that user and replaces itself with the server (as `subprocess` does for `run_command`)."""

log = logging.getLogger(__name__)


class MCPServerError(Exception):
    """A server could not be reached, or did not answer: the message says why (never a secret)."""


class MCPSessions:
    """Sessions to MCP servers, by server configuration (`MCPServer.key`).

    Args:
        connect_timeout: seconds to start or reach a server and complete the handshake.
    """

    def __init__(self, connect_timeout: float = CONNECT_TIMEOUT) -> None:
        self._connect_timeout = connect_timeout
        self._links: dict[str, _Link] = {}

    async def list_tools(self, server: MCPServer) -> list[types.Tool]:
        """Every tool the server lists; asked once more on a fresh session if the first fails.

        Raises:
            MCPServerError: the server cannot be reached or does not answer (the message says why).
        """
        link = self._link(server)
        reused = link.is_open
        try:
            return await self._list(link)
        except MCPServerError:
            if not reused:
                raise
            link.drop()  # a session that went stale while idle: one fresh try
            return await self._list(link)

    def is_open(self, server: MCPServer) -> bool:
        """Whether a live session to `server` is held (a dead stdio server's is not)."""
        link = self._links.get(server.key)
        return link is not None and link.is_open

    async def declared(self, server: MCPServer, tool: str) -> dict[str, Any] | None:
        """The annotations of `tool` as `server` lists it now; None when it does not list it.

        Listed afresh every time (the caller is about to run a call no person approved): a
        server may change a tool after a run listed it, and tells a client only if it wants
        to, so an earlier listing, this process's or the run's, cannot vouch for it.

        Raises:
            MCPServerError: the server could not be listed.
        """
        listed = {t.name: t for t in await self.list_tools(server)}
        return annotations_of(listed[tool].annotations) if tool in listed else None

    async def call(
        self,
        server: MCPServer,
        tool: str,
        arguments: dict[str, Any],
        *,
        answers: dict[str, Any] | None = None,
        state: str | None = None,
    ) -> ToolResult:
        """Call the server's tool `tool`; every failure is a `ToolResult.error` saying what
        happened, and whether the call may have taken effect. A server that asks a question
        first (`input_required`, protocol 2026-07-28) answers a `ToolResult` with `input` set;
        `answers` (MCP `ElicitResult`s by the server's keys) and `state` (its `requestState`,
        verbatim) retry such a call with a person's answer."""
        link = self._link(server)
        for attempt in (1, 2):
            try:
                client = await link.client()
            except MCPServerError as exc:
                return ToolResult.error(f"MCP server {server.name!r} is not available ({exc}); the call was not made")
            try:
                result = await client.session.call_tool(
                    tool,
                    arguments,
                    read_timeout_seconds=server.timeout_seconds,
                    input_responses=_responses(answers),
                    request_state=state,
                    allow_input_required=True,
                )
            except MCPError as exc:
                if exc.code == types.INVALID_REQUEST and exc.message == _SESSION_GONE and attempt == 1:
                    link.drop()
                    continue
                return self._failed(server, link, exc)
            except Exception as exc:  # the transport, or a result that does not validate: the model is told
                link.drop()
                return ToolResult.error(f"MCP server {server.name!r}: {describe_error(exc)}")
            if isinstance(result, types.InputRequiredResult):
                return input_required(server.name, result)
            return tool_result(result)
        raise AssertionError("unreachable")

    @staticmethod
    def _failed(server: MCPServer, link: _Link, exc: MCPError) -> ToolResult:
        if exc.code == types.CONNECTION_CLOSED and link.ended_because is not None:
            link.drop()
            return ToolResult.error(
                f"MCP server {server.name!r}: {link.ended_because}; the session was ended (the server is "
                "started again for the next call) and whether the call took effect is unknown"
            )
        if exc.code == types.CONNECTION_CLOSED:
            link.drop()
            return ToolResult.error(
                f"MCP server {server.name!r} closed the connection before answering (a stdio server's "
                "process ended); whether the call took effect is unknown"
            )
        if exc.code == types.REQUEST_TIMEOUT:
            return ToolResult.error(
                f"MCP server {server.name!r} did not answer within {server.timeout_seconds:g} s; "
                "whether the call took effect is unknown"
            )
        if exc.code == types.PARSE_ERROR:  # an answer that could not be read (too large, not JSON-RPC)
            return ToolResult.error(f"MCP server {server.name!r}: {exc.message}")
        return ToolResult.error(exc.message or f"MCP error {exc.code}")

    async def aclose(self) -> None:
        """Close every session (stdio servers are stopped)."""
        links, self._links = list(self._links.values()), {}
        await asyncio.gather(*(link.aclose() for link in links))

    async def _list(self, link: _Link) -> list[types.Tool]:
        client = await link.client()
        tools: list[types.Tool] = []
        cursor: str | None = None
        try:
            async with asyncio.timeout(LIST_TIMEOUT):
                for _ in range(_MAX_LIST_PAGES):
                    page = await client.list_tools(cursor=cursor)
                    tools += page.tools
                    cursor = page.next_cursor
                    if cursor is None:
                        break
        except TimeoutError:
            raise MCPServerError(f"it did not list its tools within {LIST_TIMEOUT:g} s") from None
        except Exception as exc:
            raise MCPServerError(describe_error(exc)) from None
        return tools

    def _link(self, server: MCPServer) -> _Link:
        link = self._links.get(server.key)
        if link is None:
            link = self._links[server.key] = _Link(server, self._connect_timeout)
        return link


class _Link:
    """One server's session, held open by a task of its own, opened again when it has ended."""

    def __init__(self, server: MCPServer, connect_timeout: float) -> None:
        self.server = server
        self._connect_timeout = connect_timeout
        self._client: Client | None = None
        self._owner: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._dropped = asyncio.Event()
        self._lock = asyncio.Lock()
        self.ended_because: str | None = None
        """Why the transport ended the session (a message over the limit), if it did."""

    @property
    def is_open(self) -> bool:
        return self._client is not None and not self._dropped.is_set()

    async def client(self) -> Client:
        """The live session, opened (again) if there is none or it has ended.

        Raises:
            MCPServerError: the server could not be started or reached, or did not complete
                the handshake in time.
        """
        async with self._lock:
            if self._client is not None and not self._dropped.is_set():
                return self._client
            # One task holds each session: the SDK's transports must close in the task that opened them.
            await self.aclose()
            self._stop, self._dropped, self.ended_because = asyncio.Event(), asyncio.Event(), None
            ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
            self._owner = asyncio.create_task(self._hold(ready), name=f"mcp session {self.server.name}")
            try:
                async with asyncio.timeout(self._connect_timeout):
                    self._client = await asyncio.shield(ready)
            except TimeoutError:
                await self._cancel()
                seconds = self._connect_timeout
                raise MCPServerError(f"it did not complete the MCP handshake within {seconds:g} s") from None
            except BaseException:
                await self._cancel()
                raise
            return self._client

    def drop(self) -> None:
        """Forget the session: the next use opens a new one."""
        self._dropped.set()

    async def aclose(self) -> None:
        """End the session, if any (its task closes the transport; cancelled if it takes too long)."""
        owner = self._owner
        if owner is None:
            return
        self._stop.set()
        await asyncio.wait({owner}, timeout=_STOP_TIMEOUT)
        await self._cancel()

    async def _cancel(self) -> None:
        owner, self._owner, self._client = self._owner, None, None
        if owner is not None and not owner.done():
            owner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await owner

    def _ended(self, why: str) -> None:
        self.ended_because = why

    async def _hold(self, ready: asyncio.Future[Client]) -> None:
        stop, dropped = self._stop, self._dropped
        try:
            async with Client(_watched(_transport(self.server), dropped, self._ended)) as client:
                ready.set_result(client)
                waits = {asyncio.ensure_future(stop.wait()), asyncio.ensure_future(dropped.wait())}
                try:
                    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for wait in waits:
                        wait.cancel()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(MCPServerError(describe_error(exc, self.server)))
            elif not isinstance(exc, asyncio.CancelledError):
                log.debug("MCP session %s ended: %s", self.server.name, describe_error(exc, self.server))
            if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt | SystemExit):
                raise
        finally:
            dropped.set()


def _responses(answers: dict[str, Any] | None) -> types.InputResponses | None:
    """The SDK's `InputResponses` of a person's answers (`ElicitResult` JSON by key)."""
    if answers is None:
        return None
    return {key: types.ElicitResult.model_validate(value) for key, value in answers.items()}


def _transport(server: MCPServer) -> Transport:
    """The SDK transport to `server`: its process over stdio, or streamable HTTP."""
    if server.url is not None:
        # The read timeout also bounds the idle stream of server messages: at least the SDK's 300 s.
        read = max(300.0, server.timeout_seconds)
        http = bounded_http_client(headers=server.headers, timeout=httpx2.Timeout(30.0, read=read))
        inner = streamable_http_client(server.url, http_client=http, max_sse_event_size=MAX_MESSAGE_BYTES)
        return _with_client(http, inner)
    assert server.command is not None
    env = tool_environment() | server.env
    command, args = server.command, list(server.args)
    user = ToolUser.from_env()
    if user is not None and not user.is_current:
        env |= user.identity_env()
        command, args = sys.executable, ["-I", "-S", "-c", _AS_USER, str(user.uid), str(user.gid), command, *args]
    return bounded_stdio(StdioServerParameters(command=command, args=args, env=env, cwd=server.cwd))


@contextlib.asynccontextmanager
async def _with_client(http: Any, inner: Transport) -> AsyncIterator[Any]:
    async with http, inner as streams:
        yield streams


@contextlib.asynccontextmanager
async def _watched(inner: Transport, dropped: asyncio.Event, ended: Callable[[str], None]) -> AsyncIterator[Any]:
    """`inner`, with its read stream watched: `dropped` is set when the server's end closes,
    and `ended` told why when the transport ends it (a message over the limit)."""
    async with inner as (read, write):
        yield _Watched(read, dropped, ended), write


class _Watched:
    """A transport's read stream that sets an event when the stream ends."""

    def __init__(self, inner: Any, dropped: asyncio.Event, ended: Callable[[str], None]) -> None:
        self._inner = inner
        self._dropped = dropped
        self._ended = ended

    @property
    def last_context(self) -> Any:  # the dispatcher reads it from context-carrying streams
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        try:
            item: SessionMessage | Exception = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._dropped.set()
            raise
        if isinstance(item, MessageTooLarge):
            self._ended(str(item))
        return item

    def __aiter__(self) -> _Watched:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _Watched:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def describe_error(exc: BaseException, server: MCPServer | None = None) -> str:
    """What went wrong, from the innermost errors of an exception group; never a header value."""
    leaves = list(_leaves(exc))
    if any(isinstance(leaf, MCPError) and leaf.code == types.CONNECTION_CLOSED for leaf in leaves):
        return "the server closed the connection (a stdio server's process exited: see its stderr)"
    texts = []
    for leaf in leaves:
        if isinstance(leaf, FileNotFoundError) and server is not None and server.command:
            texts.append(f"cannot start {server.command!r}: no such file or directory")
        elif isinstance(leaf, MCPError):
            texts.append(leaf.message)
        elif isinstance(leaf, ValidationError):
            texts.append(_not_a_result(leaf))
        elif server is not None and server.url and type(leaf).__module__.startswith("httpx"):
            texts.append(f"cannot reach {_where(server.url)}: {leaf}")
        else:
            texts.append(f"{type(leaf).__name__}: {leaf}" if str(leaf) else type(leaf).__name__)
    return "; ".join(dict.fromkeys(texts)) or type(exc).__name__


def _not_a_result(exc: ValidationError) -> str:
    """A server's answer that does not fit the protocol, by field (the first few problems)."""
    problems = [f"{'.'.join(map(str, e['loc'])) or 'the answer'}: {e['msg']}" for e in exc.errors()[:3]]
    more = f" (and {exc.error_count() - 3} more)" if exc.error_count() > 3 else ""
    return f"its answer is not a valid MCP result ({'; '.join(problems)}{more})"


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


def _where(url: str) -> str:
    """The URL without credentials or query (either may hold a token)."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    return f"{parts.scheme}://{host}{f':{parts.port}' if parts.port else ''}{parts.path}"


__all__ = ["CONNECT_TIMEOUT", "LIST_TIMEOUT", "MCPServerError", "MCPSessions", "describe_error"]
