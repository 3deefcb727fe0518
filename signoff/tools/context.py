"""Context providers: instructions and tools contributed before each model request.

The original design's `on_invoking()` chain: before every model request the agent
asks each provider for a `Context` and merges their instructions and tools.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from signoff.errors import UsageError
from signoff.messages import ChatMessage
from signoff.tools.base import Tool
from signoff.tools.builtins import default_tools
from signoff.tools.files.scope import ScopePolicy, WorkspaceScope

_POLICY_TEXT = {
    ScopePolicy.DENY: "File tools refuse paths outside it.",
    ScopePolicy.APPROVE_OUTSIDE: (
        "File tools can reach paths outside it only after a human approves the call, so prefer paths inside it."
    ),
    ScopePolicy.ALLOW: "File tools may also use paths outside it.",
}


@dataclass
class Context:
    """What one provider adds to a model request.

    Attributes:
        instructions: text for the system prompt, one entry per topic.
        tools: tools the model may call in this request.
    """

    instructions: list[str] = field(default_factory=list)
    tools: list[Tool] = field(default_factory=list)


@runtime_checkable
class ContextProvider(Protocol):
    """Contributes instructions and tools before each model request."""

    def on_invoking(self, messages: list[ChatMessage]) -> Context:
        """The context for a request about to be sent with `messages`."""
        ...


class WorkspaceContextProvider:
    """Tells the model about the workspace and contributes the tools that work in it.

    Unlike the original, `add_tool` wraps nothing in `ApprovalRequiredTool`: the
    file tools ask their scope per call, so only calls that leave the workspace
    wait for a human.
    """

    def __init__(self, scope: WorkspaceScope) -> None:
        self.scope = scope
        self._tools: list[Tool] = []

    @classmethod
    def with_default_tools(cls, scope: WorkspaceScope) -> WorkspaceContextProvider:
        """A provider of `default_tools(scope)`."""
        provider = cls(scope)
        for each in default_tools(scope):
            provider.add_tool(each)
        return provider

    def add_tool(self, tool: Tool) -> WorkspaceContextProvider:
        """Add a tool; returns the provider, so calls chain.

        Raises:
            UsageError: a tool of that name was already added.
        """
        if any(existing.name == tool.name for existing in self._tools):
            raise UsageError(f"a tool named {tool.name!r} was already added to this provider")
        self._tools.append(tool)
        return self

    @property
    def tools(self) -> list[Tool]:
        """The tools added so far, in order."""
        return list(self._tools)

    def instructions(self) -> str:
        """The workspace paragraph of the system prompt."""
        text = f"Your workspace is {self.scope.root}. Relative paths are relative to it."
        if any(each.kind == "command" for each in self._tools):
            text += " Commands run in it."
        return f"{text} {_POLICY_TEXT[self.scope.policy]}"

    def on_invoking(self, messages: list[ChatMessage]) -> Context:
        """The workspace instructions and tools; the same for every request."""
        return Context(instructions=[self.instructions()], tools=self.tools)
