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
from mcp.server.request_state import RequestStateSecurity
from mcp.types import (
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    EmbeddedResource,
    ImageContent,
    InputRequiredResult,
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

STATE_KEY = os.environ.get("NOTES_STATE_KEY", "notes-test-request-state-key-32-bytes!")
"""The key that seals `requestState` (shared by every process of the server, so a question
asked by one answers in another: the worker that asked it may be gone)."""
CONFIRM_SCHEMA = {
    "type": "object",
    "properties": {
        "confirm": {"type": "boolean", "title": "Delete it?"},
        "why": {"type": "string", "title": "Why"},
    },
    "required": ["confirm"],
}

app = MCPServer("notes", request_state_security=RequestStateSecurity(keys=[STATE_KEY], ttl=86400.0))


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


@app.tool(description="Delete a note after asking the person to confirm", annotations=DESTRUCTIVE)
def erase_note(name: str, ctx: Context | None = None) -> InputRequiredResult | str:
    """Asks (MCP 2026-07-28 `input_required`) before it deletes: `confirm` must be true."""
    answer = (ctx.input_responses or {}).get("confirm") if ctx is not None else None
    if not isinstance(answer, ElicitResult) or ctx is None or ctx.request_state != f"erase:{name}":
        logged("erase_note_asked", name=name)
        question = ElicitRequestFormParams(message=f"Really delete {name}?", requested_schema=CONFIRM_SCHEMA)
        return InputRequiredResult(
            input_requests={"confirm": ElicitRequest(params=question)}, request_state=f"erase:{name}"
        )
    logged("erase_note", name=name, action=answer.action, content=answer.content)
    if answer.action != "accept" or not (answer.content or {}).get("confirm"):
        return f"kept {name}: the person answered {answer.action}" + (
            f" ({json.dumps(answer.content, sort_keys=True)})" if answer.content else ""
        )
    (NOTES / name).unlink()
    return f"deleted {name} ({(answer.content or {}).get('why') or 'no reason given'})"


@app.tool(description="Sign in somewhere first (URL mode)")
def sign_in(ctx: Context | None = None) -> InputRequiredResult | str:
    answer = (ctx.input_responses or {}).get("login") if ctx is not None else None
    if not isinstance(answer, ElicitResult):
        question = ElicitRequestURLParams(message="Sign in to the notes service", url="https://login.example.com/x?y=1")
        return InputRequiredResult(input_requests={"login": ElicitRequest(params=question)}, request_state="login")
    logged("sign_in", action=answer.action)
    return f"signed in: {answer.action}"


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
