"""The bench agent: tools that do no real work, one of them behind a person's approval.

Served by the worker as `python worker.py --agents bench.bench_agents`; it brings no
chat client, so the worker's provider (`SIGNOFF_LLM_*`, the scripted server) is used.
`bench_mcp` has `noop` and the MCP server `bench` (`bench.mcp_noop_server`, trusted) over
stdio, `bench_mcp_http` over streamable HTTP at `$BENCH_MCP_URL` when it is set.
"""

from __future__ import annotations

import os
import sys

from bench import tool_calls
from bench.tool_calls import INSTRUCTIONS
from signoff.agent.builder import AgentBuilder, ChatClientAgent
from signoff.chat.base import ChatClient
from signoff.tools import ApprovalRequiredTool, tool
from signoff.tools.mcp import MCPServer

AGENT = "bench"
BIG_AGENT = "bench_big"
MCP_AGENT, MCP_HTTP_AGENT = "bench_mcp", "bench_mcp_http"
MCP_STDIO = MCPServer(
    name="bench",
    command=sys.executable,
    args=["-m", "bench.mcp_noop_server"],
    env={"PYTHONDONTWRITEBYTECODE": "1"},
    trusted=True,
)


@tool
def noop(x: str) -> str:
    """Do nothing and say so.

    Args:
        x: any text, echoed back.
    """
    return tool_calls.noop(x)


@tool(name="gated_noop")
def _gated(x: str) -> str:
    """Do nothing, once a person has approved it.

    Args:
        x: any text, echoed back.
    """
    return tool_calls.gated(x)


gated_noop = ApprovalRequiredTool(_gated)

BIG_OUTPUT = 300_000


@tool
def big(x: str) -> str:
    """Return a large output (300,000 characters) that starts with `big:<x>`.

    Args:
        x: any text, echoed at the start.
    """
    head = f"big:{x}|"
    return head + "o" * (BIG_OUTPUT - len(head))


def bench_agent(chat_client: ChatClient | None = None) -> ChatClientAgent:
    """The agent named `bench`; `chat_client` only for the in-process baseline."""
    builder = AgentBuilder(AGENT).with_instructions(INSTRUCTIONS).with_tools([noop, gated_noop]).with_max_rounds(1000)
    if chat_client is not None:
        builder = builder.with_chat_client(chat_client)
    return builder.build()


def mcp_agent(name: str, server: MCPServer, chat_client: ChatClient | None = None) -> ChatClientAgent:
    """`noop` and the tools of `server` (`mcp__bench__noop`)."""
    builder = AgentBuilder(name).with_instructions(INSTRUCTIONS).with_tool(noop).with_mcp_server(server)
    if chat_client is not None:
        builder = builder.with_chat_client(chat_client)
    return builder.with_max_rounds(1000).build()


def agents() -> list[ChatClientAgent]:
    big_outputs = AgentBuilder(BIG_AGENT).with_instructions(INSTRUCTIONS).with_tool(big).with_max_rounds(1000).build()
    found = [bench_agent(), big_outputs, mcp_agent(MCP_AGENT, MCP_STDIO)]
    if os.environ.get("BENCH_MCP_URL"):
        found.append(mcp_agent(MCP_HTTP_AGENT, MCPServer(name="bench", url=os.environ["BENCH_MCP_URL"], trusted=True)))
    return found
