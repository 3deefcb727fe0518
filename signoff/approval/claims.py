"""Reading a JWT's header and claims strictly, after or before its signature is checked.

Every value here comes from whoever sent the token, so each check names what was wrong
without repeating the token (a credential), and quotes a stranger's values cut short.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt

from signoff.approval.names import name_problem
from signoff.approval.requests import MAX_TOKEN_CHARS
from signoff.errors import TokenError

LEEWAY = timedelta(seconds=30)  # clock skew between the token's issuer and the worker
JWS = jwt.PyJWS()


def short(value: object) -> str:
    """A stranger's value, quoted and cut, safe to put in a message."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def checked_shape(token: object) -> str:
    if not isinstance(token, str):
        raise TokenError("malformed", f"a token is a string, not {type(token).__name__}")
    token = token.strip()
    if not token:
        raise TokenError("malformed", "the token is empty")
    if len(token) > MAX_TOKEN_CHARS:
        raise TokenError("malformed", f"the token is longer than {MAX_TOKEN_CHARS} characters")
    return token


def read_header(token: str) -> dict[str, Any]:
    try:
        header = JWS.get_unverified_header(token)
    except jwt.PyJWTError as exc:
        raise TokenError("malformed", f"the token is not a JWT: {exc}") from None
    alg = header.get("alg")
    if not isinstance(alg, str):
        raise TokenError("malformed", "the token's header names no algorithm")
    if alg.lower() == "none":
        raise TokenError("algorithm_not_allowed", "unsigned tokens (alg 'none') are never accepted")
    if "crit" in header or "b64" in header:
        raise TokenError("malformed", "the token's header uses extensions signoff does not support (crit, b64)")
    return header


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:  # parsers disagree on which copy wins: refuse both
            raise ValueError(f"claim {key!r} appears twice")
        result[key] = value
    return result


def read_claims(payload: bytes) -> dict[str, Any]:
    try:
        claims = json.loads(payload, object_pairs_hook=_unique, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as exc:
        raise TokenError("malformed", f"the token's claims are not valid JSON: {exc}") from None
    if not isinstance(claims, dict):
        raise TokenError("malformed", "the token's claims are not a JSON object")
    return claims


def claim_time(claims: dict[str, Any], name: str) -> datetime | None:
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TokenError("bad_claim", f"the token's {name!r} claim is not a number of seconds since 1970")
    try:
        return datetime.fromtimestamp(value, UTC)
    except (OverflowError, OSError, ValueError):
        raise TokenError("bad_claim", f"the token's {name!r} claim is out of range") from None


def check_times(claims: dict[str, Any], now: datetime, *, expired_ok: bool = False) -> datetime:
    """The token's expiry, once it is valid at `now` (with `expired_ok`, also after it)."""
    expires_at = claim_time(claims, "exp")
    if expires_at is None:
        raise TokenError("missing_expiry", "the token has no 'exp' claim; signoff accepts only tokens that expire")
    if now >= expires_at + LEEWAY and not expired_ok:
        raise TokenError("expired", f"the token expired at {expires_at.isoformat()}; get a new one")
    not_before = claim_time(claims, "nbf")
    if not_before is not None and now + LEEWAY < not_before:
        raise TokenError("not_yet_valid", f"the token is not valid before {not_before.isoformat()}")
    issued_at = claim_time(claims, "iat")
    if issued_at is not None and issued_at > now + LEEWAY:
        raise TokenError(
            "issued_in_future",
            f"the token says it was issued at {issued_at.isoformat()}, in the future: check the clocks",
        )
    return expires_at


def check_issuer_audience(claims: dict[str, Any], issuer: str | None, audience: str | None) -> None:
    if issuer is not None and claims.get("iss") != issuer:
        raise TokenError("wrong_issuer", f"the token's issuer is {short(claims.get('iss'))}, not {issuer!r}")
    if audience is None:
        return
    aud = claims.get("aud")
    audiences = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
    if audience not in audiences:
        raise TokenError("wrong_audience", f"the token is for audience {short(aud)}, not {audience!r}")


def read_groups(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise TokenError("bad_claim", f"the 'groups' claim must be a list of strings, not {type(value).__name__}")
    for group in value:
        if (problem := name_problem("group", group)) is not None:
            raise TokenError("bad_claim", f"in the 'groups' claim: {problem}")
    return tuple(dict.fromkeys(value))
