"""Confined path resolution: open a path beneath a directory without ever leaving it.

`open_beneath` has the semantics of Linux's `openat2(2)` with `_RESOLVE_BENEATH |
_RESOLVE_NO_MAGICLINKS`, and gets them one of two ways:

- the kernel's `openat2` (Linux 5.6+), where it exists and is allowed (a seccomp filter may
  answer ENOSYS or EPERM);
- otherwise a walk (`signoff.tools.files._fswalk`), one component at a time, each opened
  relative to its parent's descriptor with `O_NOFOLLOW`, links resolved by the walk itself:
  nothing a concurrent process renames or swaps can make a step land anywhere but beneath a
  directory the walk already holds.

Either way, an absolute path or symlink, or `..` above the root, raises `EscapeError` (errno
EXDEV, as `openat2` does); more than `MAX_SYMLINKS` links raise ELOOP. With `in_root=True`
the root is treated as `/` instead (`_RESOLVE_IN_ROOT`): opened on `/` itself, that is ordinary
resolution without magic links, for calls that are allowed to go anywhere.

Linux only (`O_PATH`).
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import platform
import stat
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from signoff.tools.files._fswalk import (
    MAX_SYMLINKS,
    EscapeError,
    mounted_devices,
    walk_beneath,
)

_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_BENEATH = 0x08
_RESOLVE_IN_ROOT = 0x10

_SYS_OPENAT2 = 437  # the same number on every architecture listed below
_OPENAT2_MACHINES = frozenset({"x86_64", "i686", "i386", "aarch64", "arm64", "armv7l", "riscv64", "ppc64le", "s390x"})
_AT_FDCWD = -100
_EAGAIN_RETRIES = 16
_openat2_works: bool | None = None  # None: not probed yet


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


@functools.cache
def _syscall() -> Any:
    syscall = ctypes.CDLL(None, use_errno=True).syscall
    syscall.restype = ctypes.c_long
    return syscall


def _raw_openat2(dir_fd: int, path: str, flags: int, mode: int, resolve: int) -> int:
    how = _OpenHow(flags, mode, resolve)
    fd = _syscall()(
        ctypes.c_long(_SYS_OPENAT2),
        ctypes.c_int(dir_fd),
        ctypes.c_char_p(os.fsencode(path)),
        ctypes.byref(how),
        ctypes.c_size_t(ctypes.sizeof(how)),
    )
    if fd < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), path)
    return int(fd)


def openat2_available() -> bool:
    """Whether the kernel's `openat2` is used (probed once, on first use)."""
    global _openat2_works
    if _openat2_works is None:
        _openat2_works = _probe_openat2()
    return _openat2_works


def _probe_openat2() -> bool:
    if platform.system() != "Linux" or platform.machine() not in _OPENAT2_MACHINES:
        return False
    try:
        fd = _raw_openat2(_AT_FDCWD, "/", os.O_PATH | os.O_CLOEXEC, 0, _RESOLVE_NO_MAGICLINKS)
    except (OSError, AttributeError):  # ENOSYS, EPERM (seccomp), E2BIG, no libc symbol
        return False
    os.close(fd)
    return True


def open_beneath(root_fd: int, path: str, flags: int, mode: int = 0o666, *, in_root: bool = False) -> int:
    """Open `path` relative to `root_fd`, never resolving anything outside it.

    Symlinks are followed (the last one too, unless `flags` has `O_NOFOLLOW`, or `O_CREAT |
    O_EXCL`), but only while they stay beneath the root. The caller owns the descriptor.

    Args:
        root_fd: the directory to stay beneath (an `O_PATH` descriptor is enough).
        path: relative to `root_fd`; absolute only with `in_root`.
        flags: `os.open` flags; `O_CLOEXEC` is always added.
        mode: permissions of a file `O_CREAT` makes.
        in_root: treat the root as `/` (absolute names and `..` above it stay at it).

    Raises:
        EscapeError: the path leads outside the root.
        OSError: as `openat2` would raise it (ENOENT, ENOTDIR, ELOOP, EISDIR, ...).
        ValueError: the path contains a NUL byte.
    """
    if "\0" in path:
        raise ValueError("embedded null byte")
    if openat2_available():
        try:
            return _openat2_beneath(root_fd, path, flags, mode, in_root)
        except OSError as exc:
            if exc.errno != errno.ENOSYS:
                raise
            _disable_openat2()  # e.g. a seccomp filter installed after the probe
    return walk_beneath(root_fd, path, flags, mode, in_root=in_root)


def _disable_openat2() -> None:
    global _openat2_works
    _openat2_works = False


def _openat2_beneath(root_fd: int, path: str, flags: int, mode: int, in_root: bool) -> int:
    resolve = (_RESOLVE_IN_ROOT if in_root else _RESOLVE_BENEATH) | _RESOLVE_NO_MAGICLINKS
    mode = mode if flags & os.O_CREAT else 0  # openat2 rejects a mode it would not use
    for _ in range(_EAGAIN_RETRIES):
        try:
            return _raw_openat2(root_fd, path, flags | os.O_CLOEXEC, mode, resolve)
        except OSError as exc:
            if exc.errno == errno.EXDEV:
                raise EscapeError(path) from None
            if exc.errno != errno.EAGAIN:  # EAGAIN: a rename or mount raced the lookup
                raise
    raise OSError(errno.EAGAIN, "the directory tree kept changing during the lookup", path)


@dataclass(frozen=True)
class Probe:
    """What a path names beneath a root, looked up without changing anything.

    Attributes:
        leaves: resolving it (its existing part through links, the missing rest as written)
            would leave the root.
        stat: the object it names now, links followed; None when it does not exist yet
            (or cannot be reached for another reason, which using it will report).
    """

    leaves: bool
    stat: os.stat_result | None = None


