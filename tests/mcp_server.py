"""A small MCP server (the SDK's `MCPServer`, once called FastMCP) that the MCP tests start.

    python tests/mcp_server.py              # over stdio
    python tests/mcp_server.py --http PORT  # over streamable HTTP on 127.0.0.1:PORT

Notes live in `$NOTES_DIR`; every call is appended to `$NOTES_DIR/calls.log` (`<pid> <tool>
<arguments>`), so a test can tell whether, and by which process, a tool ran. With
`NOTES_VARIANT=2` the server lists other tools (`read_note` described otherwise, `tidy` gone).
"""

from __future__ import annotations

import base64
import json
import os
import sys
import time
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import (
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)

NOTES = Path(os.environ.get("NOTES_DIR", "."))
VARIANT = os.environ.get("NOTES_VARIANT", "1")
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
ADDITIVE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True)
DESTRUCTIVE = ToolAnnotations(read_only_hint=False, destructive_hint=True)

app = MCPServer("notes")


def logged(tool: str, **arguments: object) -> None:
    with open(NOTES / "calls.log", "a") as log:
        log.write(f"{os.getpid()} {tool} {json.dumps(arguments, sort_keys=True)}\n")


@app.tool(
    description="Read a note" + (" (v2)" if VARIANT == "2" else ""), annotations=READ_ONLY, structured_output=False
)
def read_note(name: str) -> str:
    logged("read_note", name=name)
    return (NOTES / name).read_text()


@app.tool(description="Write a note", annotations=ADDITIVE, structured_output=False)
def write_note(name: str, text: str) -> str:
    logged("write_note", name=name, text=text)
    (NOTES / name).write_text(text)
    return f"wrote {len(text)} characters to {name}"


@app.tool(description="Delete a note", annotations=DESTRUCTIVE, structured_output=False)
def delete_note(name: str) -> str:
    logged("delete_note", name=name)
    (NOTES / name).unlink()
    return f"deleted {name}"


if VARIANT != "2":

    @app.tool(
        description="Says it only reads, and deletes",
        annotations=ToolAnnotations(read_only_hint=True, destructive_hint=True),
        structured_output=False,
    )
    def tidy(name: str) -> str:
        logged("tidy", name=name)
        return "tidied"


@app.tool(description="Who runs this server", annotations=READ_ONLY, structured_output=False)
def whoami(variable: str = "", ctx: Context | None = None) -> str:
    logged("whoami", variable=variable)
    headers = dict(ctx.headers or {}) if ctx is not None else {}
    return json.dumps(
        {
            "pid": os.getpid(),
            "uid": os.getuid(),
            "cwd": os.getcwd(),
            "env": os.environ.get(variable),
            "authorization": headers.get("authorization"),
        }
    )


@app.tool(description="Fail with a message", structured_output=False)
def fail(message: str) -> str:
    logged("fail", message=message)
    raise ToolError(message)


@app.tool(description="Exit the server process in the middle of the call", structured_output=False)
def crash() -> str:
    logged("crash")
    os._exit(7)


@app.tool(description="Take a while", structured_output=False)
def slow(seconds: float) -> str:
    logged("slow", seconds=seconds)
    time.sleep(seconds)
    logged("slow_done", seconds=seconds)
    return f"slept {seconds}"


@app.tool(description="A picture, a resource and a link", annotations=READ_ONLY)
def media() -> CallToolResult:
    pixel = base64.b64encode(b"\x89PNG" + b"\0" * 96).decode()
    return CallToolResult(
        content=[
            TextContent(text="here it is"),
            ImageContent(data=pixel, mime_type="image/png"),
            EmbeddedResource(
                resource=TextResourceContents(uri="file:///notes/a", text="note a", mime_type="text/plain")
            ),
            ResourceLink(name="b", uri="file:///notes/b", mime_type="text/plain", description="note b"),
        ]
    )


@app.tool(description="Counts as data only", annotations=READ_ONLY)
def stats() -> CallToolResult:
    return CallToolResult(content=[], structured_content={"notes": len(list(NOTES.glob("*.txt")))})


if __name__ == "__main__":
    if "--http" in sys.argv:
        app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[sys.argv.index("--http") + 1]))
    else:
        app.run()
