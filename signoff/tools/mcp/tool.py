"""`MCPTool`: one tool of an MCP server as an ordinary signoff `Tool`, and listing them for a run.

A run's MCP tools are listed when it starts (`open_tools`) and recorded in its snapshot:
name `mcp__<server>__<tool>`, the server's description and input schema, and the listing
(`MCPToolInfo`: server, tool, annotations, trust) that decides its gate and retries. A
worker that did not list them rebuilds the same tools from the snapshot (`rebuilt_tools`),
bound to its own configuration of each server by name, so any worker of the queue runs a
run's MCP calls.

What runs without approval is decided again where it runs, by this worker alone: a call
its snapshot let through unapproved runs only if this worker trusts the server and the
server, listed again just before the call, still lists the tool as read-only (neither a
snapshot nor an earlier listing can vouch for a tool: a server may change its tools after
a run listed them and tell nobody); any call of a tool the server's allow-list no longer
names is refused. A tool the server adds after the run listed its tools is not the run's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from signoff.approval.requests import InputAsked
from signoff.messages import MCPUnavailableEvent, ToolSpec
from signoff.tools.base import ToolCapabilities, ToolResult
from signoff.tools.mcp.config import MCPServer
from signoff.tools.mcp.listing import MCPToolInfo, annotations_of, model_name

if TYPE_CHECKING:  # the SDK is imported only where a session is opened (it takes half a second)
    from signoff.tools.mcp.sessions import MCPSessions

_EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


class MCPTool:
    """A tool of an MCP server: calls go to the server over the process's session pool.

    Attributes:
        mcp: where it comes from and what it declared (recorded in the run's snapshot).
        gate: `never` for a trusted server's read-only tool, else `always` (`MCPToolInfo`).
        idempotent: retried after a lost worker only for a trusted `idempotentHint: true`.
        server: this process's configuration of its server (None: it has none by that name).
        capabilities: its gate, and that `execute` is told whether a call was approved
            (an unapproved call runs only if this worker still sees the tool as ungated).
    """

    kind = "mcp"

    def __init__(self, spec: ToolSpec, info: MCPToolInfo, server: MCPServer | None, sessions: MCPSessions) -> None:
        self.name, self.description, self.parameters = spec.name, spec.description, spec.parameters
        self.mcp = info
        self.server = server
        self.sessions = sessions
        self.gate = info.gate
        self.idempotent = info.idempotent

    @classmethod
    def listed(cls, server: MCPServer, tool: Any, sessions: MCPSessions) -> MCPTool:
        """The tool `tool` (an MCP `Tool` from `tools/list`) of `server`, as listed now."""
        info = MCPToolInfo(
            server=server.name, tool=tool.name, trusted=server.trusted, annotations=annotations_of(tool.annotations)
        )
        spec = ToolSpec(
            name=model_name(server.name, tool.name),
            description=tool.description or tool.title or "",
            parameters=tool.input_schema or _EMPTY_SCHEMA,
        )
        return cls(spec, info, server, sessions)

    @property
    def capabilities(self) -> ToolCapabilities:
        return ToolCapabilities(gate=self.gate, approval_aware=self.execute)

    def requires_approval(self, arguments: dict[str, Any]) -> bool:
        return self.gate == "always"

    async def execute(self, arguments: dict[str, Any], approved: bool = False) -> ToolResult:
        refusal = self._not_offered() or (None if approved else await self._needs_approval_now())
        if refusal is not None:
            return ToolResult.error(refusal)
        assert self.server is not None
        return await self.sessions.call(self.server, self.mcp.tool, arguments)

    async def answer(self, arguments: dict[str, Any], asked: InputAsked, answer: dict[str, Any]) -> ToolResult:
        """Retry a call whose server asked a question (`input_required`), with a person's
        `answer` (an MCP `ElicitResult`) and the server's state, echoed verbatim."""
        refusal = self._not_offered()
        if refusal is not None:
            return ToolResult.error(refusal)
        assert self.server is not None
        return await self.sessions.call(
            self.server, self.mcp.tool, arguments, answers={asked.key: answer}, state=asked.state
        )

    def _not_offered(self) -> str | None:
        info, server = self.mcp, self.server
        if server is None:
            return f"MCP server {info.server!r} is not configured on this worker; the call was not made"
        if not server.offers(info.tool):
            return f"MCP server {info.server!r} no longer offers {info.tool!r} (its `tools`); the call was not made"
        return None

    async def _needs_approval_now(self) -> str | None:
        """Why an unapproved call must not run after all (this worker's own view), or None."""
        from signoff.tools.mcp.sessions import MCPServerError

        assert self.server is not None
        if self.gate == "always":
            return "this call needs approval and was not approved; it was not run"
        why = None
        if not self.server.trusted:
            why = "is not trusted on this worker"
        else:
            try:
                declared = await self.sessions.declared(self.server, self.mcp.tool)
            except MCPServerError as exc:
                return f"MCP server {self.mcp.server!r} is not available ({exc}); the call was not made"
            now = self.mcp.model_copy(update={"annotations": declared or {}, "trusted": True})
            if not now.ungated:
                why = "no longer declares this tool read-only" if declared is not None else "no longer lists it"
        if why is None:
            return None
        server = self.mcp.server
        return f"this call needs approval now (MCP server {server!r} {why}) and was not approved; it was not run"

    def __repr__(self) -> str:
        return f"MCPTool({self.name!r})"


async def open_tools(
    servers: Sequence[MCPServer], sessions: MCPSessions, taken: Collection[str] = ()
) -> tuple[list[MCPTool], list[MCPUnavailableEvent]]:
    """List every server's tools at once: the tools to offer, and what could not be offered
    (a server that cannot be reached, a name already `taken`, an allow-listed tool not listed)."""
    listings = await asyncio.gather(*(_listing(server, sessions) for server in servers))
    tools: list[MCPTool] = []
    missing: list[MCPUnavailableEvent] = []
    names = set(taken)
    for server, listing in zip(servers, listings, strict=True):
        if isinstance(listing, str):
            missing.append(MCPUnavailableEvent(server=server.name, message=listing))
            continue
        for listed in listing:
            if not server.offers(listed.name):
                continue
            tool = MCPTool.listed(server, listed, sessions)
            if tool.name in names:
                missing.append(
                    MCPUnavailableEvent(
                        server=server.name,
                        tool=listed.name,
                        message=f"another tool is already named {tool.name!r}",
                    )
                )
                continue
            names.add(tool.name)
            tools.append(tool)
        listed_names = {t.name for t in listing}
        missing += [
            MCPUnavailableEvent(server=server.name, tool=name, message="in the tools allow-list, but not listed")
            for name in server.tools or ()
            if name not in listed_names
        ]
    return tools, missing


class OwnSessions:
    """A process's MCP sessions, made on first use (the SDK is imported then: it takes half a
    second) and closed by `aclose`: the worker's, or an in-process agent's."""

    def __init__(self) -> None:
        self._sessions: MCPSessions | None = None

    def get(self) -> MCPSessions:
        if self._sessions is None:
            from signoff.tools.mcp.sessions import MCPSessions

            self._sessions = MCPSessions()
        return self._sessions

    async def aclose(self) -> None:
        """Close the sessions, if any were made (stdio servers are stopped)."""
        sessions, self._sessions = self._sessions, None
        if sessions is not None:
            await sessions.aclose()


def rebuilt_tools(
    recorded: Iterable[tuple[ToolSpec, MCPToolInfo]], servers: Mapping[str, MCPServer], sessions: MCPSessions
) -> list[MCPTool]:
    """The MCP tools a run was shown (from its snapshot), bound to this worker's servers by name."""
    return [MCPTool(spec, info, servers.get(info.server), sessions) for spec, info in recorded]


async def _listing(server: MCPServer, sessions: MCPSessions) -> list[Any] | str:
    from signoff.tools.mcp.sessions import MCPServerError, describe_error

    try:
        return await sessions.list_tools(server)
    except MCPServerError as exc:
        return str(exc)
    except Exception as exc:  # a server is an aid: whatever it did, the run goes on without it
        return describe_error(exc, server)


__all__ = ["MCPTool", "OwnSessions", "open_tools", "rebuilt_tools"]
