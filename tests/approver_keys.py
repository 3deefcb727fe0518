"""Real keys and tokens for approver-identity tests: key files as operators write them.

Keys are generated with `cryptography`; tokens are signed with PyJWT, or by hand where a
test needs a token no honest library would produce.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

from signoff.approval.requests import ToolApprovalRequest
from signoff.signing.derived import RunFacts, ServedRuns
from signoff.signing.keys import SigningKey, signed_decision

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey


def rsa_key(bits: int = 2048) -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=bits)


def ec_key(curve: ec.EllipticCurve | None = None) -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(curve or ec.SECP256R1())


def ed25519_key() -> ed25519.Ed25519PrivateKey:
    return ed25519.Ed25519PrivateKey.generate()


def public_pem(key: PrivateKey) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def write_secret(path: Path, secret: str | None = None) -> str:
    """An HS256 secret file as docs/verified-approvers.md makes it (`secrets.token_urlsafe(48)` and a newline)."""
    secret = secret or secrets.token_urlsafe(48)
    path.write_text(secret + "\n")
    path.chmod(0o600)  # a secret is its owner's alone, or no worker reads it
    return secret


def write_pem(path: Path, *keys: PrivateKey) -> Path:
    path.write_bytes(b"".join(public_pem(k) for k in keys))
    return path


def jwk(key: PrivateKey, kid: str, **extra: Any) -> dict[str, Any]:
    """The public JWK of `key`, as an identity provider publishes it."""
    public = key.public_key()
    entry: dict[str, Any]
    if isinstance(public, rsa.RSAPublicKey):
        entry = RSAAlgorithm.to_jwk(public, as_dict=True)
    elif isinstance(public, ec.EllipticCurvePublicKey):
        entry = ECAlgorithm.to_jwk(public, as_dict=True)
    else:
        entry = OKPAlgorithm.to_jwk(public, as_dict=True)
    return {**entry, "kid": kid, "use": "sig", **extra}


def write_jwks(path: Path, *entries: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"keys": list(entries)}, indent=2))
    return path


def claims(**overrides: Any) -> dict[str, Any]:
    """Valid claims at NOW (expiring in ten minutes); a None override removes the claim."""
    base: dict[str, Any] = {
        "sub": "alice",
        "groups": ["sre"],
        "iat": int(NOW.timestamp()),
        "exp": int((NOW + timedelta(minutes=10)).timestamp()),
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


def sign(key: PrivateKey | str, algorithm: str, kid: str | None = None, **overrides: Any) -> str:
    headers = {"kid": kid} if kid else None
    material: Any = key.encode() if isinstance(key, str) else key
    return jwt.encode(claims(**overrides), material, algorithm=algorithm, headers=headers)


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def hand_made(header: dict[str, Any], payload: bytes | str, hmac_key: bytes | None = None) -> str:
    """A token built without a JWT library: any header, any payload bytes, HMAC or no signature."""
    raw = payload.encode() if isinstance(payload, str) else payload
    signing_input = f"{b64(json.dumps(header).encode())}.{b64(raw)}"
    signature = hmac.new(hmac_key, signing_input.encode(), hashlib.sha256).digest() if hmac_key else b""
    return f"{signing_input}.{b64(signature)}"


def signed(
    key_file: Path,
    pending: dict[str, Any],
    subject: str | None = None,
    *groups: str,
    approved: bool = True,
    **fields: Any,
) -> dict[str, Any]:
    """A decision on a pending call (as the `pending_approvals` query returns it), signed with
    the key in `key_file` (an HS256 secret, or a person's PEM key) for exactly that call.

    `run` is what the server says of the run (`signoff.operator.run_client.run_facts`); by default the
    facts a genuine run's own binding names (an `AgentRun`, on a queue served): the tests that
    use this sign for runs of signoff's own workers, and the derivation itself, against runs
    that lie, is tested with real signers (tests/test_signing_what_is_shown.py)."""
    request = ToolApprovalRequest.model_validate(pending)
    key = SigningKey.load(key_file, fields.pop("kid", None))
    run = fields.pop("run", None) or genuine_facts(request)
    served = ServedRuns(("*",))
    return signed_decision(key, request, approved, run=run, served=served, subject=subject, groups=groups, **fields)


def genuine_facts(request: ToolApprovalRequest, task_queue: str = "any") -> RunFacts:
    """What the server says of a genuine `AgentRun` whose request `request` is."""
    assert request.binding is not None, "the request names no binding"
    return RunFacts(request.binding.workflow_id, request.binding.chain_id, "AgentRun", task_queue)