def split_path(path: str) -> list[str]:
    """`path`'s components, without empty ones and `.` (which change nothing)."""
    return [part for part in path.split("/") if part not in ("", ".")]


def probe_beneath(root_fd: int, path: str, *, in_root: bool = False) -> Probe:
    """Whether `path` stays beneath `root_fd`, and what it names now, with no side effects.

    The longest prefix that can be opened is resolved by `open_beneath`; the rest, which does
    not exist yet, is taken as written (`missing/../x` is `x`), as creating it would make it.

    Raises:
        ValueError: the path contains a NUL byte.
    """
    if path.startswith("/") and not in_root:
        return Probe(leaves=True)
    parts = split_path(path)
    for known in range(len(parts), -1, -1):
        head = "/".join(parts[:known]) or "."
        try:
            fd = open_beneath(root_fd, head, os.O_PATH, in_root=in_root)
        except EscapeError:
            return Probe(leaves=True)
        except OSError:
            continue  # missing (or unreachable): try a shorter prefix
        try:
            found = os.fstat(fd)
        finally:
            os.close(fd)
        if known == len(parts):
            return Probe(leaves=False, stat=found)
        return Probe(leaves=_climbs_out(root_fd, head, parts[known:], in_root))
    return Probe(leaves=False)  # not reached: the root itself always opens


def _climbs_out(root_fd: int, head: str, missing: list[str], in_root: bool) -> bool:
    """Whether the not-yet-existing `missing` part climbs with `..` out of the root."""
    depth, ups = 0, 0
    for part in missing:
        if part != "..":
            depth += 1
        elif depth:
            depth -= 1
        else:
            ups += 1
    if not ups:
        return False
    try:
        os.close(open_beneath(root_fd, "/".join([head, *[".."] * ups]), os.O_PATH, in_root=in_root))
    except EscapeError:
        return True
    except OSError:
        return False  # e.g. `head` is a file: using the path fails; it does not leave
    return False


def make_dirs_beneath(root_fd: int, path: str, *, in_root: bool = False, owner: tuple[int, int] | None = None) -> int:
    """Open directory `path` beneath the root, creating what is missing one level at a time.

    Each level is created with `mkdirat` in the descriptor of the level above, which was
    opened confined, and then reopened confined: a race can fail the call, never move it out.
    Returns an `O_PATH` descriptor of the directory, which the caller closes. Levels it makes
    are given to `owner` (uid, gid) when one is named.

    Raises:
        EscapeError: a level leads outside the root.
        OSError: a level cannot be created or is not a directory.
    """
    if path.startswith("/"):
        if not in_root:
            raise EscapeError(path)
        path = path.lstrip("/")  # the root stands for `/`
    directory = os.O_PATH | os.O_DIRECTORY
    try:
        return open_beneath(root_fd, path or ".", directory, in_root=in_root)  # the common case: it exists
    except FileNotFoundError:
        pass
    parts = split_path(path)
    here = open_beneath(root_fd, ".", directory, in_root=in_root)
    try:
        for level in range(1, len(parts) + 1):
            head = "/".join(parts[:level])
            try:
                below = open_beneath(root_fd, head, directory, in_root=in_root)
            except FileNotFoundError:
                try:
                    os.mkdir(parts[level - 1], 0o777, dir_fd=here)
                    if owner is not None:
                        os.chown(parts[level - 1], *owner, dir_fd=here, follow_symlinks=False)
                except FileExistsError:
                    pass  # made meanwhile, or a dangling link: the reopen decides
                below = open_beneath(root_fd, head, directory, in_root=in_root)
            os.close(here)
            here = below
    except BaseException:
        os.close(here)
        raise
    return here


def _anything(path: str, found: os.stat_result) -> None:
    """A `remove_tree` check that keeps nothing."""


def remove_tree(dir_fd: int, name: str, check: Callable[[str, os.stat_result], None] = _anything) -> None:
    """Remove directory `name` of `dir_fd` and everything in it, following no link.

    Each level is opened `O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK` relative to its parent's
    descriptor, so a link met on the way is removed itself, and an entry swapped for a
    FIFO fails the call instead of blocking it (as `shutil.rmtree`'s plain open could).
    `check(path, stat)` sees every entry below `name` (path relative to `name`'s parent) and
    raises to keep it: the whole tree is checked before anything is removed, and each entry
    again just before it is, so what it refuses stays even if it appears meanwhile.

    Raises:
        OSError: something could not be removed (what was removed before stays removed).
        Exception: whatever `check` raised (nothing was removed if the first pass raised).
    """
    _walk_tree(dir_fd, name, name, check, remove=False)
    _walk_tree(dir_fd, name, name, check, remove=True)


def _walk_tree(
    dir_fd: int, name: str, shown: str, check: Callable[[str, os.stat_result], None], *, remove: bool
) -> None:
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    fd = os.open(name, flags, dir_fd=dir_fd)
    try:
        with os.scandir(fd) as found:
            entries = [(entry.name, entry.stat(follow_symlinks=False)) for entry in found]
        for entry, info in entries:
            check(f"{shown}/{entry}", info)
            if stat.S_ISDIR(info.st_mode):
                _walk_tree(fd, entry, f"{shown}/{entry}", check, remove=remove)
            elif remove:
                os.unlink(entry, dir_fd=fd)
    finally:
        os.close(fd)
    if remove:
        os.rmdir(name, dir_fd=dir_fd)


__all__ = [
    "MAX_SYMLINKS",
    "EscapeError",
    "Probe",
    "make_dirs_beneath",
    "mounted_devices",
    "open_beneath",
    "openat2_available",
    "probe_beneath",
    "remove_tree",
    "split_path",
]
