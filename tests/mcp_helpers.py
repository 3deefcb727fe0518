"""MCP servers for the tests: `tests/mcp_server.py` over stdio or streamable HTTP, and its call log."""

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


def stdio(notes: Path, name: str = "notes", variant: str = "1", **fields: Any) -> MCPServer:
    """The test server over stdio, keeping its notes in `notes`."""
    env = {"NOTES_DIR": str(notes), "NOTES_VARIANT": variant, **fields.pop("env", {})}
    return MCPServer(name=name, command=sys.executable, args=[str(SERVER)], env=env, **fields)


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
    port = port or free_port()
    env = clean_env(NOTES_DIR=notes, NOTES_VARIANT=variant)
    log = open(notes.parent / f"mcp-http-{port}.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--http", str(port)], env=env, stdout=log, stderr=log, start_new_session=True
    )
    try:
        await wait_until(lambda: proc.poll() is None and is_listening(f"127.0.0.1:{port}"), 20.0, "no MCP HTTP server")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        kill_group(proc.pid)
        proc.wait()
        log.close()
