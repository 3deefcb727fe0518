"""Who an approver is: JWTs verified against the keys the worker is configured with.

`ApproverKeys` holds the keys of `SIGNOFF_APPROVER_KEYS` (an HS256 secret, PEM public keys or
a JWKS; see `signoff.approval.keyfile`; the environment is read by `signoff.config`) and turns
a token into an `Identity`, or refuses it with a `TokenError` whose `reason` says why.
`issue_token` mints HS256 tokens for teams without an identity provider.

Nothing here knows Temporal. Verification reads the clock and the key file, so a workflow
must not call it directly: an activity verifies, and history records the `Identity` (a
frozen pydantic model), so a replay never depends on today's keys or today's time.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

import jwt
from pydantic import BaseModel, ConfigDict

from signoff.approval.claims import (
    JWS,
    check_issuer_audience,
    check_times,
    checked_shape,
    claim_time,
    read_claims,
    read_groups,
    read_header,
    short,
)
from signoff.approval.keyfile import KeyKind, KeySet, VerificationKey, read_key_file, read_secret
from signoff.approval.names import group_of, is_group_entry, name_key, name_problem, same_name
from signoff.approval.people import Person
from signoff.approval.signatures import CLAIM, SignoffClaim, read_claim
from signoff.errors import TokenError, UsageError

DEFAULT_TTL = timedelta(hours=1)
TOKEN_REASONS = (
    "malformed",
    "algorithm_not_allowed",
    "unknown_key_id",
    "bad_signature",
    "missing_expiry",
    "expired",
    "not_yet_valid",
    "issued_in_future",
    "wrong_issuer",
    "wrong_audience",
    "missing_subject",
    "bad_claim",
)

__all__ = [
    "DEFAULT_TTL",
    "NO_KEYS",
    "TOKEN_REASONS",
    "ApproverKeys",
    "Identity",
    "TokenError",
    "Verifier",
    "is_bound",
    "issue_token",
    "read_verified",
    "token_claims",
]

NO_KEYS = "this worker has no approver keys to verify tokens (set SIGNOFF_APPROVER_KEYS)"


class Identity(BaseModel):
    """A verified approver, as recorded in history.

    Attributes:
        subject: the token's `sub` (a person's key signs only its own).
        groups: the token's `groups` claim (empty when absent), duplicates removed (a
            person's key signs only groups among its own).
        expires_at: when the token expires (UTC).
        issued_at: the token's `iat`, when it has one.
        issuer: the token's `iss`, when it has one.
        claim: what the token signs (its `signoff` claim, `signoff.approval.signatures`), or None
            for a plain identity token.
        key_id: the `kid` of the key that verified it, when the key has one.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    subject: str
    groups: tuple[str, ...] = ()
    expires_at: datetime | None = None
    issued_at: datetime | None = None
    issuer: str | None = None
    claim: SignoffClaim | None = None
    key_id: str | None = None
    not_before: datetime | None = None
    """The token's `nbf`, when it has one (a delegation's window opens then)."""

    def person(self) -> Person:
        """Whom the token vouches for: its subject and groups, verified."""
        return Person(name=self.subject, groups=self.groups, verified=True)

    def matches(self, entry: str) -> bool:
        """Whether an allow-list entry names this identity: `group:<name>` or a subject
        (compared as `signoff.approval.names` compares names)."""
        if is_group_entry(entry):
            return group_of(entry) in {name_key(g) for g in self.groups}
        return same_name(entry, self.subject)


class Verifier(Protocol):
    """What checks tokens (`ApproverKeys`): verifies one, and says what it is for the start-up log."""

    def verify(self, token: str, now: datetime | None = None, *, expired_ok: bool = False) -> Identity: ...

    def describe(self) -> str: ...


