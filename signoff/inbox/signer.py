"""The inbox's own key: it signs a bound token for each decision its users make.

Under a `verified` policy a decision counts only with a JWT whose `signoff` claim binds it
to exactly that decision (CONTRACT v3 "What counts as a sign-off"). The people using the
inbox hold no keys: the inbox authenticated them (through the proxy), so it signs for them
with its own key, `SIGNOFF_INBOX_SIGNING_KEY_FILE`, which the workers list in their
`SIGNOFF_APPROVER_KEYS` as a service key (the HS256 secret itself, or a JWKS entry with
`"signoff_service": true`): `sub` is the user, `groups` the groups the proxy gave, and the
token expires in minutes (it is used at once).

The file is read as `signoff.signing.keys` reads any signing key: an HS256 secret (one line of at
least 32 bytes) or a PEM private key (Ed25519, EC P-256, RSA of 2048 bits or more) whose
public key is in the workers' JWKS under `SIGNOFF_INBOX_SIGNING_KID`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timedelta

from signoff.approval.signatures import DecisionClaim
from signoff.config.environment import (
    APPROVER_AUDIENCE_ENV,
    APPROVER_ISSUER_ENV,
    APPROVER_KEY_FILE_ENV,
    INBOX_SIGNING_KEY_FILE_ENV,
    INBOX_SIGNING_KID_ENV,
    Environment,
    key_file,
)
from signoff.errors import ConfigError
from signoff.inbox.who import Viewer
from signoff.signing.keys import SigningKey

TOKEN_TTL = timedelta(minutes=5)
"""A token is sent as it is made; a short life leaves little to steal."""


@dataclass(frozen=True)
class InboxSigner:
    """Signs tokens for the inbox's users with the inbox's key.

    Attributes:
        issuer, audience: `iss` and `aud` of the tokens, as the workers check them
            (`SIGNOFF_APPROVER_ISSUER`, `SIGNOFF_APPROVER_AUDIENCE`).
    """

    key: SigningKey
    issuer: str | None = None
    audience: str | None = None
    ttl: timedelta = TOKEN_TTL

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        kid: str | None = None,
        issuer: str | None = None,
        audience: str | None = None,
    ) -> InboxSigner:
        """Read the key file.

        Raises:
            ConfigError: the file cannot be read, or is neither an HS256 secret nor a
                usable unencrypted private key (the message names the setting).
        """
        try:
            key = SigningKey.load(path, kid)
        except ConfigError as exc:
            why = str(exc).removeprefix(f"{APPROVER_KEY_FILE_ENV}: ")
            raise ConfigError(f"{INBOX_SIGNING_KEY_FILE_ENV}: {why}") from None
        return cls(key, issuer, audience)

    @classmethod
    def from_env(cls, env: Environment) -> InboxSigner | None:
        """The key of `SIGNOFF_INBOX_SIGNING_KEY_FILE`, or None when it is not set."""
        key = key_file(env, INBOX_SIGNING_KEY_FILE_ENV, INBOX_SIGNING_KID_ENV)
        return (
            cls.load(key.path, key.kid, env.read(APPROVER_ISSUER_ENV), env.read(APPROVER_AUDIENCE_ENV)) if key else None
        )

    @property
    def algorithm(self) -> str:
        return self.key.algorithm

    def describe(self) -> str:
        kid = f", kid {self.key.kid}" if self.key.kid else ""
        return f"signs decisions with {self.key.algorithm} key {self.key.path}{kid}"

    def sign(self, viewer: Viewer, claim: DecisionClaim, now: datetime | None = None) -> str:
        """A token for `viewer` (`sub`, `groups`) carrying `claim` as its `signoff` claim."""
        return self.key.sign(
            claim, viewer.name, groups=viewer.groups, ttl=self.ttl, issuer=self.issuer, audience=self.audience, now=now
        )
