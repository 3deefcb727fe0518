"""Process hardening for the worker: other processes of its user cannot read its memory.

The worker holds secrets: the provider key (in its environment or read from a file),
Temporal credentials. Linux lets any process of the same user read another's
`/proc/<pid>/environ` and `/proc/<pid>/mem` and attach a debugger to it, so a tool
running as the worker's user could read them all. A *non-dumpable* process is exempt:
only a process with `CAP_SYS_PTRACE` (in practice root) may still do so, which is why
`SIGNOFF_TOOL_USER` exists. Non-dumpable also means no core dump with secrets in it.

The flag is reset when a process runs a new program (`execve`), so the tools the
worker starts are ordinary processes again; only the worker itself is protected.
"""

from __future__ import annotations

import ctypes
import os
import sys

# From <linux/prctl.h>.
PR_GET_DUMPABLE = 3
PR_SET_DUMPABLE = 4


def harden_process() -> bool:
    """Make this process non-dumpable (Linux); elsewhere do nothing.

    Returns:
        True when the flag was set, False on a platform without it.

    Raises:
        OSError: the kernel refused (never expected: a process may always lower it).
            Raised rather than ignored, so a worker never runs believing it is protected.
    """
    if not sys.platform.startswith("linux"):
        return False
    if _prctl(PR_SET_DUMPABLE, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"prctl(PR_SET_DUMPABLE, 0) failed: {os.strerror(error)}")
    return True


def is_dumpable() -> bool | None:
    """Whether this process is dumpable now; None where the platform cannot say."""
    if not sys.platform.startswith("linux"):
        return None
    return _prctl(PR_GET_DUMPABLE, 0) == 1


def _prctl(option: int, value: int) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    prctl = libc.prctl
    prctl.restype = ctypes.c_int
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    return int(prctl(option, value, 0, 0, 0))
