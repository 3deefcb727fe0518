"""Tools: the protocol, `@tool`, approval, the registry, the workspace scope, built-ins.

    from signoff.tools import WorkspaceScope, default_tools, tool, ToolRegistry

    scope = WorkspaceScope.from_env()
    registry = ToolRegistry(default_tools(scope))

Every name here is importable from `signoff.tools`; the submodules are details.
"""

from signoff.tools.approval import ApprovalRequiredTool
from signoff.tools.base import Tool, ToolResult, tool_spec
from signoff.tools.builtins import (
    ListDir,
    ReadFile,
    RemovePath,
    RunCommand,
    WriteFile,
    default_tools,
)
from signoff.tools.context import Context, ContextProvider, WorkspaceContextProvider
from signoff.tools.files.scope import ScopeDecision, ScopePolicy, WorkspaceScope
from signoff.tools.function import FunctionTool, tool
from signoff.tools.registry import ToolRegistry

__all__ = [
    "ApprovalRequiredTool",
    "Context",
    "ContextProvider",
    "FunctionTool",
    "ListDir",
    "ReadFile",
    "RemovePath",
    "RunCommand",
    "ScopeDecision",
    "ScopePolicy",
    "Tool",
    "ToolRegistry",
    "ToolResult",
    "WorkspaceContextProvider",
    "WorkspaceScope",
    "WriteFile",
    "default_tools",
    "tool",
    "tool_spec",
]
