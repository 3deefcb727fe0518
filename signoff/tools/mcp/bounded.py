"""Transports to MCP servers in which every message a server sends is bounded.

A server is not trusted to answer with sizes a worker can hold: a tool result of
gigabytes would take the worker's memory, and the SDK's own stdio reader joins the
pieces of a long line again for every piece it reads (a 50 MB result took it minutes of
the worker's event loop). So:

- stdio: the server's process is spoken to here (the SDK's stdio transport cannot be given
  a limit), one newline-delimited JSON-RPC message at a time, each at most
  `MAX_MESSAGE_BYTES`. A longer one is not read on: the session gets `MessageTooLarge`
  and ends, so the calls waiting on it are told at once that their answer was dropped,
  and the next call starts the server again. Shutdown is the specification's (stdin
  closed; SIGTERM to the process group after `_STDIN_GRACE`, SIGKILL after `_TERM_GRACE`).
- streamable HTTP: a JSON response body over the limit is refused while it is read (the
  call is told; the session goes on), and so is an SSE event (the SDK's own limit, set to
  the same figure).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.abc
import httpx2
import mcp_types as types
from mcp import StdioServerParameters
from mcp.client._transport import TransportStreams
from mcp.client.stdio import get_default_environment
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""The largest message a server may send (a result with its images, a page of its tools).
What the model reads of a result is cut far shorter (`Limits.max_tool_output`)."""
_STDIN_GRACE = 2.0
_TERM_GRACE = 2.0
_REAP_TIMEOUT = 2.0
_CLOSED = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError)


class MessageTooLarge(Exception):
    """A server sent a message over `MAX_MESSAGE_BYTES`: it was dropped unread."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"it sent a message of more than {limit:,} bytes, which was dropped unread")


@contextlib.asynccontextmanager
async def bounded_stdio(
    params: StdioServerParameters, limit: int = MAX_MESSAGE_BYTES
) -> AsyncIterator[TransportStreams]:
    """The server `params` names, started in a process group of its own, as a transport."""
    env = get_default_environment() | (params.env or {})
    process = await anyio.open_process(
        [params.command, *params.args], env=env, cwd=params.cwd, stderr=sys.stderr, start_new_session=True
    )
    to_session, from_server = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    to_server, from_session = anyio.create_memory_object_stream[SessionMessage](0)

    async def read() -> None:
        assert process.stdout is not None
        with contextlib.suppress(*_CLOSED):
            async with to_session:
                async for message in _messages(process.stdout, limit):
                    await to_session.send(message)
                    if isinstance(message, MessageTooLarge):
                        return

    async def write() -> None:
        assert process.stdin is not None
        try:
            async with from_session:
                async for message in from_session:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(data.encode() + b"\n")
        except _CLOSED:
            await to_session.aclose()  # the server stopped reading: the session sees its end

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(read)
        tasks.start_soon(write)
        try:
            yield from_server, to_server
        finally:
            with anyio.CancelScope(shield=True):  # the process must not outlive a cancelled caller
                for stream in (from_server, to_server):
                    await stream.aclose()
                await _stop(process)
            tasks.cancel_scope.cancel()


async def _messages(stdout: anyio.abc.ByteReceiveStream, limit: int) -> AsyncIterator[SessionMessage | Exception]:
    """Each line of `stdout` parsed (an error for one that does not parse), until one is too long."""
    line = bytearray()
    async for chunk in stdout:
        *ended, rest = chunk.split(b"\n")
        for piece in ended:
            line += piece
            if len(line) > limit:
                yield MessageTooLarge(limit)
                return
            if line.strip():
                yield _parsed(bytes(line))
            line.clear()
        line += rest
        if len(line) > limit:
            yield MessageTooLarge(limit)
            return


def _parsed(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:  # not JSON-RPC (or not UTF-8): the session reports it and goes on
        return exc


async def _stop(process: anyio.abc.Process) -> None:
    """Stdin closed, a grace period, then the whole process group ended; its pipes closed."""
    assert process.stdin is not None
    with contextlib.suppress(*_CLOSED):
        await process.stdin.aclose()
    if not await _exited(process, _STDIN_GRACE):
        await terminate_posix_process_tree(process, _TERM_GRACE)
    with anyio.move_on_after(_REAP_TIMEOUT), contextlib.suppress(*_CLOSED):
        await process.aclose()


async def _exited(process: anyio.abc.Process, timeout: float) -> bool:
    """Whether the process ended within `timeout` (its return code, not `wait()`, which on
    asyncio also waits for its pipes, held open by any child it left)."""
    with anyio.move_on_after(timeout):
        while process.returncode is None:
            await anyio.sleep(0.01)
    return process.returncode is not None


class BodyTooLarge(httpx2.StreamError):
    """A response body over the limit (a `StreamError`: the SDK fails the one request it answered)."""

    def __init__(self, limit: int) -> None:
        RuntimeError.__init__(self, f"the server's answer is more than {limit:,} bytes; it was dropped unread")


class _BoundedBody(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > self._limit:
                raise BodyTooLarge(self._limit)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


def bounded_http_client(limit: int = MAX_MESSAGE_BYTES, **options: Any) -> httpx2.AsyncClient:
    """An `httpx2.AsyncClient` (with `options`) whose JSON response bodies are cut off past
    `limit` bytes (a response hook, so it holds whichever transport or proxy a request takes)."""

    async def bounded(response: httpx2.Response) -> None:
        if response.headers.get("content-type", "").lower().startswith("application/json"):
            assert isinstance(response.stream, httpx2.AsyncByteStream)
            response.stream = _BoundedBody(response.stream, limit)

    return httpx2.AsyncClient(event_hooks={"response": [bounded]}, **options)


__all__ = ["MAX_MESSAGE_BYTES", "BodyTooLarge", "MessageTooLarge", "bounded_http_client", "bounded_stdio"]
