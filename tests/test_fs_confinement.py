"""signoff.tools.files.fs: confined resolution, with the kernel's openat2 and with the fallback walk."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from signoff.tools.files import fs
from signoff.tools.files.fs import (
    MAX_SYMLINKS,
    EscapeError,
    make_dirs_beneath,
    open_beneath,
    probe_beneath,
    remove_tree,
)
from tests.fs_helpers import refuse_openat2_with, resolver

__all__ = ["resolver"]  # a fixture, used by name


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """ws/ with a file, a subdirectory and links of every kind; out/ beside it."""
    ws, out = tmp_path / "ws", tmp_path / "out"
    (ws / "a" / "b").mkdir(parents=True)
    out.mkdir()
    (ws / "f").write_text("inside")
    (ws / "a" / "b" / "g").write_text("deep")
    (out / "secret").write_text("outside")
    (ws / "a" / "lb").symlink_to("b")  # relative, stays inside
    (ws / "a" / "up").symlink_to("../f")  # relative, up but inside
    (ws / "a" / "esc").symlink_to("../../out")  # relative, climbs out
    (ws / "abs").symlink_to(out)  # absolute: leaves, as RESOLVE_BENEATH has it
    (ws / "absin").symlink_to(ws / "f")  # absolute even though it points inside
    (ws / "dangling").symlink_to("missing")
    (ws / "loop").symlink_to("loop")
    os.mkfifo(ws / "fifo")
    return ws


@pytest.fixture
def root(tree: Path) -> Iterator[int]:
    fd = os.open(tree, os.O_PATH | os.O_DIRECTORY)
    yield fd
    os.close(fd)


def identity(fd: int) -> tuple[int, int]:
    try:
        found = os.fstat(fd)
    finally:
        os.close(fd)
    return found.st_dev, found.st_ino


def same_file(path: Path) -> tuple[int, int]:
    found = os.stat(path)
    return found.st_dev, found.st_ino


@pytest.mark.parametrize(
    ("path", "expected"),
    [("f", "f"), ("a/lb/g", "a/b/g"), ("a/up", "f"), ("a/b/../../f", "f"), ("a/./b//g", "a/b/g")],
)
def test_paths_that_stay_inside_open_the_file_they_name(
    resolver: str, tree: Path, root: int, path: str, expected: str
) -> None:
    assert identity(open_beneath(root, path, os.O_RDONLY)) == same_file(tree / expected)


@pytest.mark.parametrize("path", ["..", "../out/secret", "a/../../out", "a/esc/secret", "abs/secret", "absin", "/etc"])
def test_paths_that_leave_raise_escape_error(resolver: str, root: int, path: str) -> None:
    with pytest.raises(EscapeError) as caught:
        open_beneath(root, path, os.O_RDONLY)
    assert caught.value.errno == errno.EXDEV


def test_creating_through_a_link_that_leaves_creates_nothing(resolver: str, tree: Path, root: int) -> None:
    with pytest.raises(EscapeError):
        open_beneath(root, "abs/new", os.O_WRONLY | os.O_CREAT)
    assert sorted(p.name for p in (tree.parent / "out").iterdir()) == ["secret"]


def test_a_symlink_loop_is_eloop(resolver: str, root: int) -> None:
    with pytest.raises(OSError) as caught:
        open_beneath(root, "loop", os.O_RDONLY)
    assert caught.value.errno == errno.ELOOP


def test_more_links_than_the_limit_is_eloop(resolver: str, tree: Path, root: int) -> None:
    for n in range(MAX_SYMLINKS + 1):
        (tree / f"l{n}").symlink_to(f"l{n + 1}" if n < MAX_SYMLINKS else "f")
    assert identity(open_beneath(root, f"l{1}", os.O_RDONLY)) == same_file(tree / "f")
    with pytest.raises(OSError) as caught:
        open_beneath(root, "l0", os.O_RDONLY)
    assert caught.value.errno == errno.ELOOP


def test_nofollow_refuses_a_final_symlink(resolver: str, root: int) -> None:
    with pytest.raises(OSError) as caught:
        open_beneath(root, "a/up", os.O_RDONLY | os.O_NOFOLLOW)
    assert caught.value.errno == errno.ELOOP


def test_a_fifo_opens_without_blocking(resolver: str, root: int) -> None:
    fd = open_beneath(root, "fifo", os.O_RDONLY | os.O_NONBLOCK)
    os.close(fd)
    with pytest.raises(OSError) as caught:  # no reader: ENXIO at once, not a hang
        open_beneath(root, "fifo", os.O_WRONLY | os.O_NONBLOCK)
    assert caught.value.errno == errno.ENXIO


def test_create_follows_a_dangling_link_only_while_it_stays_inside(resolver: str, tree: Path, root: int) -> None:
    os.close(open_beneath(root, "dangling", os.O_WRONLY | os.O_CREAT, 0o600))
    assert (tree / "missing").is_file()


@pytest.mark.parametrize(
    ("path", "flags", "code"),
    [
        ("nope/x", os.O_RDONLY, errno.ENOENT),
        ("f/x", os.O_RDONLY, errno.ENOTDIR),
        ("f", os.O_RDONLY | os.O_DIRECTORY, errno.ENOTDIR),
        ("a", os.O_WRONLY, errno.EISDIR),
        ("a/", os.O_WRONLY | os.O_CREAT, errno.EISDIR),
        ("new/", os.O_WRONLY | os.O_CREAT, errno.EISDIR),
        (".", os.O_WRONLY | os.O_CREAT | os.O_EXCL, errno.EEXIST),
        ("f", os.O_WRONLY | os.O_CREAT | os.O_EXCL, errno.EEXIST),
        ("", os.O_RDONLY, errno.ENOENT),
    ],
)
def test_errors_match_the_kernel(resolver: str, root: int, path: str, flags: int, code: int) -> None:
    with pytest.raises(OSError) as caught:
        open_beneath(root, path, flags)
    assert caught.value.errno == code


def test_in_root_treats_the_root_as_slash(resolver: str, tree: Path) -> None:
    slash = os.open("/", os.O_PATH | os.O_DIRECTORY)
    try:
        through_out = open_beneath(slash, f"{tree}/abs/secret", os.O_RDONLY, in_root=True)
        above = open_beneath(slash, f"/../..{tree}/f", os.O_RDONLY, in_root=True)
        assert identity(through_out) == same_file(tree.parent / "out" / "secret")
        assert identity(above) == same_file(tree / "f")
    finally:
        os.close(slash)


def test_magic_links_are_not_followed(resolver: str) -> None:
    slash = os.open("/", os.O_PATH | os.O_DIRECTORY)
    try:
        with pytest.raises(OSError) as caught:
            open_beneath(slash, f"/proc/self/fd/{slash}", os.O_PATH, in_root=True)
        assert caught.value.errno == errno.ELOOP
    finally:
        os.close(slash)


def test_a_nul_byte_is_a_value_error(resolver: str, root: int) -> None:
    with pytest.raises(ValueError):
        open_beneath(root, "a\0b", os.O_RDONLY)


@pytest.mark.parametrize(
    ("path", "leaves"),
    [
        ("f", False),
        ("missing/../f", False),
        ("new/deeper/../x", False),
        ("new/../../x", True),
        ("a/esc/new", True),
        ("abs/new/file", True),
        ("dangling", False),
        ("/etc/passwd", True),
    ],
)
def test_probe_judges_missing_parts_as_written(resolver: str, root: int, path: str, leaves: bool) -> None:
    assert probe_beneath(root, path).leaves is leaves


def test_probe_reports_what_an_existing_path_names(resolver: str, tree: Path, root: int) -> None:
    os.link(tree / "f", tree / "f2")
    found = probe_beneath(root, "a/up").stat
    assert found is not None and found.st_nlink == 2 and found.st_ino == same_file(tree / "f")[1]


def test_probe_changes_nothing(resolver: str, tree: Path, root: int) -> None:
    before = sorted(p.name for p in tree.iterdir())
    probe_beneath(root, "new/dirs/file")
    assert sorted(p.name for p in tree.iterdir()) == before


def test_make_dirs_creates_each_level_beneath_the_root(resolver: str, tree: Path, root: int) -> None:
    assert identity(make_dirs_beneath(root, "a/lb/n1/n2")) == same_file(tree / "a/b/n1/n2")


def test_make_dirs_refuses_to_climb_out_and_creates_nothing_outside(resolver: str, tree: Path, root: int) -> None:
    with pytest.raises(EscapeError):
        make_dirs_beneath(root, "a/esc/new")
    with pytest.raises(EscapeError):
        make_dirs_beneath(root, "n/../../escaped")
    assert not (tree.parent / "out" / "new").exists() and not (tree.parent / "escaped").exists()


def test_remove_tree_removes_links_not_their_targets(tree: Path, root: int) -> None:
    (tree / "a" / "b" / "to-out").symlink_to(tree.parent / "out")
    remove_tree(root, "a")
    assert not (tree / "a").exists() and (tree.parent / "out" / "secret").read_text() == "outside"


def test_remove_tree_fails_on_a_fifo_where_a_directory_was_instead_of_blocking(tree: Path, root: int) -> None:
    with pytest.raises(NotADirectoryError):
        remove_tree(root, "fifo")


@pytest.mark.parametrize("code", [errno.ENOSYS, errno.EPERM])
def test_without_openat2_the_walk_is_used(code: int, tree: Path, root: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fs, "_openat2_works", None)  # probe again
    refuse_openat2_with(code, monkeypatch)
    assert not fs.openat2_available()
    assert identity(open_beneath(root, "a/lb/g", os.O_RDONLY)) == same_file(tree / "a/b/g")
    with pytest.raises(EscapeError):
        open_beneath(root, "a/esc/secret", os.O_RDONLY)


def test_openat2_failing_with_enosys_later_falls_back_to_the_walk(
    tree: Path, root: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fs, "_openat2_works", True)
    refuse_openat2_with(errno.ENOSYS, monkeypatch)
    assert identity(open_beneath(root, "a/up", os.O_RDONLY)) == same_file(tree / "f")
    assert fs._openat2_works is False
