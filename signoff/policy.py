"""Who may decide a tool's calls, how many must agree, and what happens when nobody does.

An `ApprovalPolicy` is declared with a tool (`ApprovalRequiredTool(t, policy=...)`,
`@tool(approval=...)`) or in a policy file for configured agents (`SIGNOFF_POLICY_FILE`,
TOML or JSON keyed by tool name, `*` for every other tool). It is snapshotted with the
run and shown in each pending request, so what governs a paused call never changes
under it. The rules that apply a policy to a decision live in `signoff.authority`.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from signoff.digest import canonical_json, sha256_hex
from signoff.errors import ConfigError

POLICY_FILE_ENV = "SIGNOFF_POLICY_FILE"
DEFAULT_KEY = "*"
GROUP_PREFIX = "group:"
MAX_NAME_CHARS = 256
"""The longest approver, requester or token subject (CONTRACT: `approver` ≤ 256)."""


class OnTimeout(str, Enum):
    """What an undecided call becomes when its deadline passes."""

    DENY = "deny"
    APPROVE = "approve"
    FAIL_RUN = "fail_run"


class ApprovalPolicy(BaseModel):
    """The rules for deciding one tool's calls (CONTRACT v2 "Approval policy").

    Attributes:
        approvers: subjects or `group:<name>` allowed to decide; empty means anyone.
        quorum: distinct approvals needed; one denial by an allowed approver denies.
        separate_requester: the run's `requested_by` may not decide its own calls.
        verified: decisions must carry a valid token (a verified approver).
        timeout_seconds: how long a call may wait; None uses the run's
            `approval_timeout_seconds` (and its outcome, deny).
        on_timeout: the outcome when `timeout_seconds` passes without a decision.
        remind_after_seconds: when to remind the approvers, counted from the request.
        escalate_after_seconds: when `escalate_to` become allowed approvers too.
        escalate_to: subjects or groups added at escalation.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    approvers: tuple[str, ...] = ()
    quorum: int = Field(1, ge=1, le=100)
    separate_requester: bool = False
    verified: bool = False
    timeout_seconds: float | None = Field(None, gt=0)
    on_timeout: OnTimeout = OnTimeout.DENY
    remind_after_seconds: tuple[float, ...] = ()
    escalate_after_seconds: float | None = Field(None, gt=0)
    escalate_to: tuple[str, ...] = ()

    @field_validator("approvers", "escalate_to")
    @classmethod
    def _names(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        for name in names:
            if not name.strip() or len(name) > MAX_NAME_CHARS:
                raise ValueError(f"approver {name!r} must be a non-empty name of at most {MAX_NAME_CHARS} characters")
        return names

    @field_validator("remind_after_seconds")
    @classmethod
    def _reminders(cls, delays: tuple[float, ...]) -> tuple[float, ...]:
        if any(d <= 0 for d in delays) or len(delays) > 20:
            raise ValueError("reminders are at most 20 positive delays in seconds")
        return tuple(sorted(delays))

    def digest(self) -> str:
        """SHA-256 of the policy's canonical JSON: audit records name the policy they obeyed."""
        return sha256_hex(canonical_json(self.model_dump(mode="json")))

    @property
    def timeout_outcome(self) -> OnTimeout:
        """What a deadline does: `on_timeout` when this policy sets it, else deny (the run's
        `approval_timeout_seconds`)."""
        return self.on_timeout if self.timeout_seconds else OnTimeout.DENY

    @property
    def is_default(self) -> bool:
        return self == ApprovalPolicy()


DEFAULT_POLICY = ApprovalPolicy()


class PolicyBook(BaseModel):
    """Policies by tool name, `*` for the rest: what a policy file holds."""

    model_config = ConfigDict(frozen=True)

    policies: dict[str, ApprovalPolicy] = Field(default_factory=dict)

    def for_tool(self, name: str, declared: ApprovalPolicy | None = None) -> ApprovalPolicy:
        """The file's policy for `name`, else the tool's own, else the file's `*`, else anyone."""
        if name in self.policies:
            return self.policies[name]
        if declared is not None:
            return declared
        return self.policies.get(DEFAULT_KEY, DEFAULT_POLICY)

    def merged_over(self, base: PolicyBook) -> PolicyBook:
        """This book's entries over `base`'s (the worker's file over an agent's own)."""
        return PolicyBook(policies={**base.policies, **self.policies})

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> PolicyBook:
        """Read a TOML or JSON policy file (by its extension; TOML if unsure).

        Raises:
            ConfigError: the file cannot be read or a policy is invalid (named).
        """
        file = Path(path)
        try:
            text = file.read_text()
        except OSError as exc:
            raise ConfigError(f"{POLICY_FILE_ENV}: cannot read {file}: {exc.strerror or exc}") from None
        try:
            raw: Any = json.loads(text) if file.suffix == ".json" else tomllib.loads(text)
        except (ValueError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"{POLICY_FILE_ENV}: {file} is not valid {file.suffix or 'TOML'}: {exc}") from None
        return cls.parse(raw, str(file))

    @classmethod
    def parse(cls, raw: Any, source: str = "policy file") -> PolicyBook:
        if not isinstance(raw, Mapping):
            raise ConfigError(f"{source}: expected a table of tool names, got {type(raw).__name__}")
        policies = {}
        for name, value in raw.items():
            try:
                policies[str(name)] = ApprovalPolicy.model_validate(value)
            except ValidationError as exc:
                problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or name}: {e['msg']}" for e in exc.errors())
                raise ConfigError(f"{source}: policy for {name!r}: {problems}") from None
        return cls(policies=policies)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> PolicyBook:
        """The book of `SIGNOFF_POLICY_FILE`, or an empty one."""
        path = (os.environ if env is None else env).get(POLICY_FILE_ENV)
        return cls.load(path) if path else cls()
