"""The default agent: a careful operator with the workspace's file tools, a shell, and the
tools of the MCP servers in `SIGNOFF_MCP_CONFIG`."""

from __future__ import annotations

from collections.abc import Sequence

from signoff.agent.builder import AgentBuilder, ChatClientAgent
from signoff.chat.base import ChatClient
from signoff.tools.context import WorkspaceContextProvider
from signoff.tools.files.scope import WorkspaceScope
from signoff.tools.mcp.config import MCPServer

DEFAULT_AGENT = "default"
DEFAULT_INSTRUCTIONS = (
    "You are a careful operations assistant. Use the tools to inspect and change the "
    "workspace. Some calls need a person's approval; when one is rejected, read the reason, "
    "do not retry the same call, and adapt or explain."
)


def default_agent(
    scope: WorkspaceScope | None = None,
    chat_client: ChatClient | None = None,
    mcp_servers: Sequence[MCPServer] | None = None,
) -> ChatClientAgent:
    """The agent named `default`: run_command (always approved by a person), file tools, MCP tools.

    Args:
        scope: the workspace and its policy; from `SIGNOFF_WORKSPACE` and
            `SIGNOFF_SCOPE_POLICY` when omitted.
        chat_client: None lets the worker supply its configured provider.
        mcp_servers: the MCP servers whose tools it offers; from `SIGNOFF_MCP_CONFIG` when omitted.

    Raises:
        ConfigError: a setting cannot work (the MCP configuration included).
    """
    provider = WorkspaceContextProvider.with_default_tools(scope or WorkspaceScope.from_env())
    servers = MCPServer.from_env() if mcp_servers is None else mcp_servers
    builder = (
        AgentBuilder(DEFAULT_AGENT)
        .with_instructions(DEFAULT_INSTRUCTIONS)
        .with_context_provider(provider)
        .with_mcp_servers(servers)
    )
    if chat_client is not None:
        builder = builder.with_chat_client(chat_client)
    return builder.build()
