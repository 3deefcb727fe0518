"""Tools from MCP servers, gated by what they declare and by what the operator trusts.

    from signoff import AgentBuilder, MCPServer

    git = MCPServer(name="git", command="uvx", args=["mcp-server-git", "--repository", "."], trusted=True)
    agent = AgentBuilder("ops").with_mcp_server(git).build()

- `config.py`: `MCPServer`, the `mcpServers` file (`SIGNOFF_MCP_CONFIG`).
- `listing.py`: `MCPToolInfo`, what a run records of each tool, and the gating rule.
- `tool.py`: `MCPTool`, listing a run's tools and rebuilding them from its snapshot.
- `sessions.py`: the process's sessions to its servers (the `mcp` SDK; imported on first use).
- `results.py`: what the model reads of a result.
"""

from signoff.tools.mcp.config import MCPServer
from signoff.tools.mcp.listing import MCPToolInfo
from signoff.tools.mcp.tool import MCPTool

__all__ = ["MCPServer", "MCPTool", "MCPToolInfo"]
