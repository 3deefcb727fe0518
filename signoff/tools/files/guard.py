"""What file tools never touch, whatever the scope policy says.

- `/proc`, `/sys` and `/dev`: judged by real path before anything is opened, and again by
  the opened descriptor (its real path, and its device against those filesystems and every
  mount of their kinds), so neither a symlink, a bind mount nor a race brings them back.
- The worker's own secret files (`signoff.config.secrets`, the one registry of them): judged by
  the device and inode of what was opened, so another name or a hard link does not help.
- Anything but a regular file, for reading and writing: a FIFO or a device could block a
  worker thread forever or act on open.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field

from signoff.config.environment import Environment
from signoff.config.secrets import secret_paths
from signoff.tools.files.fs import mounted_devices

SYSTEM_TREES = ("/proc", "/sys", "/dev")

# Filesystem types that only ever hold kernel or device state: refused wherever mounted.
_SYSTEM_FS_TYPES = frozenset(
    {
        "proc",
        "sysfs",
        "devtmpfs",
        "devpts",
        "mqueue",
        "cgroup",
        "cgroup2",
        "securityfs",
        "debugfs",
        "tracefs",
        "pstore",
        "bpf",
        "configfs",
        "efivarfs",
        "fusectl",
        "binfmt_misc",
    }
)
_KINDS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFLNK: "a symbolic link",
}


class PathRefused(Exception):
    """A file-tool call that must not run; the message is the tool error the model reads."""


def _tree_of(real: str) -> str | None:
    for tree in SYSTEM_TREES:
        if real == tree or real.startswith(tree + "/"):
            return tree
    return None


def _system_devices() -> frozenset[int]:
    """Devices of `/proc`, `/sys`, `/dev` (where mounted) and of every system filesystem."""
    root = os.stat("/").st_dev
    devices = set()
    for tree in SYSTEM_TREES:
        try:
            device = os.stat(tree).st_dev
        except OSError:
            continue
        if device != root:  # a plain directory of `/` is not refused by device
            devices.add(device)
    devices.update(mounted_devices(_SYSTEM_FS_TYPES))
    return frozenset(devices)


def _secret_files(env: Environment) -> dict[tuple[int, int], str]:
    secrets = {}
    for name, path in secret_paths(env).items():
        try:
            found = os.stat(path)
        except (OSError, ValueError):
            continue  # missing: nothing to protect (the worker will say so itself)
        secrets[(found.st_dev, found.st_ino)] = name
    return secrets


def descriptor_path(fd: int) -> str | None:
    """Where `fd` really is, as the kernel names it (None when it cannot say)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


@dataclass(frozen=True)
class Guard:
    """The off-limits set as of one call: system devices and the worker's secret files."""

    devices: frozenset[int] = frozenset()
    secrets: Mapping[tuple[int, int], str] = field(default_factory=dict)

    @classmethod
    def now(cls, env: Environment | None = None) -> Guard:
        """Read the mounts and the secret files' identities now (the process's environment when
        `env` is None)."""
        return cls(_system_devices(), _secret_files(env or Environment()))

    def check_opened(self, shown: str, fd: int, found: os.stat_result) -> None:
        """Refuse what `fd` (whose `fstat` is `found`) opened, if it is off limits.

        Raises:
            PathRefused: it is in a system filesystem or is one of the worker's secret files.
        """
        real = descriptor_path(fd)
        tree = _tree_of(real) if real and real.startswith("/") else None
        if found.st_dev in self.devices or tree is not None:
            raise PathRefused(_system_message(shown, tree or "a system filesystem"))
        self.check_secret(shown, found)

    def check_entry(self, shown: str, found: os.stat_result) -> None:
        """Refuse an entry met inside a tree: on a system filesystem, or a secret file.

        Raises:
            PathRefused: it is.
        """
        if found.st_dev in self.devices:
            raise PathRefused(_system_message(shown, "a system filesystem"))
        self.check_secret(shown, found)

    def check_secret(self, shown: str, found: os.stat_result) -> None:
        """Refuse `found` if it is one of the worker's secret files (by device and inode).

        Raises:
            PathRefused: it is.
        """
        secret = self.secrets.get((found.st_dev, found.st_ino))
        if secret is not None:
            raise PathRefused(
                f"{shown!r} is the worker's own secret file ({secret}); file tools never read, write or remove it"
            )


def check_path(shown: str, absolute: str) -> None:
    """Refuse a path whose real location is in `/proc`, `/sys` or `/dev`; opens nothing.

    Raises:
        PathRefused: it is.
    """
    tree = _tree_of(os.path.realpath(absolute))
    if tree is not None:
        raise PathRefused(_system_message(shown, tree))


def _system_message(shown: str, where: str) -> str:
    return f"{shown!r} is in {where}: file tools never touch /proc, /sys or /dev, whatever the scope policy"


def kind_of(found: os.stat_result) -> str:
    """What kind of file `found` is, in words (`a FIFO`, `a regular file`, ...)."""
    return _KINDS.get(stat.S_IFMT(found.st_mode), "a regular file")


def require_regular(shown: str, found: os.stat_result) -> None:
    """Refuse anything but a regular file; a directory raises `IsADirectoryError`.

    Raises:
        IsADirectoryError: it is a directory (callers word their own hint).
        PathRefused: it is a FIFO, device, socket or link.
    """
    if stat.S_ISDIR(found.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), shown)
    if not stat.S_ISREG(found.st_mode):
        raise PathRefused(
            f"{shown} is not a regular file ({kind_of(found)}); file tools only read and write regular files"
        )


def is_beneath(real: str | os.PathLike[str] | None, root: str | os.PathLike[str]) -> bool:
    """Whether the real path `real` is `root` or lies under it (None: unknown, so no)."""
    if real is None:
        return False
    top = os.fspath(root)
    return os.path.commonpath([os.fspath(real), top]) == top


__all__ = [
    "SYSTEM_TREES",
    "Guard",
    "PathRefused",
    "check_path",
    "descriptor_path",
    "is_beneath",
    "kind_of",
    "require_regular",
]
