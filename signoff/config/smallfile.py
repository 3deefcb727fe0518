"""Reading the small files a worker keeps to itself (keys, secrets) without being stalled.

Each secret file a setting names (`signoff.config.secrets` lists them) is read here: opened
non-blocking, so a FIFO planted at the path cannot hang the worker, and read only if it is a
regular file no larger than its reader expects. Callers word the errors for their setting.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from signoff.errors import ConfigError

MAX_SECRET_BYTES = 4096
"""The most a one-secret file may hold (a notification secret, an S3 secret key)."""


def read_small_file(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of the regular file at `path`, which must hold at most `limit` bytes.

    Raises:
        OSError: it cannot be opened or read (`FileNotFoundError`, `PermissionError`, ...).
        ValueError: `not a regular file`, or `larger than <limit> bytes`.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("not a regular file")
        data = os.read(fd, limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise ValueError(f"larger than {limit} bytes")
    return data


def read_secret_line(path: Path, setting: str, limit: int = 1024) -> str:
    """A token or secret file's one line of ASCII, without surrounding whitespace.

    Raises:
        ConfigError: the file cannot be read, is empty, is implausibly large, or is not ASCII
            (each named by `setting`).
    """
    try:
        data = read_small_file(path, limit).strip()
    except OSError as exc:
        raise ConfigError(f"{setting}: cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ConfigError(f"{setting}: {path} is {exc}") from None
    if not data:
        raise ConfigError(f"{setting}: {path} is empty")
    try:
        return data.decode("ascii")
    except UnicodeDecodeError:
        raise ConfigError(f"{setting}: {path} must hold one line of ASCII (a token or a secret)") from None


__all__ = ["MAX_SECRET_BYTES", "read_secret_line", "read_small_file"]
