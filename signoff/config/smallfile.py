"""Reading the small files a worker keeps to itself (keys, secrets) without being stalled.

Each secret file a setting names (`signoff.config.secrets` lists them) is read here: opened
non-blocking, so a FIFO planted at the path cannot hang the worker, and read only if it is a
regular file no larger than its reader expects, that nobody but its owner may change, and
(a secret, `private`) that nobody but its owner may read: a key that others can read is a
key others may hold, so the worker refuses to start on it, with the `chmod` that fixes it.
Callers word the other errors for their setting.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from signoff.errors import ConfigError

MAX_SECRET_BYTES = 4096
"""The most a one-secret file may hold (a notification secret, an S3 secret key)."""

GROUP_OR_OTHERS_READ = stat.S_IRGRP | stat.S_IROTH
GROUP_OR_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


class ExposedSecret(ValueError):
    """A secret file that group or others may read (or change); its message names the file
    and the `chmod` that fixes it."""


def exposure(path: str | os.PathLike[str], mode: int, *, private: bool = True) -> str | None:
    """Why a file of `mode` is no secret of its owner's (None: it is): group or others may
    read it (`private`) or change it.

    >>> exposure("/run/key", 0o100640)
    "/run/key can be read by group (mode 0640), so it is no secret: ... with `chmod 600 /run/key`"
    """
    bits = stat.S_IMODE(mode)
    read, write = bits & GROUP_OR_OTHERS_READ if private else 0, bits & GROUP_OR_OTHERS_WRITE
    if not read and not write:
        return None
    who = " and ".join(name for name, mask in (("group", 0o070), ("others", 0o007)) if (read | write) & mask)
    can = "read and changed" if read and write else ("read" if read else "changed")
    fix = "chmod 600" if private else "chmod go-w"
    kept = "no secret" if read else "not safe from others"
    return (
        f"{os.fspath(path)} can be {can} by {who} (mode {bits:04o}), so it is {kept}: "
        f"make it its owner's alone with `{fix} {os.fspath(path)}`"
    )


def check_private(path: str | os.PathLike[str], *, private: bool = True) -> None:
    """Refuse a file that group or others may change, or (a secret, `private`) read, by its
    mode now: for a reader that knows only once it has read a file whether it is a secret.

    Raises:
        OSError: it cannot be looked at.
        ExposedSecret: they may.
    """
    if (problem := exposure(path, os.stat(path).st_mode, private=private)) is not None:
        raise ExposedSecret(problem)


def read_small_file(path: str | os.PathLike[str], limit: int, *, private: bool | None = True) -> bytes:
    """The bytes of the regular file at `path`, which must hold at most `limit` bytes.

    Args:
        private: it holds a secret, so group and others must not read it either (False: a
            file of public keys or settings, which they must only not change; None: the
            caller checks with `check_private` once it knows which it is).

    Raises:
        OSError: it cannot be opened or read (`FileNotFoundError`, `PermissionError`, ...).
        ExposedSecret: group or others may read (`private`) or change it.
        ValueError: `not a regular file`, or `larger than <limit> bytes`.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode):
            raise ValueError("not a regular file")
        if private is not None and (problem := exposure(path, found.st_mode, private=private)) is not None:
            raise ExposedSecret(problem)
        data = os.read(fd, limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise ValueError(f"larger than {limit} bytes")
    return data


def read_secret_bytes(path: str | os.PathLike[str], setting: str, limit: int = MAX_SECRET_BYTES) -> bytes:
    """A secret file's bytes without surrounding whitespace, the file its owner's alone.

    Raises:
        ConfigError: the file cannot be read, others may read it, it is not a regular file,
            is implausibly large, or is empty (each named by `setting`).
    """
    try:
        data = read_small_file(path, limit).strip()
    except ExposedSecret as exc:
        raise ConfigError(f"{setting}: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{setting}: cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ConfigError(f"{setting}: {path} is {exc}") from None
    if not data:
        raise ConfigError(f"{setting}: {path} is empty")
    return data


def read_secret_line(path: Path, setting: str, limit: int = 1024) -> str:
    """A token or secret file's one line of ASCII, without surrounding whitespace.

    Raises:
        ConfigError: as `read_secret_bytes`, or the file is not ASCII.
    """
    data = read_secret_bytes(path, setting, limit)
    try:
        return data.decode("ascii")
    except UnicodeDecodeError:
        raise ConfigError(f"{setting}: {path} must hold one line of ASCII (a token or a secret)") from None


__all__ = [
    "GROUP_OR_OTHERS_READ",
    "GROUP_OR_OTHERS_WRITE",
    "MAX_SECRET_BYTES",
    "ExposedSecret",
    "check_private",
    "exposure",
    "read_secret_bytes",
    "read_secret_line",
    "read_small_file",
]
