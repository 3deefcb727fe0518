"""`RunCommand`: a shell command in the workspace, with a timeout and an output cap."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping
from typing import Any

from pydantic import Field

from signoff.errors import ConfigError
from signoff.tools._arguments import Arguments, json_schema, validate_arguments
from signoff.tools.base import ToolResult
from signoff.tools.files.scope import WorkspaceScope
from signoff.tools.process import ToolUser, tool_environment

DEFAULT_TIMEOUT_SECS = 60
MAX_TIMEOUT_SECS = 3600
DEFAULT_MAX_OUTPUT_BYTES = 64 * 1024


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
    and its end (where errors usually are) with a note of what was cut. On timeout or
    cancellation the command's whole process group is killed, so its children die too
    (all but those that start a session of their own).

    The command counts as finished when its output closes: a background job that
    keeps stdout open runs into the timeout unless its output is redirected.

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
        try:
            proc = await asyncio.create_subprocess_exec(
                "/bin/sh",
                "-c",
                args.command,
                cwd=self.scope.root,
                env=self.env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,  # its own process group: one signal reaches all
                **(self.user.popen_options() if self.user else {}),
            )
        except OSError as exc:
            return ToolResult.error(f"could not start the command: {exc}")
        output = CappedOutput(self.max_output_bytes)
        try:
            await asyncio.wait_for(_collect(proc, output), args.timeout_secs)
        except TimeoutError:
            _kill_group(proc)
            await proc.wait()
            return ToolResult.error(
                f"command timed out after {args.timeout_secs}s and was killed "
                f"with its child processes; output so far:\n{output.text()}"
            )
        except BaseException:
            # Cancelled (e.g. the activity was): leave nothing running behind us.
            _kill_group(proc)
            raise
        return ToolResult(content=f"exit code: {proc.returncode}\n{output.text()}")


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
    await proc.wait()


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    # ProcessLookupError: the whole group has already exited.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
