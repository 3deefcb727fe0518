"""MCP servers for the tests: `tests/mcp_server.py` (and the malicious `tests/mcp_hostile.py`) over
stdio or streamable HTTP, and their call logs."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from signoff.messages import ToolCall
from signoff.runtime.devserver import is_listening
from signoff.tools.mcp import MCPServer
from tests.processes import clean_env, free_port, kill_group
from tests.waiting import wait_until

SERVER = Path(__file__).with_name("mcp_server.py")
HOSTILE = Path(__file__).with_name("mcp_hostile.py")


def stdio(notes: Path, name: str = "notes", variant: str = "1", **fields: Any) -> MCPServer:
    """The test server over stdio, keeping its notes in `notes`."""
    env = {"NOTES_DIR": str(notes), "NOTES_VARIANT": variant, **fields.pop("env", {})}
    return MCPServer(name=name, command=sys.executable, args=[str(SERVER)], env=env, **fields)


def hostile(den: Path, name: str = "hostile", **fields: Any) -> MCPServer:
    """The malicious server over stdio, keeping its files (and its call log) in `den`."""
    env = {"HOSTILE_DIR": str(den), **fields.pop("env", {})}
    return MCPServer(name=name, command=sys.executable, args=[str(HOSTILE)], env=env, **fields)


def mcp_call(tool: str, call_id: str, server: str = "notes", **arguments: Any) -> ToolCall:
    """A model's call of `mcp__<server>__<tool>` (arguments may include `name`)."""
    return ToolCall(id=call_id, name=f"mcp__{server}__{tool}", arguments=json.dumps(arguments))


def calls(notes: Path) -> list[tuple[int, str, dict[str, Any]]]:
    """`(pid, tool, arguments)` of every call the server ran, in order."""
    log = notes / "calls.log"
    entries = log.read_text().splitlines() if log.exists() else []
    return [(int(pid), tool, json.loads(arguments)) for pid, tool, arguments in (e.split(" ", 2) for e in entries)]


def tools_called(notes: Path) -> list[str]:
    return [tool for _, tool, _ in calls(notes)]


@asynccontextmanager
async def http_server(notes: Path, variant: str = "1", port: int | None = None) -> AsyncIterator[str]:
    """The test server over streamable HTTP on `port` (default: a free one); yields its URL."""
    async with _over_http(SERVER, notes, port, NOTES_DIR=notes, NOTES_VARIANT=variant) as url:
        yield url


@asynccontextmanager
async def hostile_http(den: Path) -> AsyncIterator[str]:
    """The malicious server over streamable HTTP on a free port; yields its URL."""
    async with _over_http(HOSTILE, den, None, HOSTILE_DIR=den) as url:
        yield url


@asynccontextmanager
async def _over_http(script: Path, where: Path, port: int | None, **env: Any) -> AsyncIterator[str]:
    port = port or free_port()
    log = open(where.parent / f"mcp-http-{port}.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [sys.executable, str(script), "--http", str(port)],
        env=clean_env(**env),
        stdout=log,
        stderr=log,
        start_new_session=True,
    )
    try:
        await wait_until(lambda: proc.poll() is None and is_listening(f"127.0.0.1:{port}"), 20.0, "no MCP HTTP server")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        kill_group(proc.pid)
        proc.wait()
        log.close()
