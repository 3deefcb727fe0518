"""The supervisor of one `run_command` call: every process the command starts ends with it.

`RunCommand` starts this file as a script, `python -I -S supervise.py` (a few standard
modules only, so the start is quick), in a session of its own, and writes the command, its
environment and user to its standard input (`encode_options`: there, not in its arguments,
which every user can read in /proc). It runs `/bin/sh -c command` with that environment as
its child (as that user, when one is set), and

- makes itself a *child subreaper* (`PR_SET_CHILD_SUBREAPER`): a process of the command's that
  loses its parent (a background job, a double fork, a `setsid` daemon, one in another session
  or process group) becomes the supervisor's child instead of init's, so nothing the command
  starts leaves the supervisor's tree of processes;
- when the shell exits, or its standard input closes (the worker's timeout or cancellation, or
  the worker's own end), kills every process left in that tree, until none is left, reaps
  them, writes `swept` to the status descriptor, and exits as the shell did (its exit code,
  or killed by the same signal).

The supervisor runs as the worker's user; the shell as `SIGNOFF_TOOL_USER` when set, which
then cannot signal the supervisor.
"""

from __future__ import annotations

import ctypes
import os
import select
import sys
import time

# The supervisor starts for every command, so it imports what it needs and no more: not
# typing, and `signal`'s C core (`signal` itself imports enum, a third of the start).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from typing import Any
else:
    import _signal as signal

PR_SET_CHILD_SUBREAPER = 36
SWEEP_SECONDS = 10.0
"""How long the sweep keeps killing; a process stuck in the kernel may outlast it."""


def encode_options(command: str, env: dict[str, str], user: int | None, group: int | None, status_fd: int) -> bytes:
    """What `RunCommand` writes to the supervisor's standard input: a length line, then the
    fields separated by NUL (which no argument or variable can hold): the status descriptor,
    the user and group (empty: none), the command, and each `NAME=value` of its environment."""
    fields = [str(status_fd), "" if user is None else str(user), "" if group is None else str(group), command]
    payload = "\0".join(fields + [f"{name}={value}" for name, value in env.items()]).encode()
    return f"{len(payload)}\n".encode() + payload


def read_options() -> dict[str, Any]:
    """The options at the start of standard input (the rest of it is the lifeline)."""
    data = b""
    while b"\n" not in data or len(data) < data.index(b"\n") + 1 + int(data[: data.index(b"\n")]):
        chunk = os.read(0, 1 << 16)
        if not chunk:
            sys.exit("signoff: the command's supervisor was given no command")
        data += chunk
    fields = data[data.index(b"\n") + 1 :].decode().split("\0")
    status_fd, user, group, command = fields[:4]
    return {
        "status_fd": int(status_fd),
        "user": int(user) if user else None,
        "group": int(group) if group else None,
        "command": command,
        "env": dict(entry.split("=", 1) for entry in fields[4:]),
    }


def become_subreaper() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        errno = ctypes.get_errno()
        print(f"signoff: cannot make the command's supervisor a subreaper: {os.strerror(errno)}", file=sys.stderr)


def spawn(options: dict[str, Any]) -> int:
    """Start `/bin/sh -c command` (stdin /dev/null, our stdout and stderr), as its user if set."""
    pid = os.fork()
    if pid:
        return pid
    try:  # the child: what subprocess would do, and nothing that could fail half-way silently
        for restored in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGCHLD, signal.SIGTERM):
            signal.signal(restored, signal.SIG_DFL)  # Python ignores SIGPIPE; the shell must not
        os.close(options["status_fd"])  # the command never says it was swept
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        if options["user"] is not None:
            os.setgroups([])
            os.setgid(options["group"])
            os.setuid(options["user"])
        os.execve("/bin/sh", ["/bin/sh", "-c", options["command"]], options["env"])
    except BaseException as exc:
        os.write(2, f"signoff: could not start /bin/sh: {exc}\n".encode())
    os._exit(127)


def reap(shell: int, status: int | None) -> tuple[bool, int | None]:
    """Reap every child that has exited; (whether any child is left, the shell's status)."""
    while True:
        try:
            pid, code = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False, status
        if pid == 0:
            return True, status
        if pid == shell:
            status = code


def watch(shell: int, wakeup: int) -> int | None:
    """Wait for the shell to exit (its wait status), reaping orphans that exit meanwhile; None
    when the worker asks for the end first (standard input closed, or SIGTERM)."""
    poller = select.poll()
    poller.register(0, select.POLLIN)
    poller.register(wakeup, select.POLLIN)
    status: int | None = None
    while True:
        for fd, _ in poller.poll():
            if fd == 0 and not os.read(0, 4096):
                return None
            if fd == wakeup and signal.SIGTERM in _signals(wakeup):
                return None
        _, status = reap(shell, status)
        if status is not None:
            return status


def _signals(wakeup: int) -> set[int]:
    """The signals written to the wakeup descriptor since it was last read."""
    found = b""
    try:
        while chunk := os.read(wakeup, 512):
            found += chunk
    except BlockingIOError:
        pass
    return set(found)


def children() -> list[int]:
    """The processes whose parent is this one (from /proc)."""
    me, found = os.getpid(), []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        if int(fields[1]) == me:
            found.append(int(name))
    return found


def sweep(shell: int, status: int | None) -> int | None:
    """Kill every process left in this tree until none is; the shell's status, if it had one."""
    deadline = time.monotonic() + SWEEP_SECONDS
    left, status = reap(shell, status)
    while left and time.monotonic() < deadline:
        for pid in children():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.005)  # a killed process is reaped once it is a zombie; its orphans are ours then
        left, status = reap(shell, status)
    return status


def exit_as(status: int | None) -> None:
    if status is None or os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status) if status is not None else signal.SIGKILL
        if sig != signal.SIGKILL:
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)  # a signal that does not end a process
    os._exit(os.waitstatus_to_exitcode(status))


def main() -> None:
    options = read_options()
    become_subreaper()
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)  # handled, so the wakeup descriptor hears of it
    signal.signal(signal.SIGTERM, lambda signum, frame: None)
    shell = spawn(options)
    status = watch(shell, wake_read)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    status = sweep(shell, status)
    try:
        os.write(options["status_fd"], b"swept\n")
    except OSError:
        pass
    exit_as(status)


if __name__ == "__main__":
    main()
