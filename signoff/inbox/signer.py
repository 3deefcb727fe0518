"""The inbox's own key: it signs a bound token for each decision its users make.

Under a `verified` policy a decision counts only with a JWT whose `signoff` claim binds it
to exactly that decision (CONTRACT v3 "What counts as a sign-off"). The people using the
inbox hold no keys: the inbox authenticated them (through the proxy), so it signs for them
with its own key, `SIGNOFF_INBOX_SIGNING_KEY_FILE`, which the workers list in their
`SIGNOFF_APPROVER_KEYS` as a service key (a JWKS entry with `"signoff_service": true`, or
the HS256 secret itself): `sub` is the user, `groups` the groups the proxy gave, and the
token expires in minutes (it is used at once).

The file is an HS256 secret (one line of at least 32 bytes, as `SIGNOFF_APPROVER_KEYS`
takes it) or a PEM private key (Ed25519, EC P-256, RSA of 2048 bits or more), whose
public key is in the workers' JWKS under `SIGNOFF_INBOX_SIGNING_KID`.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from signoff.claims import JWS
from signoff.errors import ConfigError
from signoff.identity import ENV_AUDIENCE, ENV_ISSUER
from signoff.inbox.who import Viewer
from signoff.keyfile import MIN_RSA_BITS, read_secret
from signoff.smallfile import read_small_file

SIGNING_KEY_ENV = "SIGNOFF_INBOX_SIGNING_KEY_FILE"
SIGNING_KID_ENV = "SIGNOFF_INBOX_SIGNING_KID"
TOKEN_TTL = timedelta(minutes=5)
"""A token is sent as it is made; a short life leaves little to steal."""
CLAIM = "signoff"


@dataclass(frozen=True)
class InboxSigner:
    """Signs tokens for the inbox's users.

    Attributes:
        algorithm: `HS256`, `EdDSA`, `ES256` or `RS256`.
        kid: the key id the tokens' header names (matches the workers' JWKS entry).
        issuer, audience: `iss` and `aud` of the tokens, as the workers check them
            (`SIGNOFF_APPROVER_ISSUER`, `SIGNOFF_APPROVER_AUDIENCE`).
    """

    path: Path
    algorithm: str
    material: Any = field(repr=False)
    kid: str | None = None
    issuer: str | None = None
    audience: str | None = None
    ttl: timedelta = TOKEN_TTL

    @classmethod
    def load(cls, path: str | os.PathLike[str], kid: str | None = None, issuer: str | None = None,
             audience: str | None = None) -> InboxSigner:  # fmt: skip
        """Read the key file.

        Raises:
            ConfigError: the file cannot be read, or is neither an HS256 secret nor a
                usable unencrypted private key.
        """
        file = Path(path)
        try:
            data = read_small_file(file, 1 << 16)
        except (OSError, ValueError) as exc:
            why = getattr(exc, "strerror", None) or exc
            raise ConfigError(f"{SIGNING_KEY_ENV}: cannot read {file}: {why}") from None
        if b"PRIVATE KEY-----" not in data:
            try:
                secret = read_secret(file)
            except ConfigError as exc:
                raise ConfigError(f"{SIGNING_KEY_ENV}: {exc}") from None
            return cls(file, "HS256", secret, kid, issuer, audience)
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except TypeError:
            raise ConfigError(f"{SIGNING_KEY_ENV}: {file} is encrypted; give an unencrypted key (mode 0600)") from None
        except ValueError as exc:
            raise ConfigError(f"{SIGNING_KEY_ENV}: {file} cannot be read as a private key: {exc}") from None
        return cls(file, _algorithm(key, file), key, kid, issuer, audience)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> InboxSigner | None:
        """The key of `SIGNOFF_INBOX_SIGNING_KEY_FILE`, or None when it is not set."""
        env = os.environ if environ is None else environ
        path = env.get(SIGNING_KEY_ENV, "").strip()
        if not path:
            return None
        kid, issuer, audience = (env.get(name, "").strip() or None for name in (SIGNING_KID_ENV, ENV_ISSUER,
                                                                                  ENV_AUDIENCE))  # fmt: skip
        return cls.load(path, kid, issuer, audience)

    def describe(self) -> str:
        kid = f", kid {self.kid}" if self.kid else ""
        return f"signs decisions with {self.algorithm} key {self.path}{kid}"

    def sign(self, viewer: Viewer, claim: Mapping[str, Any], now: datetime | None = None) -> str:
        """A token for `viewer` (`sub`, `groups`) carrying `claim` as its `signoff` claim."""
        issued = now or datetime.now(UTC)
        claims: dict[str, Any] = {
            "sub": viewer.name, "iat": int(issued.timestamp()), "exp": int((issued + self.ttl).timestamp()),
            "jti": secrets.token_urlsafe(16), CLAIM: dict(claim),
        }  # fmt: skip
        if viewer.groups:
            claims["groups"] = list(viewer.groups)
        if self.issuer:
            claims["iss"] = self.issuer
        if self.audience:
            claims["aud"] = self.audience
        headers = {"kid": self.kid} if self.kid else None
        payload = json.dumps(claims, separators=(",", ":")).encode()
        token: str = JWS.encode(payload, self.material, algorithm=self.algorithm, headers=headers)
        return token


def _algorithm(key: Any, path: Path) -> str:
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return "EdDSA"
    if isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp256r1":
        return "ES256"
    if isinstance(key, rsa.RSAPrivateKey) and key.key_size >= MIN_RSA_BITS:
        return "RS256"
    raise ConfigError(f"{SIGNING_KEY_ENV}: {path} is not an Ed25519, EC P-256 or RSA (2048+) private key")
