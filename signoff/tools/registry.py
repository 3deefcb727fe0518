"""`ToolRegistry`: an agent's tools by name. Which of their calls need approval is the
gate's to say (`signoff.agent.gate`), from the run's snapshot."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from signoff.errors import UsageError
from signoff.messages import ToolSpec
from signoff.tools.base import Tool, capabilities_of, tool_spec


class ToolRegistry:
    """The tools an agent may call, in registration order, names unique."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for each in tools:
            self.register(each)

    def register(self, tool: Tool) -> Tool:
        """Add a tool and return it.

        Raises:
            UsageError: `tool` is not a Tool, its capabilities are not a `ToolCapabilities`,
                or a tool of that name is already registered.
        """
        if not isinstance(tool, Tool):
            raise UsageError(
                f"{tool!r} is not a Tool (name, description, parameters, idempotent, kind, "
                "execute, requires_approval); decorate a function with @tool to make one"
            )
        capabilities_of(tool)  # a tool that declares them wrongly is refused now, not when a call comes
        if tool.name in self._tools:
            raise UsageError(
                f"a tool named {tool.name!r} is already registered; tool names must be "
                "unique within an agent, so rename one (e.g. @tool(name=...))"
            )
        self._tools[tool.name] = tool
        return tool

    def get(self, name: str) -> Tool | None:
        """The tool called `name`, or None."""
        return self._tools.get(name)

    def names(self) -> list[str]:
        """Tool names in registration order."""
        return list(self._tools)

    def specs(self) -> list[ToolSpec]:
        """What the model is told about each tool, in registration order."""
        return [tool_spec(each) for each in self._tools.values()]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __repr__(self) -> str:
        return f"ToolRegistry({self.names()!r})"
