"""Signing decisions: a person's key, or a shared secret, and the bound tokens made with it.

`SIGNOFF_APPROVER_KEY_FILE` names the key a person (or a service) signs with:

- a PEM private key (Ed25519, EC P-256 or RSA of 2048 bits or more), made with
  `signoff keys new`, whose public half is in the workers' `SIGNOFF_APPROVER_KEYS` JWKS
  with `kid` and `sub`: tokens carry the key id and the key's subject and groups, which
  `keys new` writes on the file's first line (`signoff-key: {"kid", "sub", "groups"}`,
  text before the PEM block that PEM readers skip); `SIGNOFF_APPROVER_KID` names the key id
  of a key made elsewhere;
- or an HS256 secret file (the workers' `SIGNOFF_APPROVER_KEYS` itself): whoever holds it
  signs for any subject, so the token names one.

`new_key_pair` makes a key and the JWKS entry to add. Nothing here knows Temporal.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

from signoff.approval.claims import JWS
from signoff.approval.identity import DEFAULT_TTL, token_claims
from signoff.approval.keyfile import MIN_RSA_BITS, read_key_file
from signoff.approval.names import name_problem
from signoff.approval.requests import ToolApprovalRequest, ToolApprovalResponse
from signoff.approval.signatures import SignoffClaim
from signoff.config.environment import APPROVER_KEY_FILE_ENV
from signoff.config.smallfile import ExposedSecret, check_private, read_small_file
from signoff.errors import ConfigError, UsageError
from signoff.signing.derived import RunFacts, ServedRuns, decision_claim_for

_HEADER = "signoff-key: "
"""The first line of a key file `signoff keys new` writes: whom the key signs as."""
KeyType = Literal["ed25519", "ec", "rsa"]
PrivateKey = ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


@dataclass(frozen=True)
class SigningKey:
    """A key to sign tokens with.

    Attributes:
        personal: a private key, whose JWKS entry on the workers names its subject.
        kid: the key id the token's header carries (private keys).
    """

    path: Path
    algorithm: str
    material: Any = field(repr=False)
    kid: str | None = None
    subject: str | None = None
    groups: tuple[str, ...] = ()

    @property
    def personal(self) -> bool:
        return self.algorithm != "HS256"

    @classmethod
    def load(cls, path: str | os.PathLike[str], kid: str | None = None) -> SigningKey:
        """Read a PEM private key or an HS256 secret file.

        Raises:
            ConfigError: the file cannot be read, is encrypted, or holds something else.
        """
        file = Path(path)
        try:
            data = read_small_file(file, 1 << 16, private=None)
            if b"PRIVATE KEY-----" in data:
                check_private(file)  # an HS256 secret is checked as one by read_key_file
        except ExposedSecret as exc:
            raise ConfigError(f"{APPROVER_KEY_FILE_ENV}: the private key signs approvals, but {exc}") from None
        except (OSError, ValueError) as exc:
            why = getattr(exc, "strerror", None) or exc
            raise ConfigError(f"{APPROVER_KEY_FILE_ENV}: cannot read {file}: {why}") from None
        if b"PRIVATE KEY-----" not in data:
            keys = read_key_file(file)
            if keys.kind != "secret":
                raise ConfigError(
                    f"{APPROVER_KEY_FILE_ENV}: {file} holds public keys; sign with a private key "
                    "(`signoff keys new`) or an HS256 secret file"
                )
            return cls(file, "HS256", keys.keys[0].material)
        header = _header(file, data)
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except TypeError:
            raise ConfigError(
                f"{APPROVER_KEY_FILE_ENV}: {file} is encrypted; signoff reads unencrypted keys (keep it 0600)"
            ) from None
        except ValueError as exc:
            raise ConfigError(f"{APPROVER_KEY_FILE_ENV}: {file} cannot be read as a private key: {exc}") from None
        groups = tuple(str(g) for g in header.get("groups") or ())
        return cls(file, _algorithm(key, file), key, kid or header.get("kid"), header.get("sub"), groups)

    def sign(
        self,
        signs: SignoffClaim | None,
        subject: str | None = None,
        *,
        groups: Sequence[str] = (),
        ttl: timedelta = DEFAULT_TTL,
        issuer: str | None = None,
        audience: str | None = None,
        now: datetime | None = None,
        not_before: datetime | None = None,
    ) -> str:
        """A token signing `signs` as `subject` (default: the key's own, with its groups),
        valid from `not_before` (its `nbf`, when given).

        Raises:
            UsageError: no subject to sign as (an HS256 secret, or a key whose file does not
                name one), or a name that cannot be one.
        """
        if subject is None and self.subject is not None:
            subject, groups = self.subject, groups or self.groups
        if subject is None:
            raise UsageError(
                "name the subject this key signs as (--approver)"
                if self.personal
                else "an HS256 secret signs for any subject: name yours (--approver)"
            )
        claims = token_claims(subject, groups, ttl, issuer, audience, now=now, signs=signs)
        if not_before is not None:
            claims["nbf"] = int(not_before.timestamp())
        headers = {"kid": self.kid} if self.kid else None
        payload = json.dumps(claims, separators=(",", ":")).encode()
        token: str = JWS.encode(payload, self.material, algorithm=self.algorithm, headers=headers)
        return token


def signed_decision(
    key: SigningKey,
    request: ToolApprovalRequest,
    approved: bool = True,
    *,
    run: RunFacts,
    served: ServedRuns | None = None,
    subject: str | None = None,
    groups: Sequence[str] = (),
    ttl: timedelta = DEFAULT_TTL,
    issuer: str | None = None,
    audience: str | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """The JSON of a decision on a pending call, signed: `call_id`, `approved`, the call's
    `arguments_digest`, the given fields (`reason`, `arguments`, `grant`), and `token`,
    bound to exactly this decision. What `signoff sign` prints, to send by any Temporal
    client (the Web UI's Send an Update, the `temporal` CLI).

    The claim is derived, never copied (`signoff.signing.derived`): from `run`, what the
    server says of the run the request came from (`await signoff.operator.run_client.run_facts(client,
    workflow_id)`: its first run id, type and task queue), and from the request's call id,
    tool and arguments as you have them; the request's own `binding` must agree.

    Args:
        run: the server's description of the run that asks.
        served: the runs you sign for (default: `AgentRun`s on the `signoff` task queue).

    Raises:
        SigningRefused: the run is not one served, or its request's binding does not match
            what it shows and what the server says (the message names each difference).
        UsageError: no subject to sign as.
    """
    response = ToolApprovalResponse(
        call_id=request.call_id, approved=approved, arguments_digest=request.arguments_digest, **fields
    )
    claim = decision_claim_for(run, request, response, served)
    token = key.sign(claim, subject, groups=groups, ttl=ttl, issuer=issuer, audience=audience)
    return {**response.model_dump(mode="json", exclude_none=True), "token": token}


def _header(path: Path, data: bytes) -> dict[str, Any]:
    """What the file's `signoff-key:` line says (empty without one)."""
    first = data.split(b"\n", 1)[0].decode("utf-8", "replace")
    if not first.startswith(_HEADER):
        return {}
    try:
        header = json.loads(first[len(_HEADER) :])
    except ValueError:
        raise ConfigError(
            f"{APPROVER_KEY_FILE_ENV}: the first line of {path} is not JSON after {_HEADER.strip()!r}"
        ) from None
    if not isinstance(header, dict):
        raise ConfigError(f"{APPROVER_KEY_FILE_ENV}: the first line of {path} does not name the key's subject")
    return header


def _algorithm(key: Any, path: Path) -> str:
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return "EdDSA"
    if isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp256r1":
        return "ES256"
    if isinstance(key, rsa.RSAPrivateKey) and key.key_size >= MIN_RSA_BITS:
        return "RS256"
    raise ConfigError(f"{APPROVER_KEY_FILE_ENV}: {path} is not an Ed25519, EC P-256 or RSA (2048+) private key")


def new_key_pair(
    subject: str, groups: Sequence[str] = (), kid: str | None = None, kind: KeyType = "ed25519", service: bool = False
) -> tuple[bytes, dict[str, Any]]:
    """A new private key (PEM, PKCS#8, after a `signoff-key:` line naming its kid, subject and
    groups) and its public JWKS entry with `kid`, `sub`, `groups`.

    Args:
        service: mark the key `"signoff_service": true`: it may then sign for any subject
            (a service that authenticates its users, such as the inbox).

    Raises:
        UsageError: a subject or group that cannot name anyone.
    """
    for what, value in [("subject", subject), *(("group", g) for g in groups)]:
        if (problem := name_problem(what, value)) is not None:
            raise UsageError(problem)
    key: PrivateKey = (
        ed25519.Ed25519PrivateKey.generate()
        if kind == "ed25519"
        else ec.generate_private_key(ec.SECP256R1())
        if kind == "ec"
        else rsa.generate_private_key(public_exponent=65537, key_size=3072)
    )
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    algorithm = _algorithm(key, Path("(new key)"))
    entry: dict[str, Any] = {
        **json.loads(_public_jwk(key)),
        "kid": kid or f"{subject}-{secrets.token_hex(4)}",
        "use": "sig",
        "alg": algorithm,
        "sub": subject,
    }
    if groups:
        entry["groups"] = list(dict.fromkeys(groups))
    if service:
        entry["signoff_service"] = True
    header = {"kid": entry["kid"], "sub": subject, "groups": list(dict.fromkeys(groups))}
    return (_HEADER + json.dumps(header) + "\n").encode() + pem, entry


def _public_jwk(key: PrivateKey) -> str:
    public = key.public_key()
    if isinstance(public, ed25519.Ed25519PublicKey):
        return str(OKPAlgorithm.to_jwk(public))
    if isinstance(public, ec.EllipticCurvePublicKey):
        return str(ECAlgorithm.to_jwk(public))
    return str(RSAAlgorithm.to_jwk(public))


__all__ = ["KeyType", "PrivateKey", "SigningKey", "new_key_pair", "signed_decision"]
