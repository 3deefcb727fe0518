"""The walk behind `signoff.tools.files.fs.open_beneath` where the kernel has no `openat2`.

One component at a time, each opened relative to its parent's descriptor with
`O_NOFOLLOW` (or `O_PATH | O_NOFOLLOW`), so the kernel never follows a link for us.
A symlink's text is read from the descriptor that holds the link and resolved here,
from the directory holding it; `..` returns to the descriptor the walk came from, so
it never climbs above the root; absolute names leave the root (or, `in_root`, restart
at it). A link on procfs, where magic links such as `/proc/self/fd/N` live, ends the
walk with ELOOP, as `RESOLVE_NO_MAGICLINKS` does: the walk cannot tell magic links
from plain ones there, so it follows none of them.
"""

from __future__ import annotations

import errno
import os
import stat

MAX_SYMLINKS = 40
"""Links followed in one resolution before ELOOP, as the kernel's limit."""


class EscapeError(OSError):
    """The path leads out of the directory it must stay beneath (errno EXDEV)."""

    def __init__(self, path: str) -> None:
        super().__init__(errno.EXDEV, "leads outside the directory it must stay beneath", path)


def walk_beneath(root_fd: int, path: str, flags: int, mode: int = 0o666, *, in_root: bool = False) -> int:
    """`signoff.tools.files.fs.open_beneath` without `openat2`: one component at a time."""
    if not path:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
    walk = _Walk(root_fd, path, in_root)
    try:
        return walk.open(flags | os.O_CLOEXEC, mode)
    finally:
        walk.close()


def mounted_devices(fs_types: frozenset[str]) -> set[int]:
    """Devices (`st_dev`) of every mount of one of `fs_types`, from /proc/self/mountinfo.

    Empty when mountinfo cannot be read (no /proc: nothing of it can be reached either).
    """
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as mounts:
            lines = mounts.read().splitlines()
    except OSError:
        return set()
    devices = set()
    for line in lines:
        fields = line.split()
        # id, parent, major:minor, root, mount point, options, optional fields..., "-", type
        separator = fields.index("-", 6) if "-" in fields[6:] else len(fields) - 1
        if fields[separator + 1 : separator + 2] and fields[separator + 1] in fs_types:
            major, _, minor = fields[2].partition(":")
            devices.add(os.makedev(int(major), int(minor)))
    return devices


class _Walk:
    """One confined resolution: a stack of directory descriptors and the names still to go."""

    def __init__(self, root_fd: int, path: str, in_root: bool) -> None:
        self.root_fd, self.path, self.in_root = root_fd, path, in_root
        self.stack: list[int] = []  # owned O_PATH descriptors beneath the root, innermost last
        self.pending: list[str] = []  # components still to resolve, the next one last
        self.links = 0
        self.proc_devices: set[int] | None = None  # where magic links live; read when needed
        self._queue(path)

    @property
    def here(self) -> int:
        return self.stack[-1] if self.stack else self.root_fd

    def open(self, flags: int, mode: int) -> int:
        while True:
            name = self.pending.pop()
            last = not self.pending
            if name == "..":
                self._up()
            if name in ("", ".", ".."):
                if last:  # the path names a directory already held
                    if flags & os.O_CREAT:  # as the kernel: O_EXCL is checked first
                        if flags & os.O_EXCL:
                            raise _error(FileExistsError, errno.EEXIST, self.path)
                        raise _error(IsADirectoryError, errno.EISDIR, self.path)
                    return os.open(".", flags, mode, dir_fd=self.here)
            elif last:
                if (fd := self._last(name, flags, mode)) is not None:
                    return fd
            elif flags & os.O_CREAT and not any(self.pending):
                raise _error(IsADirectoryError, errno.EISDIR, self.path)  # `name/` to create
            else:
                self._step(name)

    def close(self) -> None:
        while self.stack:
            os.close(self.stack.pop())

    def _queue(self, text: str) -> None:
        if text.startswith("/"):
            if not self.in_root:
                raise EscapeError(self.path)
            self.close()  # back to the root, which stands for `/`
        self.pending.extend(reversed(text.split("/")))

    def _up(self) -> None:
        if self.stack:
            os.close(self.stack.pop())
        elif not self.in_root:
            raise EscapeError(self.path)

    def _follow(self, text: str) -> None:
        self._count_link()
        self._queue(text)

    def _count_link(self) -> None:
        self.links += 1
        if self.links > MAX_SYMLINKS:
            raise _error(OSError, errno.ELOOP, self.path)

    def _step(self, name: str) -> None:
        """Enter directory `name`, or queue its link text: never through the kernel."""
        fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=self.here)
        try:
            found = os.fstat(fd)
            if stat.S_ISDIR(found.st_mode):
                self.stack.append(fd)
                return
            text = self._link_text(fd, found)
            if text is None:
                raise _error(NotADirectoryError, errno.ENOTDIR, self.path)
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
        self._follow(text)

    def _last(self, name: str, flags: int, mode: int) -> int | None:
        """Open the last component; None when it was a symlink, now queued to follow."""
        if flags & os.O_NOFOLLOW or (flags & os.O_CREAT and flags & os.O_EXCL):
            return os.open(name, flags, mode, dir_fd=self.here)
        text = self._link_at(name)
        if text is not None:
            self._follow(text)
            return None
        try:
            fd = os.open(name, flags | os.O_NOFOLLOW, mode, dir_fd=self.here)
        except OSError as exc:  # a link appeared: ELOOP, or ENOTDIR with O_DIRECTORY
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR) or self._link_at(name) is None:
                raise
            fd = None
        if fd is not None and flags & os.O_PATH and stat.S_ISLNK(os.fstat(fd).st_mode):
            os.close(fd)  # a link appeared (O_PATH opens the link itself)
            fd = None
        if fd is None:  # look again, counted as a link so that a flapping name ends
            self._count_link()
            self.pending.append(name)
        return fd

    def _link_at(self, name: str) -> str | None:
        """The text of symlink `name` here; None when it is something else or missing."""
        try:
            fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=self.here)
        except FileNotFoundError:
            return None
        try:
            return self._link_text(fd, os.fstat(fd))
        finally:
            os.close(fd)

    def _link_text(self, fd: int, found: os.stat_result) -> str | None:
        """What link `fd` (opened `O_PATH | O_NOFOLLOW`) holds; None if it is no link.

        Raises:
            OSError: ELOOP for a magic link of procfs (`/proc/self/fd/N`), which
                `RESOLVE_NO_MAGICLINKS` refuses too.
        """
        if not stat.S_ISLNK(found.st_mode):
            return None
        if self.proc_devices is None:
            self.proc_devices = mounted_devices(frozenset({"proc"}))
        if found.st_dev in self.proc_devices:
            raise _error(OSError, errno.ELOOP, self.path)
        return os.readlink("", dir_fd=fd)  # the link this descriptor holds, not a new lookup


def _error(kind: type[OSError], code: int, path: str) -> OSError:
    return kind(code, os.strerror(code), path)


__all__ = ["MAX_SYMLINKS", "EscapeError", "mounted_devices", "walk_beneath"]
