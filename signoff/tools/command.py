"""`RunCommand`: a shell command in the workspace, with a timeout and an output cap."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field

from signoff.errors import ConfigError
from signoff.tools._arguments import Arguments, json_schema, validate_arguments
from signoff.tools.base import ToolResult
from signoff.tools.files.scope import WorkspaceScope
from signoff.tools.process import ToolUser, tool_environment
from signoff.tools.supervise import encode_options

DEFAULT_TIMEOUT_SECS = 60
MAX_TIMEOUT_SECS = 3600
DEFAULT_MAX_OUTPUT_BYTES = 64 * 1024
END_GRACE_SECS = 15.0
"""How long the supervisor has to end a command that is asked to end (its sweep takes at most 10 s)."""
DRAIN_SECS = 2.0
"""How long the output is read once the command has ended."""
SUPERVISOR = str(Path(__file__).with_name("supervise.py"))
SUPERVISOR_ENV = {"PATH": os.defpath}
"""The supervisor's own environment; the command's comes with its options."""


class RunCommandArguments(Arguments):
    command: str = Field(description="The command line, run by /bin/sh -c in the workspace.")
    timeout_secs: int = Field(
        DEFAULT_TIMEOUT_SECS,
        ge=1,
        le=MAX_TIMEOUT_SECS,
        description="Seconds before the command and every process it started are killed.",
    )


class RunCommand:
    """Runs `/bin/sh -c <command>` with the workspace root as its working directory.

    The result is `exit code: N` and the combined stdout and stderr; a non-zero exit
    is a normal result, for the model to read. Output beyond the cap keeps its start
    and its end (where errors usually are) with a note of what was cut.

    Nothing the command starts outlives it. The shell runs under a supervisor of its own
    (`signoff.tools.supervise`, in a session of its own) that is the subreaper of every
    process the command starts: a background job, a double fork, a `setsid` daemon. When
    the shell exits, or on timeout or cancellation, the supervisor kills all of them; the
    call then returns, with the output they wrote until then. Should the supervisor itself
    be killed first (only the command's own user can), the worker kills what is left of its
    session. A command that asks another service to run something (`at`, `systemd-run`, a
    container engine, ssh) is beyond any of this.

    The command sees only an allow-listed environment (`signoff.tools.process`): no
    Temporal settings, provider key or other secret of the worker's unless an operator
    lists its name in `SIGNOFF_TOOL_ENV`. With `SIGNOFF_TOOL_USER` (or `user=`) it runs
    as that OS user, in that user's primary group only, so it cannot read the worker's
    files or process memory either.

    This tool never asks for approval itself; `default_tools` wraps it in
    `ApprovalRequiredTool`.
    """

    name = "run_command"
    description = "Run a shell command"
    kind = "command"
    idempotent = False

    def __init__(
        self,
        scope: WorkspaceScope,
        *,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
        env: Mapping[str, str] | None = None,
        user: str | int | None = None,
    ) -> None:
        """Configure the tool and check its configuration now; nothing runs until `execute`.

        Args:
            scope: the workspace; its root is the command's working directory.
            max_output_bytes: how much output to keep.
            env: the command's whole environment; None takes the allow-listed part of
                the worker's (`PATH`, `HOME`, `LANG`, `LC_*`, `TZ`, `TERM`, `USER`,
                `SHELL` and the names in `SIGNOFF_TOOL_ENV`).
            user: the OS user (login name or uid) to run commands as; None takes
                `SIGNOFF_TOOL_USER`, and runs as the worker's own user when that is unset.
                `HOME`, `USER`, `LOGNAME` and `SHELL` are then that user's, even in `env`.

        Raises:
            ConfigError: `max_output_bytes` is not positive, `SIGNOFF_TOOL_ENV` is
                malformed, or the user does not exist, cannot be switched to, or cannot
                reach the workspace.
        """
        if max_output_bytes < 1:
            raise ConfigError(f"max_output_bytes must be positive, not {max_output_bytes}")
        self.scope = scope
        self.max_output_bytes = max_output_bytes
        self.user = ToolUser.lookup(user) if user is not None else ToolUser.from_env()
        self.env = dict(env) if env is not None else tool_environment()
        if self.user is not None:
            self.user.check(scope.root)
            self.env.update(self.user.identity_env())
        self.parameters: dict[str, Any] = json_schema(RunCommandArguments)

    def requires_approval(self, arguments: dict[str, Any]) -> bool:
        return False

    async def execute(self, arguments: dict[str, Any]) -> ToolResult:
        args = validate_arguments(RunCommandArguments, self.name, arguments)
        if isinstance(args, ToolResult):
            return args
        status_read, status_write = os.pipe()
        try:
            proc = await self._start(args.command, status_write)
        except OSError as exc:
            os.close(status_read)
            return ToolResult.error(f"could not start the command: {exc}")
        finally:
            os.close(status_write)
        output = CappedOutput(self.max_output_bytes)
        reader = asyncio.ensure_future(_collect(proc, output))
        try:
            await asyncio.wait_for(asyncio.shield(proc.wait()), args.timeout_secs)
            timed_out = False
        except TimeoutError:
            timed_out = True
            await _end(proc)
        except BaseException:  # cancelled (e.g. the activity was): leave nothing running behind us
            await asyncio.shield(_ended(proc, status_read, reader))
            raise
        await _ended(proc, status_read, reader)
        if timed_out:
            return ToolResult.error(
                f"command timed out after {args.timeout_secs}s and was killed "
                f"with its child processes; output so far:\n{output.text()}"
            )
        return ToolResult(content=f"exit code: {proc.returncode}\n{output.text()}")

    async def _start(self, command: str, status_fd: int) -> asyncio.subprocess.Process:
        """The command's supervisor (`signoff.tools.supervise`), in a session of its own, running
        `/bin/sh -c command` with the tool's environment, as the tool user if one is set."""
        switch = self.user.popen_options() if self.user else {}
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-I",
            "-S",
            SUPERVISOR,
            cwd=self.scope.root,
            env=SUPERVISOR_ENV,
            stdin=asyncio.subprocess.PIPE,  # the options, then its lifeline: closed, the command ends
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
            pass_fds=(status_fd,),
        )
        assert proc.stdin is not None
        proc.stdin.write(encode_options(command, self.env, switch.get("user"), switch.get("group"), status_fd))
        await proc.stdin.drain()
        return proc


