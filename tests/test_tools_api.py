"""The public namespace of signoff.tools."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import signoff.tools


def test_all_is_the_intended_public_api() -> None:
    assert set(signoff.tools.__all__) == {
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
    }


def test_every_exported_name_exists() -> None:
    assert all(hasattr(signoff.tools, name) for name in signoff.tools.__all__)


def test_tools_do_not_import_temporal() -> None:
    code = "import sys, signoff.tools; sys.exit('temporalio' in sys.modules)"
    repo = Path(__file__).resolve().parents[1]
    assert subprocess.run([sys.executable, "-c", code], cwd=repo).returncode == 0
