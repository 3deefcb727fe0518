"""The Tool protocol and what a tool returns."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from signoff.loop.messages import ToolSpec


class ToolResult(BaseModel):
    """What a tool returns. An error is data for the model, not a failed run."""

    content: str
    is_error: bool = False

    @classmethod
    def error(cls, message: str) -> ToolResult:
        return cls(content=message, is_error=True)

    def to_message(self) -> str:
        """The tool message text the model sees (`Error: ...` for an error)."""
        return f"Error: {self.content}" if self.is_error else self.content


@runtime_checkable
class Tool(Protocol):
    """A tool an agent can call.

    Attributes:
        name: unique within an agent; what the model calls.
        description: what the model is told the tool does.
        parameters: JSON schema of the arguments object.
        idempotent: whether running it twice is harmless. Non-idempotent tools run
            at most once under Temporal.
        kind: a short label (`"command"`, `"file"`, `"function"`) for operators.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    idempotent: bool
    kind: str

    async def execute(self, arguments: dict[str, Any]) -> ToolResult: ...

    def requires_approval(self, arguments: dict[str, Any]) -> bool: ...


def tool_spec(tool: Tool) -> ToolSpec:
    """The model-facing description of a tool."""
    return ToolSpec(name=tool.name, description=tool.description, parameters=tool.parameters)
