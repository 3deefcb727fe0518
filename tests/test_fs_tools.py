"""File tools on descriptors: how they treat links, odd paths, and who learns of an approval."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from signoff.messages import ToolCall
from signoff.tools import (
    ApprovalRequiredTool,
    ListDir,
    ReadFile,
    RemovePath,
    ScopePolicy,
    ToolRegistry,
    WorkspaceScope,
    WriteFile,
    tool,
)
from signoff.tools.base import capabilities_of
from signoff.tools.dispatch import execute_call
from tests.fs_helpers import resolver

__all__ = ["resolver"]  # a fixture, used by name


def call(name: str, **arguments: object) -> ToolCall:
    return ToolCall(id="call_1", name=name, arguments=json.dumps(arguments))


# --- who learns whether a call was approved ---------------------------------------------------


async def test_execute_call_tells_a_file_tool_that_its_call_was_approved(ws: Path, outside: Path) -> None:
    registry = ToolRegistry([WriteFile(WorkspaceScope(ws, ScopePolicy.APPROVE_OUTSIDE))])
    write = call("write_file", path=str(outside / "x.txt"), content="hi")
    assert (await execute_call(registry, write)).startswith("Error: ")
    assert await execute_call(registry, write, approved=True) == f"wrote 2 bytes to {outside}/x.txt"


async def test_approval_required_tool_forwards_approval_to_a_file_tool(ws: Path, outside: Path) -> None:
    wrapped = ApprovalRequiredTool(WriteFile(WorkspaceScope(ws, ScopePolicy.APPROVE_OUTSIDE)))
    write = call("write_file", path=str(outside / "x.txt"), content="hi")
    assert capabilities_of(wrapped).approval_aware and wrapped.requires_approval({"path": "in.txt", "content": ""})
    reply = await execute_call(ToolRegistry([wrapped]), write, approved=True)
    assert reply == f"wrote 2 bytes to {outside}/x.txt"
    assert (outside / "x.txt").read_text() == "hi"


@tool
def echo(text: str) -> str:
    """Say it back."""
    return text


async def test_tools_that_are_not_approval_aware_are_called_as_before() -> None:
    for wrapped in (echo, ApprovalRequiredTool(echo)):
        assert not capabilities_of(wrapped).approval_aware
        reply = await execute_call(ToolRegistry([wrapped]), call("echo", text="hi"), approved=True)
        assert reply == "hi"


# --- links and odd paths ------------------------------------------------------------------------


async def test_a_relative_symlink_that_stays_inside_is_followed_under_deny(resolver: str, ws: Path) -> None:
    (ws / "sub").mkdir()
    (ws / "sub" / "f.txt").write_text("via link")
    (ws / "alias").symlink_to("sub")
    s = WorkspaceScope(ws, ScopePolicy.DENY)
    assert (await ReadFile(s).execute({"path": "alias/f.txt"})).content == "via link"
    await WriteFile(s).execute({"path": "alias/g.txt", "content": "new"})
    assert (ws / "sub" / "g.txt").read_text() == "new"


async def test_an_absolute_symlink_counts_as_leaving_even_when_it_points_inside(resolver: str, ws: Path) -> None:
    (ws / "f.txt").write_text("x")
    (ws / "abs").symlink_to(ws / "f.txt")
    read = ReadFile(WorkspaceScope(ws, ScopePolicy.APPROVE_OUTSIDE))
    assert read.requires_approval({"path": "abs"})
    assert (await read.execute({"path": "abs"}, approved=True)).content == "x"


async def test_write_never_creates_a_file_through_a_dangling_symlink(resolver: str, ws: Path) -> None:
    (ws / "dangling").symlink_to("missing.txt")
    result = await WriteFile(WorkspaceScope(ws, ScopePolicy.ALLOW)).execute({"path": "dangling", "content": "x"})
    assert result.is_error and "symbolic link to a file that does not exist" in result.content
    assert not (ws / "missing.txt").exists()


async def test_write_creates_missing_parents_through_dotdot_inside(resolver: str, ws: Path) -> None:
    write = WriteFile(WorkspaceScope(ws, ScopePolicy.DENY))
    result = await write.execute({"path": "new/../x.txt", "content": "x"})
    assert not result.is_error and (ws / "x.txt").read_text() == "x"


async def test_write_that_climbs_out_through_new_directories_creates_nothing(resolver: str, ws: Path) -> None:
    write = WriteFile(WorkspaceScope(ws, ScopePolicy.DENY))
    result = await write.execute({"path": "new/../../x.txt", "content": "x"})
    assert result.is_error and "outside the workspace" in result.content
    assert list(ws.iterdir()) == [] and not (ws.parent / "x.txt").exists()


async def test_write_of_a_path_ending_in_dotdot_is_an_error(ws: Path) -> None:
    result = await WriteFile(WorkspaceScope(ws)).execute({"path": "a/..", "content": "x"})
    assert (result.is_error, result.content) == (True, "a/.. does not name a file")


async def test_list_dir_does_not_follow_entries_that_are_symlinks(ws: Path, outside: Path) -> None:
    (ws / "sub").mkdir()
    (ws / "out").symlink_to(outside)
    result = await ListDir(WorkspaceScope(ws, ScopePolicy.DENY)).execute({})
    assert result.content == "out\nsub/"


async def test_list_dir_through_a_symlink_leading_out_is_refused_under_deny(
    resolver: str, ws: Path, outside: Path
) -> None:
    (ws / "out").symlink_to(outside)
    result = await ListDir(WorkspaceScope(ws, ScopePolicy.DENY)).execute({"path": "out"})
    assert result.is_error and "outside the workspace" in result.content


async def test_removing_a_symlink_that_leads_out_is_an_inside_operation(resolver: str, ws: Path, outside: Path) -> None:
    (outside / "keep.txt").write_text("keep")
    (ws / "out").symlink_to(outside)
    remove = RemovePath(WorkspaceScope(ws, ScopePolicy.APPROVE_OUTSIDE))
    assert not remove.requires_approval({"path": "out", "recursive": True})
    assert not (await remove.execute({"path": "out", "recursive": True})).is_error
    assert not (ws / "out").is_symlink() and (outside / "keep.txt").exists()


async def test_removing_through_a_symlink_that_leads_out_asks_and_is_refused_unapproved(
    resolver: str, ws: Path, outside: Path
) -> None:
    (outside / "keep.txt").write_text("keep")
    (ws / "out").symlink_to(outside)
    remove = RemovePath(WorkspaceScope(ws, ScopePolicy.APPROVE_OUTSIDE))
    assert remove.requires_approval({"path": "out/keep.txt"})
    assert (await remove.execute({"path": "out/keep.txt"})).is_error
    assert (outside / "keep.txt").exists()


@pytest.mark.parametrize("path", [".", "sub/..", "ROOT"])
async def test_the_workspace_root_is_never_removed_even_under_allow(ws: Path, path: str) -> None:
    (ws / "sub").mkdir()
    remove = RemovePath(WorkspaceScope(ws, ScopePolicy.ALLOW))
    result = await remove.execute({"path": str(ws) if path == "ROOT" else path, "recursive": True})
    assert result.is_error and "workspace root itself" in result.content and ws.is_dir()


async def test_a_directory_tree_is_removed_without_following_links_out(resolver: str, ws: Path, outside: Path) -> None:
    (outside / "keep.txt").write_text("keep")
    (ws / "d" / "e").mkdir(parents=True)
    (ws / "d" / "e" / "out").symlink_to(outside)
    result = await RemovePath(WorkspaceScope(ws)).execute({"path": "d", "recursive": True})
    assert not result.is_error and not (ws / "d").exists() and (outside / "keep.txt").exists()
