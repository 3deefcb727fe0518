"""The bench's MCP server: `noop(x)`, read-only, over stdio (`python -m bench.mcp_noop_server`)
or streamable HTTP (`--http PORT`). The MCP counterpart of `bench.bench_agents.noop`."""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

app = MCPServer("bench", log_level="WARNING")


@app.tool(
    description="Do nothing and say so.", annotations=ToolAnnotations(read_only_hint=True), structured_output=False
)
def noop(x: str) -> str:
    return f"noop:{x}"


if __name__ == "__main__":
    if "--http" in sys.argv:
        app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[sys.argv.index("--http") + 1]))
    else:
        app.run()
