"""What a tool process gets: an allow-listed environment and, optionally, another OS user.

A command run by `run_command` is chosen by a model and approved by a person who reads
one line of shell; it must not inherit the worker's secrets. So its environment is
built from an allow-list (`ALLOWED_ENV`, `LC_*`, plus the names in `SIGNOFF_TOOL_ENV`)
rather than by hiding known secrets, and `SIGNOFF_TOOL_USER` runs it as a user who
cannot read the worker's files or process memory.

Both are read and checked when the tool is built, i.e. when the worker starts: a bad
value stops the worker with a `ConfigError` instead of failing the first command.
"""

from __future__ import annotations

import os
import pwd
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from signoff.config.environment import TOOL_ENV_ENV, TOOL_USER_ENV, Environment
from signoff.errors import ConfigError

ALLOWED_ENV = ("PATH", "HOME", "LANG", "TZ", "TERM", "USER", "SHELL")
"""Variables a tool always gets from the worker's environment (when set)."""
ALLOWED_ENV_PREFIXES = ("LC_",)
"""Prefixes of variables a tool always gets (the locale)."""

_TRIAL_TIMEOUT = 10.0
# Run as the tool user: enter the workspace by its absolute path, as a command would
# to reach it, then wait on stdin so the worker can check it may signal the process.
_TRIAL = 'cd -- "$1" 2>/dev/null || exit 3; { test -r . && test -x .; } || exit 4; read _; exit 0'


def tool_environment(env: Environment | None = None) -> dict[str, str]:
    """The allow-listed part of the environment: `ALLOWED_ENV`, `LC_*` and the names in
    `SIGNOFF_TOOL_ENV`.

    Raises:
        ConfigError: `SIGNOFF_TOOL_ENV` is malformed.
    """
    env = env or Environment()
    wanted = set(ALLOWED_ENV) | set(env.read(TOOL_ENV_ENV))
    return {k: v for k, v in env.values.items() if k in wanted or k.startswith(ALLOWED_ENV_PREFIXES)}


@dataclass(frozen=True)
class ToolUser:
    """An OS user that tool processes run as.

    Attributes:
        name: the login name.
        uid: the user id.
        gid: the user's primary group, the process's only group.
        home: the home directory, the process's `HOME`.
        shell: the login shell, the process's `SHELL`.
    """

    name: str
    uid: int
    gid: int
    home: str
    shell: str

    @classmethod
    def lookup(cls, spec: str | int) -> ToolUser:
        """The user named by `spec`: a login name or a numeric uid.

        Raises:
            ConfigError: no such user on this machine.
        """
        text = str(spec).strip()
        try:
            entry = pwd.getpwuid(int(text)) if text.isdigit() else pwd.getpwnam(text)
        except KeyError:
            what = f"uid {text}" if text.isdigit() else f"name {text!r}"
            raise ConfigError(
                f"{TOOL_USER_ENV}: there is no user with {what} on this machine: "
                "create that user or name an existing one (a login name or a uid)"
            ) from None
        return cls(entry.pw_name, entry.pw_uid, entry.pw_gid, entry.pw_dir, entry.pw_shell)

    @classmethod
    def from_env(cls, env: Environment | None = None) -> ToolUser | None:
        """The user of `SIGNOFF_TOOL_USER`, or None when it is unset or empty."""
        spec = (env or Environment()).read(TOOL_USER_ENV)
        return cls.lookup(spec) if spec else None

    @property
    def is_current(self) -> bool:
        """Whether the worker already runs as this user (nothing to switch)."""
        return self.uid == os.geteuid()

    def identity_env(self) -> dict[str, str]:
        """`HOME`, `USER`, `LOGNAME` and `SHELL` for this user."""
        return {"HOME": self.home, "USER": self.name, "LOGNAME": self.name, "SHELL": self.shell}

    def popen_options(self) -> dict[str, Any]:
        """`subprocess` options that start a process as this user, in its group only."""
        if self.is_current:
            return {}
        return {"user": self.uid, "group": self.gid, "extra_groups": []}

    def check(self, workspace: Path) -> None:
        """Start a trial process as this user in `workspace`; say what is missing.

        Raises:
            ConfigError: the worker cannot start or signal a process as this user, or the
                user cannot enter and read the workspace.
        """
        try:
            proc = subprocess.Popen(
                ["/bin/sh", "-c", _TRIAL, "sh", str(workspace)],
                cwd="/",
                env={"PATH": os.defpath, **self.identity_env()},
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                **self.popen_options(),
            )
        except OSError as exc:
            raise self._cannot_switch(exc.strerror or str(exc)) from None
        can_signal = self.is_current or _may_signal(proc.pid)
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            code = proc.wait(_TRIAL_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise ConfigError(f"{TOOL_USER_ENV}: a trial process as {self.name!r} did not finish") from None
        self._explain(code, workspace)
        if not can_signal:
            raise self._cannot_switch("it could not signal the process (needed to stop a command that times out)")

    def _explain(self, code: int, workspace: Path) -> None:
        who = f"user {self.name!r} (uid {self.uid}, {TOOL_USER_ENV})"
        if code == 3:
            raise ConfigError(
                f"the workspace {str(workspace)!r} is not reachable by {who}: every directory on "
                f"its path must be searchable by that user (e.g. chmod o+x on each parent)"
            )
        if code == 4:
            raise ConfigError(
                f"the workspace {str(workspace)!r} is not readable by {who}: give that user read "
                f"and search access (e.g. chown {self.name} {workspace}), and write access if "
                "commands should create files"
            )
        if code != 0:
            raise ConfigError(f"{TOOL_USER_ENV}: a trial process as {self.name!r} failed with exit code {code}")

    def _cannot_switch(self, why: str) -> ConfigError:
        return ConfigError(
            f"{TOOL_USER_ENV}={self.name}: this worker (uid {os.geteuid()}) cannot run tools as "
            f"{self.name!r} (uid {self.uid}): {why}. Run the worker as root, or give it the "
            f"capabilities CAP_SETUID, CAP_SETGID and CAP_KILL, or unset {TOOL_USER_ENV}"
        )


def _may_signal(pid: int) -> bool:
    # Signal 0 checks permission without sending anything.
    try:
        os.kill(pid, 0)
    except PermissionError:
        return False
    except ProcessLookupError:
        pass
    return True


def tool_owner(env: Environment | None = None) -> tuple[int, int] | None:
    """Who should own what the file tools create: `SIGNOFF_TOOL_USER`, when the worker runs
    as root (so it can give files away); else None (files are the worker's own).

    Without it, a root worker's file tools would leave files the tool user's commands
    cannot change."""
    user = ToolUser.from_env(env)
    if user is None or os.geteuid() != 0 or user.uid == 0:
        return None
    return user.uid, user.gid
