"""write_file's effect preview: the diff a person sees, read as the write would open the file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from signoff.tools import (
    ApprovalRequiredTool,
    ListDir,
    ReadFile,
    RunCommand,
    ScopePolicy,
    WorkspaceScope,
    WriteFile,
)
from signoff.tools.preview import diff as diffs
from signoff.tools.preview.gather import MAX_PREVIEW_CHARS
from tests.fs_helpers import resolver

__all__ = ["resolver"]  # a fixture, used by name


def writer(ws: Path, policy: ScopePolicy = ScopePolicy.APPROVE_OUTSIDE) -> WriteFile:
    return WriteFile(WorkspaceScope(ws, policy))


def test_a_new_file_is_shown_as_added_lines(ws: Path) -> None:
    preview = writer(ws).preview({"path": "notes/todo.txt", "content": "one\ntwo\n"})
    assert preview == (
        "--- /dev/null\n"
        "+++ notes/todo.txt (new file: 8 bytes, 2 lines; its missing directories are made)\n"
        "@@ -0,0 +1,2 @@\n"
        "+one\n"
        "+two"
    )
    assert not (ws / "notes").exists()  # a preview changes nothing


def test_a_changed_file_is_a_unified_diff_with_headers_naming_the_path(ws: Path) -> None:
    (ws / "app.cfg").write_text("a\nb\nc\nd\ne\nf\ng\nh\n")
    before = os.stat(ws / "app.cfg")
    preview = writer(ws).preview({"path": "app.cfg", "content": "a\nb\nc\nd\nE\nf\ng\nh\ni"})
    assert preview == (
        "--- app.cfg (now: 16 bytes, 8 lines)\n"
        "+++ app.cfg (after write_file: 17 bytes, 9 lines)\n"
        "@@ -2,7 +2,8 @@\n"
        " b\n c\n d\n-e\n+E\n f\n g\n h\n+i\n"
        "\\ No newline at end of file"
    )
    after = os.stat(ws / "app.cfg")
    assert (after.st_mtime_ns, after.st_size) == (before.st_mtime_ns, before.st_size)


def test_the_same_content_says_nothing_changes(ws: Path) -> None:
    (ws / "same.txt").write_text("x\n")
    preview = writer(ws).preview({"path": "same.txt", "content": "x\n"})
    assert preview == "write_file would leave same.txt as it is: it already holds exactly this content (2 bytes)."


def test_a_huge_diff_is_capped_saying_how_much_was_left_out(ws: Path) -> None:
    (ws / "big.txt").write_text("".join(f"line {i}\n" for i in range(5000)))
    preview = writer(ws).preview({"path": "big.txt", "content": "".join(f"LINE {i}\n" for i in range(5000))})
    assert preview is not None
    lines = preview.splitlines()
    assert len(lines) == diffs.MAX_PREVIEW_LINES + 1 and len(preview) <= MAX_PREVIEW_CHARS + 100
    assert lines[:4] == [
        "--- big.txt (now: 48,890 bytes, 5,000 lines)",
        "+++ big.txt (after write_file: 48,890 bytes, 5,000 lines)",
        "@@ -1,5000 +1,5000 @@ (over 2,000 lines changed: not compared line by line, so all shown replaced)",
        "-line 0",
    ]
    assert lines[-1] == "[... 9,803 more lines not shown, of 10,003]"


def test_one_enormous_line_is_cut_to_the_character_cap(ws: Path) -> None:
    preview = writer(ws).preview({"path": "min.js", "content": "x" * 50_000})
    assert preview is not None and len(preview) < MAX_PREVIEW_CHARS + 200
    assert "[line cut]" in preview and preview.endswith("[... 1 more line not shown, of 5]")


def test_a_large_changed_region_is_shown_as_a_replacement_that_still_applies(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(diffs, "MAX_COMPARED_LINES", 2)
    (ws / "f.txt").write_text("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n")
    preview = writer(ws).preview({"path": "f.txt", "content": "1\n2\n3\n4\nX\nY\nZ\n8\n9\n10\n"})
    assert preview is not None
    assert preview.splitlines()[2:] == [
        "@@ -2,9 +2,9 @@ (over 2 lines changed: not compared line by line, so all shown replaced)",
        " 2",
        " 3",
        " 4",
        "-5",
        "-6",
        "-7",
        "+X",
        "+Y",
        "+Z",
        " 8",
        " 9",
        " 10",
    ]


def test_a_file_too_large_to_compare_is_summarised(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(diffs, "MAX_COMPARED_BYTES", 10)
    (ws / "log.txt").write_text("0123456789abcdef\n")
    preview = writer(ws).preview({"path": "log.txt", "content": "short\n"})
    assert preview == (
        "--- log.txt (now: 17 bytes, over 10: not compared)\n+++ log.txt (after write_file: 6 bytes, 1 line)\n+short"
    )


@pytest.mark.parametrize("data", [b"PK\x03\x04\x00\x00binary", b"caf\xe9 latin-1\n"], ids=["binary", "latin1"])
def test_binary_or_non_utf8_content_is_summarised_not_shown(ws: Path, data: bytes) -> None:
    (ws / "blob").write_bytes(data)
    preview = writer(ws).preview({"path": "blob", "content": "text\n"})
    assert preview == (
        f"--- blob (now: {len(data)} bytes of binary or non-UTF-8 data: not shown)\n"
        "+++ blob (after write_file: 5 bytes, 1 line)\n"
        "+text"
    )


def test_control_and_bidi_characters_are_shown_as_escapes(ws: Path) -> None:
    preview = writer(ws).preview({"path": "x\x1b[2J.txt", "content": "ok\r\nif admin\u202e {\n"})
    assert preview is not None and "\x1b" not in preview and "\u202e" not in preview and "\r" not in preview
    assert "+++ x\\x1b[2J.txt" in preview and "+ok\\x0d" in preview and "+if admin\\u202e {" in preview


def test_a_call_outside_the_workspace_shows_the_new_content_but_not_the_outside_file(ws: Path, outside: Path) -> None:
    """The preview is in history before anyone decides, and a run's starter can read history:
    showing the outside file would let any starter read what read_file needs approval for."""
    (outside / "hosts").write_text("127.0.0.1 localhost\n")
    (ws / "out").symlink_to(outside)
    tool = writer(ws)
    assert tool.requires_approval({"path": "out/hosts", "content": ""})
    preview = tool.preview({"path": "out/hosts", "content": "10.0.0.1 evil\n"})
    assert preview == (
        f"--- out/hosts (now: 20 bytes, not shown: the file is outside the workspace; really {outside}/hosts)\n"
        "+++ out/hosts (after write_file: 14 bytes, 1 line)\n"
        "+10.0.0.1 evil"
    )
    assert "localhost" not in preview


def test_under_deny_a_link_out_is_refused_and_its_target_not_read(ws: Path, outside: Path, resolver: str) -> None:
    (outside / "secret.txt").write_text("TOP SECRET\n")
    (ws / "out").symlink_to(outside)
    tool = ApprovalRequiredTool(writer(ws, ScopePolicy.DENY))  # asked, but deny never widens the scope
    preview = tool.preview({"path": "out/secret.txt", "content": "x"})
    assert preview is not None and "TOP SECRET" not in preview
    assert preview.startswith("write_file would fail, even if approved: path 'out/secret.txt'")
    assert "the scope policy 'deny' refuses it" in preview


def test_a_hard_linked_file_says_the_change_shows_under_each_name(ws: Path, outside: Path) -> None:
    (outside / "data").write_text("v1\n")
    os.link(outside / "data", ws / "alias")
    preview = writer(ws).preview({"path": "alias", "content": "v2\n"})
    assert preview is not None
    assert preview.splitlines()[0] == "--- alias (now: 3 bytes, 1 line; 2 hard links: the change shows under each name)"


def test_a_fifo_is_refused_without_blocking(ws: Path, outside: Path) -> None:
    os.mkfifo(outside / "pipe")  # an open for reading would wait for a writer forever
    preview = writer(ws).preview({"path": str(outside / "pipe"), "content": "x"})
    assert preview == (
        f"write_file would fail, even if approved: {outside}/pipe is not a regular file (a FIFO); "
        "file tools only read and write regular files"
    )


@pytest.mark.parametrize("target", ["/proc/self/environ", "/proc/self/status", "/sys/kernel/hostname"])
def test_system_files_are_refused_even_through_a_link(ws: Path, target: str) -> None:
    (ws / "link").symlink_to(target)
    for path in (target, "link"):
        preview = writer(ws, ScopePolicy.ALLOW).preview({"path": path, "content": "x"})
        assert preview is not None and preview.startswith("write_file would fail, even if approved: ")
        assert "file tools never touch /proc, /sys or /dev" in preview


def test_the_workers_secret_file_is_refused_by_any_name(
    ws: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (outside / "api.key").write_text("sk-live-123\n")
    os.link(outside / "api.key", outside / "innocent.txt")
    monkeypatch.setenv("SIGNOFF_LLM_API_KEY_FILE", str(outside / "api.key"))
    for name in ("api.key", "innocent.txt"):
        preview = writer(ws).preview({"path": str(outside / name), "content": "x"})
        assert preview is not None and "sk-live" not in preview
        assert "is the worker's own secret file (SIGNOFF_LLM_API_KEY_FILE)" in preview


def test_a_dangling_link_is_refused_as_the_write_would_refuse_it(ws: Path, outside: Path) -> None:
    (ws / "dangling").symlink_to(outside / "nothing-here")
    preview = writer(ws, ScopePolicy.ALLOW).preview({"path": "dangling", "content": "x"})
    assert preview == (
        "write_file would fail, even if approved: dangling is a symbolic link to a file that does not exist; "
        "write to the file's own path instead"
    )
    assert not (outside / "nothing-here").exists()


def test_invalid_arguments_say_what_the_tool_would_answer(ws: Path) -> None:
    preview = writer(ws).preview({"path": "x.txt"})
    assert preview is not None and preview.startswith("write_file would fail, even if approved: ")
    assert "content" in preview


def test_reading_tools_have_no_preview_and_run_command_none(ws: Path) -> None:
    scope = WorkspaceScope(ws)
    # a preview of read_file or list_dir would show what the approval is about before anyone approves
    assert getattr(ReadFile(scope), "preview", None) is None and getattr(ListDir(scope), "preview", None) is None
    assert getattr(ApprovalRequiredTool(RunCommand(scope)), "preview", None) is None
    wrapped = ApprovalRequiredTool(writer(ws))
    assert wrapped.preview({"path": "n.txt", "content": "hi\n"}).endswith("+hi")


def test_a_workspace_reached_through_a_link_is_not_called_elsewhere(tmp_path: Path, ws: Path) -> None:
    (tmp_path / "ws-link").symlink_to(ws)
    (ws / "a.txt").write_text("1\n")
    preview = WriteFile(WorkspaceScope(tmp_path / "ws-link")).preview({"path": "a.txt", "content": "2\n"})
    assert preview is not None and preview.splitlines()[0] == "--- a.txt (now: 2 bytes, 1 line)"


def test_lone_surrogates_never_reach_the_preview(ws: Path) -> None:
    new = writer(ws).preview({"path": "bad\udcff.txt", "content": "ok\n"})
    failing = writer(ws).preview({"path": "ok.txt", "content": "half a pair \ud800"})
    assert new is not None and "+++ bad\\udcff.txt (new file" in new
    assert failing is not None and failing.startswith("write_file would fail, even if approved: ")
    new.encode(), failing.encode()  # no lone surrogate left: both can travel as JSON
