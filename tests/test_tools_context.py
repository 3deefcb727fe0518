"""WorkspaceContextProvider: workspace instructions and tools before each request."""

from __future__ import annotations

from pathlib import Path

import pytest

from signoff.errors import UsageError
from signoff.messages import ChatMessage
from signoff.tools import (
    ContextProvider,
    ReadFile,
    ScopePolicy,
    WorkspaceContextProvider,
    WorkspaceScope,
)


def test_provider_contributes_its_tools_in_order(tmp_path: Path) -> None:
    scope = WorkspaceScope(tmp_path)
    provider = WorkspaceContextProvider.with_default_tools(scope)
    context = provider.on_invoking([ChatMessage.user("hi")])
    assert [t.name for t in context.tools] == [
        "run_command",
        "read_file",
        "list_dir",
        "write_file",
        "remove_path",
    ]


def test_instructions_name_the_workspace_and_the_policy(tmp_path: Path) -> None:
    provider = WorkspaceContextProvider(WorkspaceScope(tmp_path, ScopePolicy.DENY))
    [text] = provider.on_invoking([]).instructions
    assert f"Your workspace is {tmp_path}." in text and "refuse paths outside it" in text


def test_add_tool_chains(tmp_path: Path) -> None:
    scope = WorkspaceScope(tmp_path)
    reader = ReadFile(scope)
    provider = WorkspaceContextProvider(scope).add_tool(reader)
    assert provider.on_invoking([]).tools == [reader]


def test_add_tool_rejects_a_duplicate_name(tmp_path: Path) -> None:
    scope = WorkspaceScope(tmp_path)
    provider = WorkspaceContextProvider(scope).add_tool(ReadFile(scope))
    with pytest.raises(UsageError):
        provider.add_tool(ReadFile(scope))


def test_workspace_provider_is_a_context_provider(tmp_path: Path) -> None:
    assert isinstance(WorkspaceContextProvider(WorkspaceScope(tmp_path)), ContextProvider)
