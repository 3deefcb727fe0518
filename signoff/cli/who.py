"""Who decides from this terminal: a claimed name, a token, or a key that signs each decision.

With `SIGNOFF_APPROVER_KEY_FILE` (or `--key-file`) set, every decision on a call whose policy
is `verified` is signed for exactly that call (the answer, edited arguments, grant, and the
binding derived from the call as shown and the run as the server describes it, never copied
from the run: `signoff.signing.derived`): a bound token, worthless for anything else. A run
whose request does not match what it shows, or that is not an `AgentRun` on a task queue
your workers serve (`SIGNOFF_SERVED_TASK_QUEUES`), is refused: nothing is signed (exit 1).
`signoff run` signs a requester token bound to the run's workflow id. Calls of other policies
are decided as before: by the name given (`--approver`, default `$USER`), or by
`SIGNOFF_APPROVER_TOKEN` (`--token`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from signoff.approval.requests import ToolApprovalRequest, ToolApprovalResponse
from signoff.approval.signatures import SignoffClaim, requester_claim
from signoff.cli.args import default_approver, identity
from signoff.config.environment import (
    APPROVER_AUDIENCE_ENV,
    APPROVER_ISSUER_ENV,
    APPROVER_KEY_FILE_ENV,
    APPROVER_KID_ENV,
    Environment,
)
from signoff.errors import CommandError, ConfigError, SigningRefused, UsageError
from signoff.signing.derived import RunFacts, ServedRuns, decision_claim_for, extension_claim_for
from signoff.signing.keys import SigningKey

DECISION_TTL = timedelta(minutes=10)
"""A signed decision is checked when it arrives; the tool activity, bound to one call, needs
no lifetime (a grant's own TTL is counted from when it was signed)."""


@dataclass(frozen=True)
class Who:
    """How this terminal names the person deciding, and what it signs with.

    Attributes:
        approver: the name sent with unsigned decisions (`--approver`, default `$USER`; none
            with a token unless given).
        token: `SIGNOFF_APPROVER_TOKEN` / `--token`, sent with unsigned decisions.
        key: signs decisions on verified calls, and requester tokens.
        named: `--approver` as given: the subject signed for (a person's key names its
            own when it is not given; a shared secret signs as `$USER` then).
    """

    approver: str | None = None
    token: str | None = field(default=None, repr=False)
    key: SigningKey | None = None
    named: str | None = None
    issuer: str | None = None
    audience: str | None = None
    user: str | None = None
    """`$USER`, or the login name: whom a shared secret signs as when no name is given."""
    served: ServedRuns = field(default_factory=ServedRuns)
    """The runs it signs for (`SIGNOFF_SERVED_TASK_QUEUES`, default `SIGNOFF_TASK_QUEUE`)."""

    @classmethod
    def from_args(cls, args: argparse.Namespace, env: Environment | None = None) -> Who:
        """From `--approver`, `--token`, `--key-file`, `--kid` and their variables.

        Raises:
            CommandError: the key file cannot be used (exit code 2).
        """
        env = env or Environment()
        approver, token = identity(args, env)
        path = getattr(args, "key_file", None) or env.read(APPROVER_KEY_FILE_ENV)
        kid = getattr(args, "kid", None) or env.read(APPROVER_KID_ENV)
        try:
            key = SigningKey.load(path, kid) if path else None
        except ConfigError as exc:
            raise CommandError(str(exc), 2) from None
        named = getattr(args, "approver", None)
        issuer, audience = env.read(APPROVER_ISSUER_ENV), env.read(APPROVER_AUDIENCE_ENV)
        served = ServedRuns.from_env(env)
        return cls(approver, token, key, named, issuer, audience, default_approver(env), served)

    @property
    def subject(self) -> str | None:
        """Whom the key signs for: the name given, else the key's own (a person's key), else
        (a shared secret) `$USER`."""
        if self.key is None:
            return self.named
        if self.key.personal:
            return self.named or self.key.subject
        return self.named or self.user

    def signs(self, request: ToolApprovalRequest | None) -> bool:
        """Whether a decision on `request` goes signed (a key, a verified call of a durable run):
        then its run's facts are needed (`run_client.run_facts`)."""
        return self.key is not None and request is not None and request.binding is not None and request.policy.verified

    def decision(
        self, request: ToolApprovalRequest | None, response: ToolApprovalResponse, run: RunFacts | None = None
    ) -> ToolApprovalResponse:
        """`response` as sent: signed for `request` as shown, in `run` as the server describes
        it, when its policy is verified and a key is set; otherwise with the name or token given.

        Raises:
            CommandError: it must be signed and cannot be (exit 1: the run's request does not
                match what it shows, or the run is not one served; nothing is signed).
        """
        if request is None or not self.signs(request):
            return response.model_copy(update={"approver": response.approver or self.approver, "token": self.token})
        claim = _derived(lambda facts: decision_claim_for(facts, request, response, self.served), run)
        return response.model_copy(update={"token": self._sign(claim, DECISION_TTL), "approver": self.subject})

    def extension(
        self, request: ToolApprovalRequest | None, seconds: float, run: RunFacts | None = None
    ) -> tuple[str | None, str | None]:
        """(approver, token) for moving `request`'s deadline by `seconds` (CommandError as `decision`)."""
        if request is None or not self.signs(request):
            return self.approver, self.token
        claim = _derived(lambda facts: extension_claim_for(facts, request, seconds, self.served), run)
        return self.subject, self._sign(claim, DECISION_TTL)

    def requester(self, workflow_id: str) -> str | None:
        """A requester token bound to `workflow_id`, when a key is set."""
        return self._sign(requester_claim(workflow_id), DECISION_TTL) if self.key else None

    def sign(self, claim: SignoffClaim, ttl: timedelta) -> str:
        """A token signing `claim` with the key (CommandError without one)."""
        if self.key is None:
            make = "make one with `signoff keys new`"
            raise CommandError(f"no key to sign with: set {APPROVER_KEY_FILE_ENV} ({make})", 2)
        return self._sign(claim, ttl)

    def identity(self) -> tuple[str | None, str | None]:
        """(approver, token) for what needs only who you are (a rearm): with a key, a token
        naming you and signing nothing else; otherwise the name or token given."""
        return (self.subject, self._sign(None, DECISION_TTL)) if self.key else (self.approver, self.token)

    def _sign(self, claim: SignoffClaim | None, ttl: timedelta) -> str:
        assert self.key is not None
        try:
            groups = self.key.groups if self.subject == self.key.subject else ()
            return self.key.sign(
                claim, self.subject, groups=groups, ttl=ttl, issuer=self.issuer, audience=self.audience
            )
        except UsageError as exc:
            raise CommandError(str(exc), 2) from None


def _derived(derive: Callable[[RunFacts], SignoffClaim], run: RunFacts | None) -> SignoffClaim:
    """The claim `derive` makes from the run's facts; CommandError (exit 1) when it refuses."""
    if run is None:
        raise CommandError("the run's facts are needed to sign (run_client.run_facts): nothing signed", 1)
    try:
        return derive(run)
    except SigningRefused as exc:
        raise CommandError(str(exc), 1) from None
