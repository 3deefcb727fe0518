"""Loading SIGNOFF_APPROVER_KEYS: what each file format gives, and every file that is refused."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from signoff.approval.identity import ApproverKeys, issue_token
from signoff.config.environment import Environment
from signoff.errors import ConfigError
from signoff.runtime.settings import read_approver_keys
from tests.approver_keys import (
    NOW,
    ec_key,
    ed25519_key,
    jwk,
    public_pem,
    rsa_key,
    sign,
    write_jwks,
    write_pem,
    write_secret,
)


def refusal(path: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        ApproverKeys.load(path)
    return str(caught.value)


def test_secret_file_is_read_as_hs256_secret(tmp_path: Path) -> None:
    write_secret(tmp_path / "approver.key")
    keys = ApproverKeys.load(tmp_path / "approver.key")
    assert keys.kind == "secret"
    assert keys.keys.keys[0].algorithms == {"HS256"}


def test_short_secret_is_refused_saying_how_long_it_must_be(tmp_path: Path) -> None:
    write_secret(tmp_path / "k", "x" * 31)
    message = refusal(tmp_path / "k")
    assert "31 bytes" in message and "at least 32" in message and "token_urlsafe" in message


def test_file_that_is_not_a_key_is_refused_naming_file_and_formats(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("these are my notes\nabout the approver keys, not a key at all\n")
    message = refusal(path)
    assert str(path) in message
    assert "HS256 secret" in message and "PEM" in message and "JWKS" in message


@pytest.mark.parametrize("content", ["", "   \n\n"])
def test_empty_file_is_refused(tmp_path: Path, content: str) -> None:
    (tmp_path / "k").write_text(content)
    assert "empty" in refusal(tmp_path / "k")


def test_missing_file_is_refused_naming_it(tmp_path: Path) -> None:
    assert str(tmp_path / "nope") in refusal(tmp_path / "nope")


def test_der_public_key_is_never_taken_for_a_secret(tmp_path: Path) -> None:
    der = (
        rsa_key().public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    (tmp_path / "k.der").write_bytes(der)
    assert "not text" in refusal(tmp_path / "k.der")


def test_openssh_public_key_is_never_taken_for_a_secret(tmp_path: Path) -> None:
    line = ed25519_key().public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    (tmp_path / "id.pub").write_bytes(line + b" alice@laptop\n")
    assert "ssh-keygen -e -m PKCS8" in refusal(tmp_path / "id.pub")


def test_jwks_url_instead_of_a_file_says_to_download_it(tmp_path: Path) -> None:
    (tmp_path / "k").write_text("https://login.example.com/.well-known/jwks.json\n")
    assert "download" in refusal(tmp_path / "k")


def test_pem_private_key_is_refused_asking_for_the_public_key(tmp_path: Path) -> None:
    pem = rsa_key().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    (tmp_path / "k.pem").write_bytes(pem)
    assert "-pubout" in refusal(tmp_path / "k.pem")


def test_rsa_key_under_2048_bits_is_refused(tmp_path: Path) -> None:
    assert "1024 bits is too weak" in refusal(write_pem(tmp_path / "k.pem", rsa_key(1024)))


def test_pem_with_several_keys_gives_each_its_own_algorithms(tmp_path: Path) -> None:
    keys = ApproverKeys.load(write_pem(tmp_path / "k.pem", rsa_key(), ec_key(ec.SECP384R1()), ed25519_key()))
    assert [k.label for k in keys.keys.keys] == ["RSA 2048", "EC P-384", "Ed25519"]
    assert [sorted(k.algorithms) for k in keys.keys.keys][1:] == [["ES384"], ["EdDSA"]]


def test_jwks_private_key_material_is_refused(tmp_path: Path) -> None:
    private = {**jwk(ec_key(), "a"), "d": "AAAA"}
    assert "private key material" in refusal(write_jwks(tmp_path / "jwks.json", private))


def test_jwks_symmetric_key_is_refused(tmp_path: Path) -> None:
    assert "'oct'" in refusal(write_jwks(tmp_path / "jwks.json", {"kty": "oct", "k": "c2VjcmV0", "kid": "s"}))


def test_jwks_skips_encryption_keys_and_says_so(tmp_path: Path) -> None:
    path = write_jwks(tmp_path / "jwks.json", jwk(rsa_key(), "sig1"), jwk(rsa_key(), "enc1", use="enc"))
    keys = ApproverKeys.load(path)
    assert [k.kid for k in keys.keys.keys] == ["sig1"]
    assert "skipped 1" in keys.describe() and "'enc1' is not for signatures" in keys.describe()


def test_jwks_key_whose_alg_does_not_fit_its_type_is_never_used(tmp_path: Path) -> None:
    path = write_jwks(tmp_path / "jwks.json", jwk(rsa_key(), "ok"), jwk(rsa_key(), "odd", alg="HS256"))
    assert [k.kid for k in ApproverKeys.load(path).keys.keys] == ["ok"]


def test_jwks_without_usable_keys_is_refused_saying_why(tmp_path: Path) -> None:
    message = refusal(write_jwks(tmp_path / "jwks.json", jwk(rsa_key(), "enc1", use="enc")))
    assert "no key signoff can verify with" in message and "enc1" in message


def test_json_that_is_not_a_jwks_is_refused(tmp_path: Path) -> None:
    (tmp_path / "k.json").write_text(json.dumps({"issuer": "https://idp.example.com"}))
    assert '"keys" list' in refusal(tmp_path / "k.json")


def test_from_env_is_none_when_no_key_file_is_set() -> None:
    assert read_approver_keys(Environment({})) is None


def test_from_env_reads_file_issuer_and_audience(tmp_path: Path) -> None:
    write_secret(tmp_path / "k")
    env = {
        "SIGNOFF_APPROVER_KEYS": str(tmp_path / "k"),
        "SIGNOFF_APPROVER_ISSUER": "signoff-team",
        "SIGNOFF_APPROVER_AUDIENCE": "signoff",
    }
    keys = read_approver_keys(Environment(env))
    assert keys is not None and (keys.issuer, keys.audience) == ("signoff-team", "signoff")


def test_from_env_refuses_issuer_without_key_file() -> None:
    with pytest.raises(ConfigError, match="SIGNOFF_APPROVER_KEYS is not"):
        read_approver_keys(Environment({"SIGNOFF_APPROVER_ISSUER": "x"}))


def test_describe_and_repr_never_contain_the_secret(tmp_path: Path) -> None:
    secret = write_secret(tmp_path / "k")
    keys = ApproverKeys.load(tmp_path / "k", issuer="team", audience="signoff")
    for text in (keys.describe(), repr(keys), repr(keys.keys)):
        assert secret not in text and secret[:12] not in text
    expected = f"approver tokens: HS256 shared secret from {tmp_path / 'k'}; issuer 'team'; audience 'signoff'"
    assert keys.describe() == expected


def test_describe_lists_public_keys_and_unchecked_claims(tmp_path: Path) -> None:
    keys = ApproverKeys.load(write_jwks(tmp_path / "jwks.json", jwk(rsa_key(), "r1"), jwk(ec_key(), "e1")))
    assert keys.describe() == (
        f"approver tokens: 2 public keys (RSA 2048 kid=r1, EC P-256 kid=e1) from JWKS {tmp_path / 'jwks.json'}; "
        "issuer not checked; audience not checked"
    )


def test_issue_token_refuses_public_key_files(tmp_path: Path) -> None:
    (tmp_path / "k.pem").write_bytes(public_pem(rsa_key()))
    with pytest.raises(ConfigError, match="identity provider"):
        issue_token(tmp_path / "k.pem", "alice")


def test_a_single_jwk_is_read_as_a_one_key_jwks(tmp_path: Path) -> None:
    key = ec_key()
    (tmp_path / "k.json").write_text(json.dumps(jwk(key, "solo")))
    keys = ApproverKeys.load(tmp_path / "k.json")
    assert keys.verify(sign(key, "ES256", kid="solo"), now=NOW + timedelta(seconds=1)).subject == "alice"


def test_certificate_is_read_for_its_public_key(tmp_path: Path) -> None:
    key = ec_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "signoff approvers")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(NOW - timedelta(days=1))
        .not_valid_after(NOW + timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    (tmp_path / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    keys = ApproverKeys.load(tmp_path / "cert.pem")
    assert keys.verify(sign(key, "ES256"), now=NOW).subject == "alice"
