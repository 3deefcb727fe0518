"""remove_path's effect preview: what would be removed, found without following any link."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest

from signoff.tools import RemovePath, ScopePolicy, WorkspaceScope
from signoff.tools.files.guard import Guard
from signoff.tools.preview import survey as surveys
from tests.fs_helpers import resolver

__all__ = ["resolver"]  # a fixture, used by name


def remover(ws: Path, policy: ScopePolicy = ScopePolicy.APPROVE_OUTSIDE) -> RemovePath:
    return RemovePath(WorkspaceScope(ws, policy))


def make_tree(root: Path) -> None:
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "a.txt").write_text("hello")  # 5 bytes
    (root / "sub" / "b.bin").write_bytes(b"\0" * 1000)
    (root / "sub" / "deeper" / "c").write_text("")
    (root / "link").symlink_to("/etc")


def test_a_file_is_shown_with_its_size(ws: Path, outside: Path) -> None:
    (outside / "report.pdf").write_bytes(b"x" * 1234)
    preview = remover(ws).preview({"path": str(outside / "report.pdf")})
    assert preview == f"remove_path would delete the file {outside}/report.pdf (1,234 bytes)."
    assert (outside / "report.pdf").exists()


def test_a_directory_tree_is_counted_with_its_first_entries(ws: Path, outside: Path, resolver: str) -> None:
    make_tree(ws / "build")
    preview = remover(ws).preview({"path": "build", "recursive": True})
    assert preview == (
        "remove_path would delete the directory build and everything in it: "
        "3 files, 2 directories, 1 symbolic link; 1,005 bytes in all.\n"
        "  build/a.txt (5 bytes)\n"
        "  build/link (symbolic link)\n"
        "  build/sub/\n"
        "  build/sub/b.bin (1,000 bytes)\n"
        "  build/sub/deeper/\n"
        "  build/sub/deeper/c (0 bytes)"
    )
    assert (ws / "build" / "sub" / "deeper" / "c").exists()


def test_a_tree_outside_the_workspace_is_counted_but_its_names_withheld(ws: Path, outside: Path, resolver: str) -> None:
    """A preview is in history before anyone decides: it must not list what a person
    would need an approval to see (list_dir outside the workspace asks first)."""
    make_tree(outside / "build")
    preview = remover(ws).preview({"path": str(outside / "build"), "recursive": True})
    assert preview == (
        f"remove_path would delete the directory {outside}/build and everything in it: "
        "3 files, 2 directories, 1 symbolic link; 1,005 bytes in all.\n"
        "  (entries not listed: the directory is outside the workspace)"
    )


def test_a_directory_without_recursive_says_the_call_would_fail(ws: Path, outside: Path) -> None:
    make_tree(outside / "build")
    preview = remover(ws).preview({"path": str(outside / "build")})
    assert preview == (
        f"remove_path would fail, even if approved: {outside}/build is a directory; "
        "pass recursive=true to remove it and everything in it"
    )


def test_a_symlink_is_removed_itself_and_its_target_is_not_walked(ws: Path, outside: Path, resolver: str) -> None:
    make_tree(outside / "precious")
    (ws / "shortcut").symlink_to(outside / "precious")
    preview = remover(ws, ScopePolicy.DENY).preview({"path": "shortcut", "recursive": True})
    assert preview == (
        f"remove_path would delete the symbolic link shortcut itself; what it points to ({outside}/precious) stays."
    )


def test_links_inside_a_tree_are_counted_not_followed(ws: Path, outside: Path) -> None:
    make_tree(outside / "huge")
    (ws / "tree").mkdir()
    (ws / "tree" / "to-huge").symlink_to(outside / "huge")
    preview = remover(ws).preview({"path": "tree", "recursive": True})
    assert preview == (
        "remove_path would delete the directory tree and everything in it: "
        "0 files, 0 directories, 1 symbolic link; 0 bytes in all.\n"
        "  tree/to-huge (symbolic link)"
    )


def test_a_large_tree_is_a_lower_bound_after_the_entry_budget(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(surveys, "SURVEY_ENTRIES", 50)
    (ws / "many").mkdir()
    for i in range(120):
        (ws / "many" / f"f{i:03}").write_text("x")
    preview = remover(ws).preview({"path": "many", "recursive": True})
    assert preview is not None
    lines = preview.splitlines()
    assert lines[0] == (
        "remove_path would delete the directory many and everything in it: "
        "at least 50 files, 0 directories, 0 symbolic links; at least 50 bytes in all."
    )
    assert lines[1] == "Counts are a lower bound: counting stopped after 50 entries."
    assert lines[2].startswith("  many/f") and lines[2].endswith(" (1 byte)")
    assert lines[-1] == "  [... and at least 30 more]"
    assert len(lines) == 2 + surveys.SHOWN_ENTRIES + 1


def test_a_slow_walk_stops_when_its_time_runs_out(ws: Path) -> None:
    (ws / "t").mkdir()
    for i in range(10):
        (ws / "t" / f"f{i}").write_text("x")
    ticks = itertools.count()  # a clock that moves one second each time it is read
    with WorkspaceScope(ws).opened_root() as root:
        found = os.stat("t", dir_fd=root, follow_symlinks=False)
        survey = surveys.survey_tree(root, "t", found, Guard(), seconds=3.5, clock=lambda: float(next(ticks)))
    assert survey.stopped == ["counting stopped when its time ran out"] and survey.files == 3


def test_directories_past_the_depth_limit_are_not_entered(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(surveys, "MAX_SURVEY_DEPTH", 2)
    (ws / "d" / "1" / "2" / "3").mkdir(parents=True)
    (ws / "d" / "1" / "2" / "3" / "deep.txt").write_text("x")
    preview = remover(ws).preview({"path": "d", "recursive": True})
    assert preview is not None and "at least 0 files, 3 directories" in preview
    assert "Counts are a lower bound: directories deeper than 2 levels were not counted." in preview


def test_the_workers_secret_file_inside_a_tree_is_called_out(
    ws: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (outside / "cfg").mkdir()
    (outside / "cfg" / "llm.key").write_text("sk-live-123")
    monkeypatch.setenv("SIGNOFF_LLM_API_KEY_FILE", str(outside / "cfg" / "llm.key"))
    preview = remover(ws).preview({"path": str(outside / "cfg"), "recursive": True})
    assert preview is not None and "sk-live" not in preview
    assert "Among them, the worker's own secret file cfg/llm.key (SIGNOFF_LLM_API_KEY_FILE)." in preview


def test_the_secret_file_itself_and_the_workspace_root_are_refused(
    ws: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (outside / "llm.key").write_text("sk-live-123")
    monkeypatch.setenv("SIGNOFF_LLM_API_KEY_FILE", str(outside / "llm.key"))
    secret = remover(ws).preview({"path": str(outside / "llm.key")})
    root = remover(ws).preview({"path": str(ws), "recursive": True})
    assert secret is not None and "is the worker's own secret file (SIGNOFF_LLM_API_KEY_FILE)" in secret
    assert root == f"remove_path would fail, even if approved: {ws} is the workspace root itself; it cannot be removed"


def test_system_trees_are_refused(ws: Path) -> None:
    preview = remover(ws, ScopePolicy.ALLOW).preview({"path": "/proc/self", "recursive": True})
    assert preview is not None and preview.startswith("remove_path would fail, even if approved: ")
    assert "file tools never touch /proc, /sys or /dev" in preview


def test_a_fifo_is_named_not_opened(ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    tool = RemovePath(WorkspaceScope(ws))
    assert tool.preview({"path": "pipe"}) == (
        "remove_path would delete pipe, a FIFO (its name only: nothing is read from it)."
    )


def test_odd_entry_names_are_shown_as_escapes(ws: Path) -> None:
    (ws / "t").mkdir()
    (ws / "t" / "evil\n  fake (0 bytes)\x1b[31m").write_text("")
    preview = remover(ws).preview({"path": "t", "recursive": True})
    assert preview is not None and len(preview.splitlines()) == 2 and "\x1b" not in preview
    assert preview.splitlines()[1] == "  t/evil\\x0a  fake (0 bytes)\\x1b[31m (0 bytes)"


def test_a_system_filesystem_inside_a_tree_is_not_entered(ws: Path) -> None:
    (ws / "t" / "mnt").mkdir(parents=True)
    (ws / "t" / "mnt" / "kcore").write_text("x")
    with WorkspaceScope(ws).opened_root() as root:
        found = os.stat("t", dir_fd=root, follow_symlinks=False)
        system = Guard(devices=frozenset({found.st_dev}))  # as if /proc were mounted there
        survey = surveys.survey_tree(root, "t", found, system)
    assert survey.stopped == ["a system filesystem is mounted at t: not counted"] and survey.entries == 0


def test_names_that_are_not_utf8_are_shown_as_escapes(ws: Path) -> None:
    (ws / "t").mkdir()
    os.close(os.open(os.fsencode(ws / "t") + b"/caf\xe9", os.O_CREAT | os.O_WRONLY))
    preview = remover(ws).preview({"path": "t", "recursive": True})
    assert preview is not None and preview.splitlines()[1] == "  t/caf\\udce9 (0 bytes)"
    preview.encode()  # no lone surrogate left: it can travel as JSON
