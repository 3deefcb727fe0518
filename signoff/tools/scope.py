"""`WorkspaceScope`: where file tools may go, and what happens outside.

A path is judged by its *real* location, after `..` and symlinks, so neither
`../../etc/passwd` nor a symlink in the workspace pointing at `/etc` is inside.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from enum import Enum
from pathlib import Path

from signoff.errors import ConfigError

WORKSPACE_ENV = "SIGNOFF_WORKSPACE"
POLICY_ENV = "SIGNOFF_SCOPE_POLICY"


class ScopePolicy(str, Enum):
    """What a file-tool call on a path outside the workspace does."""

    DENY = "deny"
    """Refused: the model gets a tool error; no human is asked."""
    APPROVE_OUTSIDE = "approve_outside"
    """Waits for a human's approval; calls inside the workspace run at once."""
    ALLOW = "allow"
    """Runs."""

    @classmethod
    def parse(cls, value: ScopePolicy | str) -> ScopePolicy:
        """The policy named `value` (case and surrounding spaces ignored).

        Raises:
            ConfigError: `value` names no policy.
        """
        try:
            return cls(value.strip().lower() if isinstance(value, str) else value)
        except ValueError:
            allowed = ", ".join(p.value for p in cls)
            raise ConfigError(
                f"scope policy {value!r} is not valid; use one of: {allowed}"
            ) from None


DEFAULT_POLICY = ScopePolicy.APPROVE_OUTSIDE


class ScopeDecision(str, Enum):
    """What the scope says about one path."""

    RUN = "run"
    ASK = "ask"
    REFUSE = "refuse"


class WorkspaceScope:
    """A workspace root and the policy for file-tool paths outside it.

    Attributes:
        root: the workspace directory, absolute, as configured.
        real_root: `root` with symlinks resolved: what paths are compared with.
        policy: what a path outside does.
    """

    def __init__(
        self, root: str | os.PathLike[str], policy: ScopePolicy | str = DEFAULT_POLICY
    ) -> None:
        """Check the root and the policy now, so a bad config fails at startup.

        Raises:
            ConfigError: `root` is not an existing directory, or `policy` is unknown.
        """
        self.root = Path(os.path.abspath(root))
        if not self.root.is_dir():
            raise ConfigError(f"workspace {str(self.root)!r} is not an existing directory")
        self.real_root = Path(os.path.realpath(self.root))
        self.policy = ScopePolicy.parse(policy)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> WorkspaceScope:
        """The scope configured by `SIGNOFF_WORKSPACE` and `SIGNOFF_SCOPE_POLICY`.

        Args:
            env: the environment to read; `os.environ` when None.

        Raises:
            ConfigError: the workspace is not a directory or the policy is unknown.
        """
        env = os.environ if env is None else env
        root = env.get(WORKSPACE_ENV) or os.getcwd()
        raw_policy = env.get(POLICY_ENV) or DEFAULT_POLICY.value
        try:
            policy = ScopePolicy.parse(raw_policy)
        except ConfigError:
            allowed = ", ".join(p.value for p in ScopePolicy)
            raise ConfigError(
                f"{POLICY_ENV}={raw_policy!r} is not valid; use one of: {allowed}"
            ) from None
        return cls(root, policy)

    def resolve(self, path: str | os.PathLike[str]) -> Path:
        """The real absolute location of `path`, which need not exist yet.

        Relative paths are relative to the root. `..` and symlinks are resolved the
        way the OS would when the file is opened or created: the existing part of the
        path through its symlinks, the not-yet-existing rest appended and normalised.
        (`os.path.realpath` in its default, non-strict mode does exactly this.)

        Raises:
            ValueError: the path cannot name a file (e.g. it contains a NUL byte).
        """
        return Path(os.path.realpath(self.root / path))

    def is_inside(self, path: str | os.PathLike[str]) -> bool:
        """Whether `path` really is the root or lies under it.

        Compared component by component, so `/ws-other` is not inside `/ws`. A path
        that cannot be resolved is not inside.
        """
        try:
            real = self.resolve(path)
        except (ValueError, OSError):
            return False
        return real == self.real_root or real.is_relative_to(self.real_root)

    def check(self, path: str | os.PathLike[str]) -> ScopeDecision:
        """What to do with a file-tool call on `path` under this policy.

        Inside the workspace always RUN; outside it, the policy decides: DENY →
        REFUSE (a tool error), APPROVE_OUTSIDE → ASK (a human), ALLOW → RUN.
        """
        if self.policy is ScopePolicy.ALLOW or self.is_inside(path):
            return ScopeDecision.RUN
        if self.policy is ScopePolicy.DENY:
            return ScopeDecision.REFUSE
        return ScopeDecision.ASK

    def refusal(self, path: str | os.PathLike[str]) -> str:
        """The tool error the model reads when the deny policy refuses `path`."""
        try:
            real = str(self.resolve(path))
        except (ValueError, OSError):
            real = str(path)
        where = "" if real == str(path) else f" (really {real})"
        return (
            f"path {str(path)!r}{where} is outside the workspace {self.root}; "
            f"the scope policy '{self.policy.value}' refuses it, so use a path inside the workspace"
        )

    def __repr__(self) -> str:
        return f"WorkspaceScope({str(self.root)!r}, policy={self.policy.value!r})"