class ApproverKeys:
    """The keys approver tokens are verified with, and the issuer/audience they must name."""

    def __init__(self, keys: KeySet, issuer: str | None = None, audience: str | None = None) -> None:
        self.keys, self.issuer, self.audience = keys, issuer or None, audience or None

    @classmethod
    def load(cls, path: str | Path, issuer: str | None = None, audience: str | None = None) -> ApproverKeys:
        """Read a key file; ConfigError names the file and what was expected."""
        return cls(read_key_file(Path(path)), issuer, audience)

    @property
    def kind(self) -> KeyKind:
        """`"secret"`, `"pem"` or `"jwks"`."""
        return self.keys.kind

    def describe(self) -> str:
        """What is configured, for a startup log line; never the secret."""
        keys = self.keys.keys
        if self.kind == "secret":
            what = f"HS256 shared secret from {self.keys.path}"
        else:
            labels = ", ".join(k.label + (f" kid={k.kid}" if k.kid else "") for k in keys)
            plural = "s" * (len(keys) != 1)
            what = f"{len(keys)} public key{plural} ({labels}) from {self.kind.upper()} {self.keys.path}"
        if self.keys.skipped:
            what += f"; skipped {len(self.keys.skipped)}: {'; '.join(self.keys.skipped)}"
        issuer = repr(self.issuer) if self.issuer else "not checked"
        audience = repr(self.audience) if self.audience else "not checked"
        return f"approver tokens: {what}; issuer {issuer}; audience {audience}"

    def __repr__(self) -> str:
        return f"ApproverKeys({self.describe()!r})"

    def verify(self, token: str, now: datetime | None = None, *, expired_ok: bool = False) -> Identity:
        """The identity a token proves, or TokenError saying why it proves none.

        Args:
            token: the compact JWT (surrounding whitespace is ignored).
            now: the time to check `exp`/`nbf`/`iat` against (timezone-aware); default now.
            expired_ok: accept a token whose `exp` has passed (it must still have one, and
                not be issued after `now`): for a signed decision checked when its call
                runs, whose lifetime was checked when it was decided.

        Raises:
            TokenError: the token is malformed, badly signed, expired, for another issuer
                or audience, or its claims are not what signoff needs.
            UsageError: `now` is a naive datetime.
        """
        if now is not None and now.tzinfo is None:
            raise UsageError("verify(now=...) needs a timezone-aware datetime, e.g. datetime.now(UTC)")
        token = checked_shape(token)
        header = read_header(token)
        payload, key = self._signed_payload(token, header)
        claims = read_claims(payload)
        return _identity(claims, now or datetime.now(UTC), self.issuer, self.audience, key, expired_ok)

    def _candidates(self, header: dict[str, Any]) -> list[VerificationKey]:
        alg, kid = header["alg"], header.get("kid")
        keys = self.keys.keys
        if kid is not None and any(k.kid is not None for k in keys):
            keys = tuple(k for k in keys if k.kid == kid)
            if not keys:
                raise TokenError(
                    "unknown_key_id",
                    f"no configured key has the token's key id {short(kid)}; if the identity provider "
                    "rotated its keys, download its JWKS again into the worker's SIGNOFF_APPROVER_KEYS file",
                )
        usable = [k for k in keys if alg in k.algorithms]
        if not usable:
            allowed = sorted({a for k in keys for a in k.algorithms})
            raise TokenError(
                "algorithm_not_allowed",
                f"algorithm {short(alg)} is not accepted for the configured keys (accepted: {', '.join(allowed)})",
            )
        return usable

    def _signed_payload(self, token: str, header: dict[str, Any]) -> tuple[bytes, VerificationKey]:
        for key in self._candidates(header):
            try:
                payload: bytes = JWS.decode(token, key.material, algorithms=[header["alg"]])
            except jwt.InvalidSignatureError:
                continue  # another configured key may have signed it
            except jwt.PyJWTError as exc:
                raise TokenError("malformed", f"the token cannot be read: {exc}") from None
            return payload, key
        raise TokenError(
            "bad_signature",
            "the token's signature does not match the configured keys: it was signed with another key or altered",
        )


def issue_token(
    key_file: Path,
    subject: str,
    groups: Sequence[str] = (),
    ttl: timedelta = DEFAULT_TTL,
    issuer: str | None = None,
    audience: str | None = None,
    *,
    now: datetime | None = None,
    signs: SignoffClaim | None = None,
) -> str:
    """An HS256 approver token signed with the secret in `key_file`.

    Args:
        signs: what the token signs (its `signoff` claim, `signoff.approval.signatures`); None
            makes a plain identity token, which verified policies refuse.

    Raises:
        ConfigError: the file is not an HS256 secret (PEM/JWKS setups mint tokens with
            their identity provider), or cannot be read.
        UsageError: an empty or unprintable subject or group, or a ttl that is not positive.
    """
    secret = read_secret(Path(key_file))
    claims = token_claims(subject, groups, ttl, issuer, audience, now=now, signs=signs)
    return JWS.encode(json.dumps(claims, separators=(",", ":")).encode(), secret, algorithm="HS256")