class CappedOutput:
    """Keeps the first and last bytes of a stream, up to `limit` in all."""

    def __init__(self, limit: int) -> None:
        self._head_limit = limit // 2
        self._tail_limit = limit - self._head_limit
        self._head = bytearray()
        self._tail = bytearray()
        self.omitted = 0

    def feed(self, chunk: bytes) -> None:
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        self._tail += chunk
        excess = len(self._tail) - self._tail_limit
        if excess > 0:
            del self._tail[:excess]
            self.omitted += excess

    def text(self) -> str:
        if not self.omitted:
            return (self._head + self._tail).decode(errors="replace")
        return (
            self._head.decode(errors="replace")
            + f"\n[output truncated: {self.omitted} bytes omitted]\n"
            + self._tail.decode(errors="replace")
        )


async def _collect(proc: asyncio.subprocess.Process, output: CappedOutput) -> None:
    assert proc.stdout is not None
    while chunk := await proc.stdout.read(64 * 1024):
        output.feed(chunk)


async def _end(proc: asyncio.subprocess.Process) -> None:
    """Ask the supervisor to end the command (close its lifeline); kill its group if it does not."""
    if proc.stdin is not None:
        proc.stdin.close()
    try:
        await asyncio.wait_for(asyncio.shield(proc.wait()), END_GRACE_SECS)
    except TimeoutError:
        _kill_group(proc.pid)
        await proc.wait()


async def _ended(proc: asyncio.subprocess.Process, status_fd: int, reader: asyncio.Future[None]) -> None:
    """Once the supervisor has exited: make sure nothing of the command is left, and read the
    rest of its output (every writer of which is gone then)."""
    if proc.returncode is None:
        await _end(proc)
    try:
        swept = os.read(status_fd, 64) == b"swept\n"
    finally:
        os.close(status_fd)
    if not swept:  # the supervisor was killed before it swept: end what is left of its session
        await asyncio.to_thread(_end_session, proc.pid)
    try:
        await asyncio.wait_for(reader, DRAIN_SECS)
    except TimeoutError:
        pass  # something outside the tree holds the output open: the result is what came


def _kill_group(pgid: int) -> None:
    # ProcessLookupError: the whole group has already exited.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def _end_session(session: int) -> None:
    """Kill every process of `session` (the supervisor's), by its group and then one by one."""
    _kill_group(session)
    for _ in range(10):
        found = [pid for pid, sid in _sessions() if sid == session]
        if not found:
            return
        for pid in found:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _sessions() -> list[tuple[int, int]]:
    """(pid, session id) of every live process (zombies left out), from /proc."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != b"Z":
            found.append((int(name), int(fields[3])))
    return found
