"""Verifying approver tokens: what a valid token proves, and every way a token is refused."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from pydantic import ValidationError

from signoff.approval.identity import TOKEN_REASONS, ApproverKeys, Identity, issue_token
from signoff.errors import TokenError, UsageError
from tests.approver_keys import (
    NOW,
    PrivateKey,
    b64,
    claims,
    ec_key,
    ed25519_key,
    hand_made,
    jwk,
    rsa_key,
    sign,
    write_jwks,
    write_pem,
    write_secret,
)
from tests.processes import REPO

SECRET = "s" * 20 + "0123456789abcdefghijklmnop"


@pytest.fixture(scope="module")
def rsa() -> PrivateKey:
    return rsa_key()


@pytest.fixture
def hs_keys(tmp_path: Path) -> ApproverKeys:
    write_secret(tmp_path / "approver.key", SECRET)
    return ApproverKeys.load(tmp_path / "approver.key")


def refused(keys: ApproverKeys, token: Any, now: Any = NOW) -> TokenError:
    with pytest.raises(TokenError) as caught:
        keys.verify(token, now=now)
    assert caught.value.reason in TOKEN_REASONS
    return caught.value


def test_issued_hs256_token_proves_subject_groups_issuer_and_expiry(tmp_path: Path) -> None:
    write_secret(tmp_path / "k", SECRET)
    token = issue_token(tmp_path / "k", "alice", ["sre", "oncall"], timedelta(minutes=5), "team", "signoff", now=NOW)
    identity = ApproverKeys.load(tmp_path / "k", issuer="team", audience="signoff").verify(token, now=NOW)
    assert identity == Identity(
        subject="alice", groups=("sre", "oncall"), expires_at=NOW + timedelta(minutes=5), issued_at=NOW, issuer="team"
    )


@pytest.mark.parametrize(
    ("make_key", "algorithm"),
    [
        (rsa_key, "RS256"),
        (rsa_key, "PS256"),
        (ec_key, "ES256"),
        (lambda: ec_key(ec.SECP384R1()), "ES384"),
        (ed25519_key, "EdDSA"),
    ],
)
def test_pem_public_key_verifies_its_own_algorithm(
    tmp_path: Path, make_key: Callable[[], PrivateKey], algorithm: str
) -> None:
    key = make_key()
    keys = ApproverKeys.load(write_pem(tmp_path / "k.pem", key))
    assert keys.verify(sign(key, algorithm), now=NOW).subject == "alice"


def test_any_of_several_pem_keys_may_have_signed(tmp_path: Path, rsa: PrivateKey) -> None:
    other = ed25519_key()
    keys = ApproverKeys.load(write_pem(tmp_path / "k.pem", rsa, other))
    assert keys.verify(sign(other, "EdDSA", sub="bob"), now=NOW).subject == "bob"
    assert keys.verify(sign(rsa, "RS256", sub="carol"), now=NOW).subject == "carol"


def test_jwks_selects_the_key_by_kid(tmp_path: Path, rsa: PrivateKey) -> None:
    second = ec_key()
    keys = ApproverKeys.load(write_jwks(tmp_path / "jwks.json", jwk(rsa, "2026-a"), jwk(second, "2026-b")))
    assert keys.verify(sign(second, "ES256", kid="2026-b", sub="bob"), now=NOW).subject == "bob"
    assert keys.verify(sign(rsa, "RS256", kid="2026-a", sub="carol"), now=NOW).subject == "carol"


def test_jwks_refuses_a_token_whose_kid_names_another_key_than_signed_it(tmp_path: Path, rsa: PrivateKey) -> None:
    path = write_jwks(tmp_path / "jwks.json", jwk(rsa, "a"), jwk(rsa_key(), "b"))
    assert refused(ApproverKeys.load(path), sign(rsa, "RS256", kid="b")).reason == "bad_signature"


def test_jwks_refuses_an_unknown_kid_and_says_to_download_again(tmp_path: Path, rsa: PrivateKey) -> None:
    keys = ApproverKeys.load(write_jwks(tmp_path / "jwks.json", jwk(rsa, "old")))
    error = refused(keys, sign(rsa, "RS256", kid="rotated"))
    assert error.reason == "unknown_key_id" and "download its JWKS again" in str(error)
    assert str(tmp_path) not in str(error)  # whoever sent the token learns nothing of the worker's files


def test_jwks_key_with_declared_alg_refuses_other_algorithms(tmp_path: Path, rsa: PrivateKey) -> None:
    keys = ApproverKeys.load(write_jwks(tmp_path / "jwks.json", jwk(rsa, "a", alg="PS256")))
    assert refused(keys, sign(rsa, "RS256", kid="a")).reason == "algorithm_not_allowed"
    assert keys.verify(sign(rsa, "PS256", kid="a"), now=NOW).subject == "alice"


def test_token_expired_past_the_leeway_is_refused(hs_keys: ApproverKeys) -> None:
    token = sign(SECRET, "HS256", exp=int(NOW.timestamp()))
    assert hs_keys.verify(token, now=NOW + timedelta(seconds=29)).subject == "alice"
    assert refused(hs_keys, token, now=NOW + timedelta(seconds=30)).reason == "expired"


def test_token_without_expiry_is_refused(hs_keys: ApproverKeys) -> None:
    assert refused(hs_keys, sign(SECRET, "HS256", exp=None)).reason == "missing_expiry"


def test_token_not_yet_valid_is_refused(hs_keys: ApproverKeys) -> None:
    token = sign(SECRET, "HS256", nbf=int((NOW + timedelta(minutes=2)).timestamp()))
    assert refused(hs_keys, token).reason == "not_yet_valid"
    assert hs_keys.verify(token, now=NOW + timedelta(minutes=2)).subject == "alice"


def test_token_issued_in_the_future_is_refused(hs_keys: ApproverKeys) -> None:
    token = sign(SECRET, "HS256", iat=int((NOW + timedelta(minutes=2)).timestamp()))
    assert refused(hs_keys, token).reason == "issued_in_future"


@pytest.mark.parametrize("iss", ["https://evil.example.com", None])
def test_wrong_or_missing_issuer_is_refused(tmp_path: Path, iss: str | None) -> None:
    write_secret(tmp_path / "k", SECRET)
    keys = ApproverKeys.load(tmp_path / "k", issuer="https://idp.example.com")
    assert refused(keys, sign(SECRET, "HS256", iss=iss)).reason == "wrong_issuer"


@pytest.mark.parametrize("aud", ["other-app", ["other-app", "more"], None, 42])
def test_wrong_or_missing_audience_is_refused(tmp_path: Path, aud: Any) -> None:
    write_secret(tmp_path / "k", SECRET)
    keys = ApproverKeys.load(tmp_path / "k", audience="signoff")
    assert refused(keys, sign(SECRET, "HS256", aud=aud)).reason == "wrong_audience"


def test_audience_list_containing_ours_is_accepted(tmp_path: Path) -> None:
    write_secret(tmp_path / "k", SECRET)
    keys = ApproverKeys.load(tmp_path / "k", audience="signoff")
    assert keys.verify(sign(SECRET, "HS256", aud=["web", "signoff"]), now=NOW).subject == "alice"


def test_token_signed_with_another_secret_is_refused(hs_keys: ApproverKeys) -> None:
    assert refused(hs_keys, sign("another-secret-of-at-least-32-bytes!!", "HS256")).reason == "bad_signature"


def test_token_signed_with_another_rsa_key_is_refused(tmp_path: Path, rsa: PrivateKey) -> None:
    keys = ApproverKeys.load(write_pem(tmp_path / "k.pem", rsa))
    assert refused(keys, sign(rsa_key(), "RS256")).reason == "bad_signature"


def test_tampered_payload_is_refused(hs_keys: ApproverKeys) -> None:
    header, _, signature = sign(SECRET, "HS256").split(".")
    forged = b64(json.dumps(claims(sub="root", groups=["admins"])).encode())
    assert refused(hs_keys, f"{header}.{forged}.{signature}").reason == "bad_signature"


@pytest.mark.parametrize("alg", ["none", "None", "NONE"])
def test_unsigned_token_is_never_accepted(hs_keys: ApproverKeys, alg: str) -> None:
    token = hand_made({"alg": alg, "typ": "JWT"}, json.dumps(claims()))
    error = refused(hs_keys, token)
    assert (error.reason, str(error)) == ("algorithm_not_allowed", "unsigned tokens (alg 'none') are never accepted")


def test_hs256_token_keyed_with_the_public_key_is_refused_by_an_rsa_verifier(tmp_path: Path, rsa: PrivateKey) -> None:
    """Algorithm confusion: the attacker HMACs with the (public) PEM the verifier holds."""
    path = write_pem(tmp_path / "k.pem", rsa)
    token = hand_made({"alg": "HS256", "typ": "JWT"}, json.dumps(claims(sub="root")), hmac_key=path.read_bytes())
    assert refused(ApproverKeys.load(path), token).reason == "algorithm_not_allowed"


def test_asymmetric_token_is_refused_by_a_secret_verifier(hs_keys: ApproverKeys, rsa: PrivateKey) -> None:
    assert refused(hs_keys, sign(rsa, "RS256")).reason == "algorithm_not_allowed"


def test_key_embedded_in_the_token_header_is_ignored(tmp_path: Path, rsa: PrivateKey) -> None:
    attacker = rsa_key()
    token = sign(attacker, "RS256", sub="root")
    header, payload, signature = token.split(".")
    header = b64(json.dumps({"alg": "RS256", "typ": "JWT", "jwk": jwk(attacker, "x")}).encode())
    keys = ApproverKeys.load(write_pem(tmp_path / "k.pem", rsa))
    assert refused(keys, f"{header}.{payload}.{signature}").reason == "bad_signature"


def test_ec_token_of_another_curve_is_refused(tmp_path: Path) -> None:
    keys = ApproverKeys.load(write_pem(tmp_path / "k.pem", ec_key(ec.SECP384R1())))
    assert refused(keys, sign(ec_key(), "ES256")).reason == "algorithm_not_allowed"


@pytest.mark.parametrize("groups", ["sre", {"sre": True}, ["sre", 7], ["sre", ""], ["a\nb"]])
def test_groups_claim_that_is_not_a_list_of_names_is_refused(hs_keys: ApproverKeys, groups: Any) -> None:
    assert refused(hs_keys, sign(SECRET, "HS256", groups=groups)).reason == "bad_claim"


def test_groups_claim_is_optional_and_deduplicated(hs_keys: ApproverKeys) -> None:
    assert hs_keys.verify(sign(SECRET, "HS256", groups=None), now=NOW).groups == ()
    assert hs_keys.verify(sign(SECRET, "HS256", groups=["sre", "sre", "ops"]), now=NOW).groups == ("sre", "ops")


@pytest.mark.parametrize("sub", [None, ""])
def test_token_without_subject_is_refused(hs_keys: ApproverKeys, sub: str | None) -> None:
    assert refused(hs_keys, sign(SECRET, "HS256", sub=sub)).reason == "missing_subject"


@pytest.mark.parametrize("sub", [42, ["alice"], "alice\napproved by bob", "a" * 257, "   "])
def test_subject_that_is_not_a_printable_name_is_refused(hs_keys: ApproverKeys, sub: Any) -> None:
    assert refused(hs_keys, sign(SECRET, "HS256", sub=sub)).reason == "bad_claim"


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ('{"sub": "alice", "exp": NaN}', "malformed"),
        ('{"sub": "alice", "exp": Infinity}', "malformed"),
        ('{"sub": "alice", "exp": 1e300}', "bad_claim"),
        ('{"sub": "alice", "exp": 1e400}', "bad_claim"),
        ('{"sub": "alice", "exp": "tomorrow"}', "bad_claim"),
        ('{"sub": "alice", "exp": true}', "bad_claim"),
        ('{"sub": "bob", "sub": "alice", "exp": 9999999999}', "malformed"),
        ('["not", "an", "object"]', "malformed"),
        ("not json", "malformed"),
    ],
)
def test_claims_no_honest_issuer_produces_are_refused(hs_keys: ApproverKeys, payload: str, reason: str) -> None:
    token = hand_made({"alg": "HS256", "typ": "JWT"}, payload, hmac_key=SECRET.encode())
    assert refused(hs_keys, token).reason == reason


@pytest.mark.parametrize("token", ["", "abc", "a.b.c", "x" * 20_000, None, b"bytes.are.not", "...."])
def test_malformed_tokens_are_refused(hs_keys: ApproverKeys, token: Any) -> None:
    assert refused(hs_keys, token).reason == "malformed"


def test_validly_signed_token_over_the_size_limit_is_refused(hs_keys: ApproverKeys) -> None:
    error = refused(hs_keys, sign(SECRET, "HS256", padding="x" * 20_000))
    assert error.reason == "malformed" and "longer than" in str(error)


def test_critical_header_extensions_are_refused(hs_keys: ApproverKeys) -> None:
    token = hand_made({"alg": "HS256", "crit": ["exp"], "exp": 1}, json.dumps(claims()), hmac_key=SECRET.encode())
    assert refused(hs_keys, token).reason == "malformed"


def test_surrounding_whitespace_is_ignored(hs_keys: ApproverKeys) -> None:
    assert hs_keys.verify(f"  {sign(SECRET, 'HS256')}\n", now=NOW).subject == "alice"


def test_refusal_never_repeats_the_token_and_survives_pickling(hs_keys: ApproverKeys) -> None:
    token = sign(SECRET, "HS256", exp=int(NOW.timestamp()) - 3600)
    error = refused(hs_keys, token)
    assert token not in str(error) and token.split(".")[2] not in str(error)
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.reason, str(copy)) == ("expired", str(error))


def test_naive_now_is_a_usage_error(hs_keys: ApproverKeys) -> None:
    with pytest.raises(UsageError, match="timezone-aware"):
        hs_keys.verify(sign(SECRET, "HS256"), now=NOW.replace(tzinfo=None))


def test_identity_round_trips_through_json_and_is_frozen() -> None:
    identity = Identity(subject="alice", groups=("sre",), expires_at=NOW, issuer="team")
    assert Identity.model_validate_json(identity.model_dump_json()) == identity
    with pytest.raises(ValidationError):
        cast(Any, identity).subject = "mallory"  # frozen: mypy refuses the assignment the test makes


def test_identity_matches_subjects_and_groups_but_a_subject_is_no_group() -> None:
    alice = Identity(subject="alice", groups=("sre",))
    assert alice.matches("alice") and alice.matches("group:sre")
    assert not alice.matches("group:alice") and not alice.matches("sre")
    assert not Identity(subject="group:sre").matches("group:sre")


def test_issue_token_refuses_bad_names_and_lifetimes(tmp_path: Path) -> None:
    write_secret(tmp_path / "k", SECRET)
    for subject, groups, ttl in [
        ("", (), timedelta(hours=1)),
        ("alice", ("",), timedelta(hours=1)),
        ("alice", (), timedelta(0)),
        ("a\tb", (), timedelta(hours=1)),
    ]:
        with pytest.raises(UsageError):
            issue_token(tmp_path / "k", subject, groups, ttl)


def test_identity_module_does_not_import_temporalio() -> None:
    code = "import sys, signoff.approval.identity; print('temporalio' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
