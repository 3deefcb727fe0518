"""The file tools and default_tools, on real files in a temporary workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from signoff.tools import (
    ApprovalRequiredTool,
    ListDir,
    ReadFile,
    RemovePath,
    ScopePolicy,
    WorkspaceScope,
    WriteFile,
    default_tools,
)


@pytest.fixture
def scope(tmp_path: Path) -> WorkspaceScope:
    (tmp_path / "ws").mkdir()
    return WorkspaceScope(tmp_path / "ws")


@pytest.fixture
def ws(scope: WorkspaceScope) -> Path:
    return scope.root


async def test_read_file_returns_the_text(scope: WorkspaceScope, ws: Path) -> None:
    (ws / "notes.txt").write_text("hello\n")
    result = await ReadFile(scope).execute({"path": "notes.txt"})
    assert (result.is_error, result.content) == (False, "hello\n")


async def test_read_file_of_missing_file_is_an_error_naming_it(scope: WorkspaceScope) -> None:
    result = await ReadFile(scope).execute({"path": "nope.txt"})
    assert (result.is_error, result.content) == (True, "nope.txt: No such file or directory")


async def test_read_file_of_a_directory_points_to_list_dir(scope: WorkspaceScope) -> None:
    result = await ReadFile(scope).execute({"path": "."})
    assert result.is_error and "use list_dir" in result.content


async def test_read_file_over_the_cap_is_cut_with_a_note(scope: WorkspaceScope, ws: Path) -> None:
    (ws / "big.txt").write_text("a" * 50)
    result = await ReadFile(scope, max_bytes=10).execute({"path": "big.txt"})
    assert result.content == "a" * 10 + "\n[file truncated: showing the first 10 of 50 bytes]"


async def test_read_file_without_path_is_an_invalid_arguments_error(scope: WorkspaceScope) -> None:
    result = await ReadFile(scope).execute({})
    assert (result.is_error, result.content) == (
        True,
        "invalid arguments for read_file: path: Field required",
    )


async def test_write_file_creates_missing_parent_directories(scope: WorkspaceScope, ws: Path) -> None:
    result = await WriteFile(scope).execute({"path": "a/b/c.txt", "content": "héllo"})
    assert (ws / "a/b/c.txt").read_text() == "héllo"
    assert result.content == "wrote 6 bytes to a/b/c.txt"


async def test_write_file_replaces_existing_content(scope: WorkspaceScope, ws: Path) -> None:
    (ws / "f.txt").write_text("old and long")
    await WriteFile(scope).execute({"path": "f.txt", "content": "new"})
    assert (ws / "f.txt").read_text() == "new"


async def test_remove_path_removes_a_file(scope: WorkspaceScope, ws: Path) -> None:
    (ws / "f.txt").write_text("x")
    result = await RemovePath(scope).execute({"path": "f.txt"})
    assert not result.is_error and not (ws / "f.txt").exists()


async def test_remove_path_of_directory_without_recursive_is_an_error(scope: WorkspaceScope, ws: Path) -> None:
    (ws / "d").mkdir()
    result = await RemovePath(scope).execute({"path": "d"})
    assert result.is_error and "recursive=true" in result.content
    assert (ws / "d").is_dir()


async def test_remove_path_recursive_removes_a_directory_tree(scope: WorkspaceScope, ws: Path) -> None:
    (ws / "d/sub").mkdir(parents=True)
    (ws / "d/sub/f.txt").write_text("x")
    result = await RemovePath(scope).execute({"path": "d", "recursive": True})
    assert not result.is_error and not (ws / "d").exists()


async def test_remove_path_of_missing_path_is_an_error(scope: WorkspaceScope) -> None:
    result = await RemovePath(scope).execute({"path": "ghost"})
    assert (result.is_error, result.content) == (True, "ghost: No such file or directory")


async def test_remove_path_removes_a_symlink_not_its_target(tmp_path: Path, ws: Path) -> None:
    (tmp_path / "target").mkdir()
    (ws / "link").symlink_to(tmp_path / "target", target_is_directory=True)
    remove = RemovePath(WorkspaceScope(ws, ScopePolicy.ALLOW))
    await remove.execute({"path": "link", "recursive": True})
    assert not (ws / "link").is_symlink() and (tmp_path / "target").is_dir()


async def test_remove_path_refuses_the_workspace_root(scope: WorkspaceScope, ws: Path) -> None:
    result = await RemovePath(scope).execute({"path": ".", "recursive": True})
    assert result.is_error and ws.is_dir()


async def test_list_dir_sorts_entries_and_marks_directories(scope: WorkspaceScope, ws: Path) -> None:
    (ws / "b.txt").write_text("")
    (ws / "a").mkdir()
    (ws / "c.txt").write_text("")
    result = await ListDir(scope).execute({})
    assert result.content == "a/\nb.txt\nc.txt"


async def test_list_dir_of_empty_directory_says_so(scope: WorkspaceScope) -> None:
    assert (await ListDir(scope).execute({"path": "."})).content == "(empty directory)"


async def test_list_dir_over_the_cap_notes_the_rest(scope: WorkspaceScope, ws: Path) -> None:
    for name in "abcde":
        (ws / name).write_text("")
    result = await ListDir(scope, max_entries=2).execute({})
    assert result.content == "a\nb\n[3 more entries not shown]"


async def test_list_dir_of_a_file_is_an_error(scope: WorkspaceScope, ws: Path) -> None:
    (ws / "f.txt").write_text("")
    result = await ListDir(scope).execute({"path": "f.txt"})
    assert (result.is_error, result.content) == (True, "f.txt: Not a directory")


def test_file_tools_do_not_ask_about_invalid_arguments(tmp_path: Path) -> None:
    scope = WorkspaceScope(tmp_path, ScopePolicy.APPROVE_OUTSIDE)
    assert not WriteFile(scope).requires_approval({"path": "/etc/x"})  # content missing


def test_default_tools_follow_the_contract_table(scope: WorkspaceScope) -> None:
    tools = default_tools(scope)
    rows = [(t.name, t.kind, t.idempotent) for t in tools]
    assert rows == [
        ("run_command", "command", False),
        ("read_file", "file", True),
        ("list_dir", "file", True),
        ("write_file", "file", True),
        ("remove_path", "file", True),
    ]


def test_default_run_command_always_needs_approval(scope: WorkspaceScope) -> None:
    run_command = default_tools(scope)[0]
    assert isinstance(run_command, ApprovalRequiredTool)
    assert run_command.requires_approval({"command": "ls"})


def test_default_tools_schemas_match_the_contract_arguments(scope: WorkspaceScope) -> None:
    shapes = {
        t.name: (sorted(t.parameters["properties"]), t.parameters.get("required", [])) for t in default_tools(scope)
    }
    assert shapes == {
        "run_command": (["command", "timeout_secs"], ["command"]),
        "read_file": (["path"], ["path"]),
        "list_dir": (["path"], []),
        "write_file": (["content", "path"], ["path", "content"]),
        "remove_path": (["path", "recursive"], ["path"]),
    }
