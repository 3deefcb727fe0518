"""Who may decide a tool's calls, how many must agree, and what happens when nobody does.

An `ApprovalPolicy` is declared with a tool (`ApprovalRequiredTool(t, policy=...)`,
`@tool(approval=...)`) or in a policy file for configured agents (`SIGNOFF_POLICY_FILE`,
TOML or JSON keyed by tool name, `*` for every other tool). It is snapshotted with the
run and shown in each pending request, so what governs a paused call never changes
under it. The rules that apply a policy to a decision live in `signoff.approval.authority`.

Configuration adds gates and never removes them (`PolicyBook`): an entry with
`always = true` makes every call of its tool wait for a person, `"*"` with `always`
gates every tool without an entry of its own, and an entry for a tool whose code
declares a policy may change who decides and when, but never make it less strict
(`tightened`).
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from enum import Enum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from signoff.approval.digest import canonical_json, sha256_hex
from signoff.approval.names import name_problem
from signoff.errors import ConfigError

DEFAULT_KEY = "*"
CRITERIA_KEY = "criteria"
"""The policy file's table of auto mode's criteria sets (not a tool's entry)."""
ALWAYS_KEY = "always"
"""A policy file entry's gate: every call of the tool needs approval (not a field of the policy)."""

DecisionKind = Literal["approve", "deny", "edit", "respond"]
"""The kinds of answer a person may give a call: approve it, deny it, approve it with edited
arguments, or answer it with its result instead of running it."""

Gate = Literal["always", "never", "per_call"]
"""How a tool's calls are gated: every call waits for a person, none does, or the tool says
per call from its arguments (`requires_approval`). A tool declares it
(`signoff.tools.base.ToolCapabilities`); configuration may make it `always` (`PolicyBook.gated`)."""


class OnTimeout(str, Enum):
    """What an undecided call becomes when its deadline passes."""

    DENY = "deny"
    APPROVE = "approve"
    FAIL_RUN = "fail_run"
    HOLD = "hold"
    """The call expires (status `expired`) and the run stays parked until someone re-opens it
    (`rearm_tool_call`) or the run ends."""


DEFAULT_MIN_CONFIDENCE = 0.9
"""The confidence an auto verdict needs when neither the policy nor its criteria set names one."""


class AutoMode(BaseModel):
    """`"auto"` in a tool's policy: an evaluator judges each call against a criteria set first.

    It can only spare a person work: a verdict below the bar, an evaluator that fails or takes
    longer than `timeout_seconds`, or a criteria set the worker does not define leave the call
    waiting exactly as without auto mode (`signoff.approval.auto`).

    Attributes:
        criteria: the name of a criteria set of the policy file (`[criteria.<name>]`).
        min_confidence: the confidence a verdict needs (the higher of this and the set's own);
            None: the set's, else `DEFAULT_MIN_CONFIDENCE`.
        timeout_seconds: how long the evaluator may think before the call goes to a person.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    criteria: str = Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.-]+$")
    min_confidence: float | None = Field(None, ge=0, le=1)
    timeout_seconds: float = Field(60.0, gt=0, le=600)


class CriteriaSet(BaseModel):
    """A named set of criteria an auto evaluator judges calls by (`[criteria.<name>]`).

    Attributes:
        effect: what the calls it judges do, in a sentence (for the evaluator).
        approve_when, deny_when, escalate_when: the operator's rules, in plain words.
        min_confidence: the confidence a verdict needs (a policy may ask for more).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    effect: str = ""
    approve_when: tuple[str, ...] = ()
    deny_when: tuple[str, ...] = ()
    escalate_when: tuple[str, ...] = ()
    min_confidence: float | None = Field(None, ge=0, le=1)


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
        grants: whether an approval may carry a grant ("approve and remember"); False
            makes every call of the tool wait for its own decision. Left out of the JSON
            (and the digest) while True, so policies from before it keep their digests.
        respond: whether an allowed person may answer a waiting call with its result
            (`{"call_id", "respond": "<text>"}`) instead of running it: the tool never runs
            and the model reads the text. Left out of the JSON (and the digest) while False.
        decisions: the kinds of answer the tool's calls take (`approve`, `deny`, `edit`,
            `respond`); None: all but `respond`, and `respond` too when `respond` is true.
            Left out of the JSON (and the digest) while None.
        auto: auto mode (`AutoMode`): an evaluator judges each call first. Left out of the
            JSON while None, as `grants` is.
        min_review_seconds: a person's approval sent sooner than this after the call was
            asked is refused, so they look again (a rubber-stamp guard; grants and auto mode
            are not people). Left out of the JSON while None.
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
    grants: bool = Field(True, exclude_if=lambda allowed: allowed is True)
    respond: bool = Field(False, exclude_if=lambda allowed: allowed is False)
    decisions: tuple[DecisionKind, ...] | None = Field(None, exclude_if=lambda kinds: kinds is None)
    auto: AutoMode | None = Field(None, exclude_if=lambda auto: auto is None)
    min_review_seconds: float | None = Field(None, gt=0, le=3600, exclude_if=lambda seconds: seconds is None)

    def allows(self, kind: DecisionKind) -> bool:
        """Whether the tool's calls take this kind of answer (`decisions`)."""
        if self.decisions is not None:
            return kind in self.decisions
        return kind != "respond" or self.respond

    @field_validator("approvers", "escalate_to")
    @classmethod
    def _names(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        for name in names:
            if (problem := name_problem("approver entry", name, group_entry=True)) is not None:
                raise ValueError(problem)
        return names

    @model_validator(mode="after")
    def _signed_or_nothing(self) -> ApprovalPolicy:
        if self.verified and self.timeout_seconds and self.on_timeout is OnTimeout.APPROVE:
            raise ValueError(
                "a verified policy cannot approve on timeout: nobody would have signed the call "
                '(use on_timeout = "deny" or "fail_run")'
            )
        return self

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


def tightened(declared: ApprovalPolicy, entry: ApprovalPolicy) -> tuple[ApprovalPolicy, list[str]]:
    """A configured `entry` over the policy `declared` with the tool's code, and what it
    tried to relax.

    The fields the entry sets replace the declared ones (who decides, deadlines,
    reminders, escalation); the rest stay. What would make the policy less strict is not
    applied, and named instead: turning off `verified` or `separate_requester`, a lower
    `quorum`, grants the code forbids, an empty approver list (anyone) where the code
    names approvers, or a deadline that approves where the code's does not.
    """
    merged = {**declared.model_dump(mode="json"), **entry.model_dump(mode="json", include=entry.model_fields_set)}
    relaxed: dict[str, tuple[Any, str]] = {
        "verified": (True, "turns off verified"),
        "separate_requester": (True, "turns off separate_requester"),
        "quorum": (declared.quorum, f"lowers the quorum below {declared.quorum}"),
        "grants": (False, "allows grants the tool's own policy forbids"),
        "approvers": (list(declared.approvers), "lets anyone approve (an empty approvers list)"),
        "min_review_seconds": (declared.min_review_seconds, "shortens min_review_seconds"),
    }
    looser = {
        "verified": declared.verified and not merged["verified"],
        "separate_requester": declared.separate_requester and not merged["separate_requester"],
        "quorum": merged["quorum"] < declared.quorum,
        "grants": not declared.grants and entry.grants and "grants" in entry.model_fields_set,
        "approvers": bool(declared.approvers) and not merged["approvers"],
        "min_review_seconds": bool(declared.min_review_seconds)
        and (merged.get("min_review_seconds") or 0) < (declared.min_review_seconds or 0),
    }
    if declared.decisions is not None:  # configuration may take kinds of answer away, never add them
        given = merged["decisions"]
        kept = [k for k in (given if given is not None else declared.decisions) if k in declared.decisions]
        merged["decisions"] = kept
    problems = [relaxed[name][1] for name, loose in looser.items() if loose]
    merged.update({name: relaxed[name][0] for name, loose in looser.items() if loose})
    approves = merged["timeout_seconds"] and merged["on_timeout"] == OnTimeout.APPROVE.value
    if approves and declared.timeout_outcome is not OnTimeout.APPROVE:
        problems.append("approves calls on timeout")
        merged.update(on_timeout=declared.on_timeout.value, timeout_seconds=declared.timeout_seconds)
    return ApprovalPolicy.model_validate(merged), problems


class PolicyBook(BaseModel):
    """Policies by tool name, `*` for the rest, and the tools every call of which needs
    approval (`always`): what a policy file holds.

    A book adds gates, never removes them: `gated(name)` says whether configuration makes
    every call of a tool wait, whatever the tool's own code says; `for_tool` combines the
    book's entry with the policy the tool declares without relaxing it (`tightened`).
    """

    model_config = ConfigDict(frozen=True)

    policies: dict[str, ApprovalPolicy] = Field(default_factory=dict)
    always: frozenset[str] = frozenset()
    """Tool names (and `*`) whose every call needs approval."""
    criteria: dict[str, CriteriaSet] = Field(default_factory=dict)
    """Auto mode's criteria sets, by name (the file's `criteria` table)."""

    def gated(self, name: str) -> bool:
        """Whether every call of `name` needs approval by configuration: its own entry says
        `always`, or it has no entry of its own and `*` does."""
        return name in self.always or (name not in self.policies and DEFAULT_KEY in self.always)

    def for_tool(self, name: str, declared: ApprovalPolicy | None = None) -> ApprovalPolicy:
        """The book's entry for `name` over the tool's own policy (never less strict), else
        the tool's own, else the book's `*`, else anyone."""
        entry = self.policies.get(name)
        if entry is None:
            return declared if declared is not None else self.policies.get(DEFAULT_KEY, DEFAULT_POLICY)
        return entry if declared is None else tightened(declared, entry)[0]

    def relaxations(self, name: str, declared: ApprovalPolicy | None) -> list[str]:
        """What the book's entry for `name` tries to relax in the tool's own policy (not applied)."""
        entry = self.policies.get(name)
        return [] if entry is None or declared is None else tightened(declared, entry)[1]

    def merged_over(self, base: PolicyBook) -> PolicyBook:
        """This book over `base` (the worker's file over an agent's own): its entries tighten
        `base`'s, and both books' gates hold."""
        merged = dict(base.policies)
        for name, entry in self.policies.items():
            merged[name] = tightened(merged[name], entry)[0] if name in merged else entry
        return PolicyBook(
            policies=merged, always=base.always | self.always, criteria={**base.criteria, **self.criteria}
        )

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
            raise ConfigError(f"SIGNOFF_POLICY_FILE: cannot read {file}: {exc.strerror or exc}") from None
        try:
            raw: Any = json.loads(text) if file.suffix == ".json" else tomllib.loads(text)
        except (ValueError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"SIGNOFF_POLICY_FILE: {file} is not valid {file.suffix or 'TOML'}: {exc}") from None
        return cls.parse(raw, str(file))

    @classmethod
    def parse(cls, raw: Any, source: str = "policy file") -> PolicyBook:
        if not isinstance(raw, Mapping):
            raise ConfigError(f"{source}: expected a table of tool names, got {type(raw).__name__}")
        policies, always = {}, set()
        criteria = _criteria(raw.get(CRITERIA_KEY, {}), source)
        for name, value in raw.items():
            if name == CRITERIA_KEY:
                continue
            entry = dict(value) if isinstance(value, Mapping) else value
            gate = entry.pop(ALWAYS_KEY, False) if isinstance(entry, dict) else False
            if not isinstance(gate, bool):
                raise ConfigError(f"{source}: policy for {name!r}: {ALWAYS_KEY}: must be true or false, not {gate!r}")
            try:
                policies[str(name)] = ApprovalPolicy.model_validate(entry)
            except ValidationError as exc:
                problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or name}: {e['msg']}" for e in exc.errors())
                raise ConfigError(f"{source}: policy for {name!r}: {problems}") from None
            if gate:
                always.add(str(name))
        return cls(policies=policies, always=frozenset(always), criteria=criteria)


def _criteria(raw: Any, source: str) -> dict[str, CriteriaSet]:
    """The file's criteria sets, each checked (ConfigError names the set and the field)."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{source}: {CRITERIA_KEY}: expected a table of criteria sets, got {type(raw).__name__}")
    sets = {}
    for name, value in raw.items():
        try:
            sets[str(name)] = CriteriaSet.model_validate(value)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or name}: {e['msg']}" for e in exc.errors())
            raise ConfigError(f"{source}: criteria set {name!r}: {problems}") from None
    return sets
