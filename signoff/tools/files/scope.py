"""`WorkspaceScope`: where file tools may go, and what happens outside.

A path is inside when resolving it beneath the root never leaves the root
(`signoff.tools.files.fs`): neither `../../etc/passwd` nor a symlink in the workspace
pointing at `/etc` is inside, and an absolute symlink counts as leaving, as
`openat2(RESOLVE_BENEATH)` has it. File tools resolve paths the same way when
they run, so what was judged inside cannot be swapped for something outside.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path

from signoff.config.environment import DEFAULT_SCOPE_POLICY, SCOPE_POLICY_ENV, WORKSPACE_ENV, Environment
from signoff.errors import ConfigError
from signoff.tools.files.fs import Probe, probe_beneath, split_path


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
            raise ConfigError(f"scope policy {value!r} is not valid; use one of: {allowed}") from None


DEFAULT_SCOPE = ScopePolicy(DEFAULT_SCOPE_POLICY)


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

    def __init__(self, root: str | os.PathLike[str], policy: ScopePolicy | str = DEFAULT_SCOPE) -> None:
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
    def from_env(cls, env: Environment | None = None) -> WorkspaceScope:
        """The scope configured by `SIGNOFF_WORKSPACE` and `SIGNOFF_SCOPE_POLICY`.

        Args:
            env: the environment to read; the process's when None.

        Raises:
            ConfigError: the workspace is not a directory or the policy is unknown.
        """
        env = env or Environment()
        raw_policy = env.read(SCOPE_POLICY_ENV)
        try:
            policy = ScopePolicy.parse(raw_policy)
        except ConfigError:
            allowed = ", ".join(p.value for p in ScopePolicy)
            raise ConfigError(f"{SCOPE_POLICY_ENV}={raw_policy!r} is not valid; use one of: {allowed}") from None
        return cls(env.read(WORKSPACE_ENV) or os.getcwd(), policy)

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

    def relative(self, path: str | os.PathLike[str]) -> str | None:
        """`path` relative to the root, or None for an absolute path that is not under it.

        An absolute path counts as under the root when it starts with the root as
        configured or with its real path (compared component by component); what follows
        is resolved beneath the root like any relative path.
        """
        text = os.fspath(path)
        if not text.startswith("/"):
            return text
        parts = split_path(text)
        for base in (self.root, self.real_root):
            prefix = split_path(str(base))
            if parts[: len(prefix)] == prefix:
                return "/".join(parts[len(prefix) :]) or "."
        return None

    def absolute(self, path: str | os.PathLike[str]) -> str:
        """`path` joined to the root (an absolute path as it is), not resolved."""
        return os.path.join(self.root, os.fspath(path))

    @contextmanager
    def opened_root(self) -> Iterator[int]:
        """An `O_PATH` descriptor of the root, closed on exit.

        Raises:
            OSError: the root is gone or no longer a directory.
        """
        fd = os.open(self.root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            yield fd
        finally:
            os.close(fd)

    def probe(self, path: str | os.PathLike[str]) -> Probe:
        """Whether `path` leaves the root, and what it names now; changes nothing.

        Raises:
            ValueError: the path cannot name a file (e.g. it contains a NUL byte).
            OSError: the root itself cannot be opened.
        """
        relative = self.relative(path)
        if relative is None:
            return Probe(leaves=True)
        with self.opened_root() as root_fd:
            return probe_beneath(root_fd, relative)

    def is_inside(self, path: str | os.PathLike[str]) -> bool:
        """Whether `path` really is the root or lies under it.

        Resolved beneath the root (see `signoff.tools.files.fs`), so `/ws-other` is not inside
        `/ws`, and neither is a symlink leading out. A path that cannot be resolved is not
        inside.
        """
        try:
            return not self.probe(path).leaves
        except (ValueError, OSError):
            return False

    def confines(self, approved: bool) -> bool:
        """Whether a call must stay beneath the root when it runs.

        Only `allow`, or an approved call under `approve_outside`, may go outside; under
        `deny` not even an approval (e.g. of an `ApprovalRequiredTool`) widens the scope.
        """
        if self.policy is ScopePolicy.ALLOW:
            return False
        return not (approved and self.policy is ScopePolicy.APPROVE_OUTSIDE)

    def check(self, path: str | os.PathLike[str]) -> ScopeDecision:
        """What this policy says of `path` by its location alone.

        Inside the workspace always RUN; outside it, the policy decides: DENY →
        REFUSE (a tool error), APPROVE_OUTSIDE → ASK (a human), ALLOW → RUN. The file
        tools' own gate (`FileTool.requires_approval`) adds what location cannot say:
        a read or write through a hard link counts as outside, `remove_path` judges the entry's
        directory (a link is removed, not followed).
        """
        if self.policy is ScopePolicy.ALLOW or self.is_inside(path):
            return ScopeDecision.RUN
        if self.policy is ScopePolicy.DENY:
            return ScopeDecision.REFUSE
        return ScopeDecision.ASK

    def refusal(self, path: str | os.PathLike[str], why: str | None = None) -> str:
        """The tool error the model reads when the deny policy refuses `path`."""
        return (
            f"{self._outside(path, why)}; the scope policy '{self.policy.value}' refuses it, "
            "so use a path inside the workspace"
        )

    def unapproved_refusal(self, path: str | os.PathLike[str], why: str | None = None) -> str:
        """The tool error for a call that runs unapproved but now leads outside the root.

        Under `approve_outside` that happens when the path was inside when the call was
        judged and something changed before it ran (e.g. a directory became a symlink);
        under `deny` it is `refusal`.
        """
        if self.policy is not ScopePolicy.APPROVE_OUTSIDE:
            return self.refusal(path, why)
        return (
            f"{self._outside(path, why)}, and this call was not approved; under the scope "
            f"policy '{self.policy.value}' a path outside needs a person's approval, so "
            "nothing was done: call the tool again to ask for it"
        )

    def _outside(self, path: str | os.PathLike[str], why: str | None) -> str:
        try:
            real = str(self.resolve(path))
        except (ValueError, OSError):
            real = str(path)
        where = "" if real == str(path) else f" (really {real})"
        because = f" ({why})" if why else ""
        return f"path {str(path)!r}{where} is outside the workspace {self.root}{because}"

    def __repr__(self) -> str:
        return f"WorkspaceScope({str(self.root)!r}, policy={self.policy.value!r})"