def token_claims(
    subject: str | None,
    groups: Sequence[str] = (),
    ttl: timedelta = DEFAULT_TTL,
    issuer: str | None = None,
    audience: str | None = None,
    *,
    now: datetime | None = None,
    signs: SignoffClaim | None = None,
) -> dict[str, Any]:
    """The claims of a token signoff signs: `sub` (omitted when None: a person's key names
    it), `groups`, `iat`, `exp`, a `jti`, `iss`/`aud` when given, and `signoff` when it signs
    something.

    Raises:
        UsageError: an empty or unprintable subject or group, or a ttl that is not positive.
    """
    names = [("subject", subject)] if subject is not None else []
    for what, value in [*names, *(("group", g) for g in groups)]:
        if (problem := name_problem(what, value)) is not None:
            raise UsageError(problem)
    if ttl <= timedelta(0):
        raise UsageError(f"the token's lifetime must be positive, not {ttl}")
    issued = now or datetime.now(UTC)
    claims: dict[str, Any] = {
        "iat": int(issued.timestamp()),
        "exp": int((issued + ttl).timestamp()),
        "jti": secrets.token_urlsafe(16),
    }
    if subject is not None:
        claims["sub"] = subject
    if groups:
        claims["groups"] = list(dict.fromkeys(groups))
    if issuer:
        claims["iss"] = issuer
    if audience:
        claims["aud"] = audience
    if signs is not None:
        claims[CLAIM] = signs.model_dump(mode="json")
    return claims


def _identity(
    claims: dict[str, Any],
    now: datetime,
    issuer: str | None,
    audience: str | None,
    key: VerificationKey | None,
    expired_ok: bool = False,
) -> Identity:
    expires_at = check_times(claims, now, expired_ok=expired_ok)
    check_issuer_audience(claims, issuer, audience)
    subject, groups = _signer(claims, key)
    iss = claims.get("iss")
    return Identity(
        subject=subject,
        groups=groups,
        expires_at=expires_at,
        issued_at=claim_time(claims, "iat"),
        issuer=iss if isinstance(iss, str) else None,
        claim=_claim(claims),
        key_id=key.kid if key else None,
        not_before=claim_time(claims, "nbf"),
    )


def _signer(claims: dict[str, Any], key: VerificationKey | None) -> tuple[str, tuple[str, ...]]:
    """Who the token speaks for: its `sub` and `groups`, within what a person's key may sign.

    Both come from the token itself (a person's key only bounds them), so a token says whom
    it speaks for without the keys: see `read_verified`."""
    subject = claims.get("sub")
    if subject is None or subject == "":
        raise TokenError("missing_subject", "the token has no 'sub' claim naming the approver")
    if (problem := name_problem("subject", subject)) is not None:
        raise TokenError("bad_claim", f"in the 'sub' claim: {problem}")
    groups = read_groups(claims.get("groups"))
    if key is None or not key.personal:
        return subject, groups
    assert key.subject is not None
    if not same_name(subject, key.subject):
        raise TokenError("bad_claim", f"key {short(key.kid)} signs only as {key.subject!r}, not {short(subject)}")
    allowed = {name_key(g) for g in key.groups}
    if beyond := [g for g in groups if name_key(g) not in allowed]:
        raise TokenError("bad_claim", f"key {short(key.kid)} may not sign for the group(s) {short(beyond)}")
    return subject, groups


def is_bound(token: str) -> bool:
    """Whether a token carries the `signoff` claim (read without verifying it)."""
    try:
        return read_verified(token).claim is not None
    except TokenError:
        return False  # unreadable: whoever verifies it says why


def read_verified(token: str) -> Identity:
    """Whom a token already verified speaks for, read from the token alone (no keys, no clock).

    For a decision the update's validator verified (`signoff.runtime.tokens`): the update's
    handler, also when it replays, reads the same identity from the same token, so nothing
    needs recording. Never call it on a token nothing verified.

    Raises:
        TokenError: the token cannot be read (it could not have verified either).
    """
    token = checked_shape(token)
    try:
        payload: bytes = JWS.decode_complete(token, options={"verify_signature": False})["payload"]
    except jwt.PyJWTError as exc:
        raise TokenError("malformed", f"the token cannot be read: {exc}") from None
    claims = read_claims(payload)
    subject, groups = _signer(claims, None)
    iss = claims.get("iss")
    return Identity(
        subject=subject,
        groups=groups,
        expires_at=claim_time(claims, "exp"),
        issued_at=claim_time(claims, "iat"),
        issuer=iss if isinstance(iss, str) else None,
        claim=_claim(claims),
    )


def _claim(claims: dict[str, Any]) -> SignoffClaim | None:
    if CLAIM not in claims:
        return None
    try:
        return read_claim(claims[CLAIM])
    except ValueError as exc:
        raise TokenError("bad_claim", str(exc)) from None
