"""Reading the approver key file: an HS256 secret, PEM public keys, or a JWKS.

The format is told from the content. Anything that is not clearly one of the three is
refused, because reading a file as the wrong kind is how algorithm confusion starts: a
public key (which anyone may read) taken as an HMAC secret would let anyone sign tokens.
So a secret must be one printable line, PEM blocks must be public keys or certificates,
and each key only ever verifies the algorithms of its own type.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from cryptography.hazmat.primitives.serialization import load_pem_public_key
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm
from jwt.exceptions import InvalidKeyError

from signoff.approval.names import name_problem
from signoff.config.smallfile import ExposedSecret, check_private, read_small_file
from signoff.errors import ConfigError

MAX_KEY_FILE_BYTES = 1 << 20
MIN_SECRET_BYTES = 32
MIN_RSA_BITS = 2048
SECRET_ALGORITHMS = frozenset({"HS256"})
RSA_ALGORITHMS = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"})
EC_ALGORITHMS = {"secp256r1": "ES256", "secp384r1": "ES384", "secp521r1": "ES512"}
EC_LABELS = {"secp256r1": "P-256", "secp384r1": "P-384", "secp521r1": "P-521"}
EXPECTED = (
    "expected one of: an HS256 secret (one line of at least 32 bytes), PEM public keys "
    '(RSA, EC or Ed25519), or a JWKS JSON document ({"keys": [...]})'
)
KeyKind = Literal["secret", "pem", "jwks"]
_PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----\s*(.*?)\s*-----END \1-----", re.DOTALL)
_JWK_READERS: dict[str, Any] = {"RSA": RSAAlgorithm, "EC": ECAlgorithm, "OKP": OKPAlgorithm}
# Public values that fit on one printable line: never to be taken for a secret.
_NOT_SECRETS = {
    "ssh-": "an OpenSSH public key; convert it to PEM: ssh-keygen -e -m PKCS8 -f KEY.pub",
    "ecdsa-sha2-": "an OpenSSH public key; convert it to PEM: ssh-keygen -e -m PKCS8 -f KEY.pub",
    "http://": "a URL; download the JWKS it points to into a file and name that file",
    "https://": "a URL; download the JWKS it points to into a file and name that file",
}


@dataclass(frozen=True)
class VerificationKey:
    """One key, the only algorithms it may verify, and whom it may sign for.

    A JWKS key with `sub` is a person's (`signoff keys new`): it signs only as that subject,
    and only for groups among its `groups`. Keys without `sub` (an HS256 secret, PEM keys,
    an identity provider's JWKS) and keys marked `"signoff_service": true` (a service such
    as the inbox, signing for the people it authenticated) sign for any subject.
    """

    kid: str | None
    algorithms: frozenset[str]
    label: str
    material: Any = field(repr=False)  # bytes (a secret) or a cryptography public key
    subject: str | None = None
    groups: tuple[str, ...] = ()
    service: bool = False

    @property
    def personal(self) -> bool:
        """Whether this key signs as its own subject only."""
        return self.subject is not None and not self.service


@dataclass(frozen=True)
class KeySet:
    """What a key file holds: its kind, its usable keys, and why any others were skipped."""

    path: Path
    kind: KeyKind
    keys: tuple[VerificationKey, ...]
    skipped: tuple[str, ...] = ()


def read_key_file(path: Path) -> KeySet:
    """Read and classify an approver key file.

    Raises:
        ConfigError: the file cannot be read, or is none of the accepted formats; the
            message names the file and says what was expected.
    """
    text = _read_text(path).strip()
    if text.startswith("{") or "-----BEGIN " in text:
        _private(path, "decides whose signatures count", private=False)  # public keys: anyone may read them
        return _jwks(path, text) if text.startswith("{") else _pem(path, text)
    keys = _secret(path, text)
    _private(path, "holds an HS256 secret", private=True)
    return keys


def read_secret(path: Path) -> bytes:
    """The HS256 secret of a key file; ConfigError if the file holds public keys instead."""
    keys = read_key_file(path)
    if keys.kind != "secret":
        raise ConfigError(
            f"{path} holds {keys.kind.upper()} public keys: tokens for those are issued by your "
            "identity provider. Issuing tokens here needs an HS256 secret file."
        )
    secret: bytes = keys.keys[0].material
    return secret


def _private(path: Path, what: str, *, private: bool) -> None:
    try:
        check_private(path, private=private)
    except ExposedSecret as exc:
        raise ConfigError(f"the approver key file {what}, but {exc}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read the approver key file {path}: {exc.strerror or exc}") from None


def _read_text(path: Path) -> str:
    try:
        data = read_small_file(path, MAX_KEY_FILE_BYTES, private=None)  # checked once known secret or public
    except OSError as exc:
        raise ConfigError(f"cannot read the approver key file {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ConfigError(f"approver key file {path} is {exc}; {EXPECTED}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(
            f"approver key file {path} is not text (a DER key? convert it to PEM: "
            f"openssl pkey -pubin -inform DER -in KEY -out KEY.pem); {EXPECTED}"
        ) from None


def _secret(path: Path, text: str) -> KeySet:
    if not text:
        raise ConfigError(f"approver key file {path} is empty; {EXPECTED}")
    for prefix, what in _NOT_SECRETS.items():
        if text.startswith(prefix):
            raise ConfigError(f"approver key file {path} is {what}")
    if "\n" in text or not text.isprintable():
        raise ConfigError(f"approver key file {path} is not a key; {EXPECTED}")
    secret = text.encode()
    if len(secret) < MIN_SECRET_BYTES:
        raise ConfigError(
            f"the HS256 secret in {path} is {len(secret)} bytes; it must be at least {MIN_SECRET_BYTES}. "
            'Make one with: python -c "import secrets; print(secrets.token_urlsafe(48))"'
        )
    return KeySet(path, "secret", (VerificationKey(None, SECRET_ALGORITHMS, "HS256 secret", secret),))


def _pem(path: Path, text: str) -> KeySet:
    blocks = _PEM_BLOCK.findall(text)
    if not blocks:
        raise ConfigError(f"approver key file {path} has a PEM header but no complete PEM block; {EXPECTED}")
    keys = []
    for label, body in blocks:
        pem = f"-----BEGIN {label}-----\n{body}\n-----END {label}-----\n".encode()
        key = _pem_key(path, label, pem)
        algorithms, name = algorithms_for(key, f"{path}: {label}")
        keys.append(VerificationKey(None, algorithms, name, key))
    return KeySet(path, "pem", tuple(keys))


def _pem_key(path: Path, label: str, pem: bytes) -> Any:
    if "PRIVATE KEY" in label:
        raise ConfigError(
            f"{path} holds a private key; the worker needs only the public key "
            f"(openssl pkey -in KEY -pubout -out public.pem). Keep the private key where tokens are signed."
        )
    try:
        if label == "CERTIFICATE":
            return x509.load_pem_x509_certificate(pem).public_key()
        if label in ("PUBLIC KEY", "RSA PUBLIC KEY"):
            return load_pem_public_key(pem)
    except ValueError as exc:
        raise ConfigError(f"{path}: the PEM block {label!r} cannot be read: {exc}") from None
    raise ConfigError(f"{path}: a PEM block {label!r} is not a public key or certificate; {EXPECTED}")


def algorithms_for(key: Any, where: str) -> tuple[frozenset[str], str]:
    """The signing algorithms a public key may verify, and a label such as "RSA 2048".

    Raises:
        ConfigError: a key type signoff does not accept, or an RSA key under 2048 bits.
    """
    if isinstance(key, rsa.RSAPublicKey):
        if key.key_size < MIN_RSA_BITS:
            raise ConfigError(f"{where}: RSA key of {key.key_size} bits is too weak (at least {MIN_RSA_BITS})")
        return RSA_ALGORITHMS, f"RSA {key.key_size}"
    if isinstance(key, ec.EllipticCurvePublicKey) and key.curve.name in EC_ALGORITHMS:
        return frozenset({EC_ALGORITHMS[key.curve.name]}), f"EC {EC_LABELS[key.curve.name]}"
    if isinstance(key, ed25519.Ed25519PublicKey | ed448.Ed448PublicKey):
        return frozenset({"EdDSA"}), "Ed25519" if isinstance(key, ed25519.Ed25519PublicKey) else "Ed448"
    raise ConfigError(f"{where}: unsupported key type {type(key).__name__} (RSA, EC P-256/384/521 or Ed25519)")


def _jwks(path: Path, text: str) -> KeySet:
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"approver key file {path} looks like JSON but is not: {exc}; {EXPECTED}") from None
    if isinstance(document, dict) and "kty" in document:
        document = {"keys": [document]}  # a single JWK
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise ConfigError(f'approver key file {path} is JSON without a "keys" list; {EXPECTED}')
    keys: list[VerificationKey] = []
    skipped: list[str] = []
    for index, entry in enumerate(document["keys"]):
        outcome = _jwk(path, index, entry)
        (keys if isinstance(outcome, VerificationKey) else skipped).append(outcome)  # type: ignore[arg-type]
    if not keys:
        why = "; ".join(skipped) or "the list is empty"
        raise ConfigError(f"the JWKS in {path} has no key signoff can verify with: {why}")
    return KeySet(path, "jwks", tuple(keys), tuple(skipped))


def _jwk(path: Path, index: int, entry: Any) -> VerificationKey | str:
    """One JWK as a key, or a note saying why it was skipped (never used for signatures)."""
    if not isinstance(entry, dict):
        return f"key #{index} is not a JSON object"
    kid = entry.get("kid")
    name = f"key {kid!r}" if isinstance(kid, str) else f"key #{index}"
    if entry.get("kty") == "oct":
        raise ConfigError(
            f"the JWKS in {path} has a symmetric ('oct') {name}: put an HS256 secret in a file of its own"
        )
    if "d" in entry:
        raise ConfigError(
            f"the JWKS in {path} has private key material ({name} has 'd'); give the worker the public JWKS"
        )
    if kid is not None and not isinstance(kid, str):
        return f"{name} has a kid that is not a string"
    if entry.get("use", "sig") != "sig" or "verify" not in entry.get("key_ops", ["verify"]):
        return f"{name} is not for signatures"
    reader = _JWK_READERS.get(entry.get("kty"))  # type: ignore[arg-type]
    if reader is None:
        return f"{name} has unsupported kty {entry.get('kty')!r}"
    try:
        key = reader.from_jwk(entry)
        algorithms, label = algorithms_for(key, f"{path}: {name}")
    except (InvalidKeyError, ConfigError, ValueError, TypeError) as exc:
        return f"{name} cannot be used: {exc}"
    alg = entry.get("alg")
    if alg is not None:
        if alg not in algorithms:
            return f"{name} declares alg {alg!r}, which signoff does not accept for a {label} key"
        algorithms = frozenset({alg})
    subject, groups, service = _signer(path, name, entry)
    return VerificationKey(kid, algorithms, label, key, subject, groups, service)


def _signer(path: Path, name: str, entry: dict[str, Any]) -> tuple[str | None, tuple[str, ...], bool]:
    """Whom a JWK may sign for: its `sub` and `groups` (a person's key), `signoff_service`.

    Raises:
        ConfigError: a `sub` or group that cannot name anyone, groups without a subject,
            or a `signoff_service` that is not true or false: the key would otherwise be
            taken for another kind than meant.
    """
    subject, groups, service = entry.get("sub"), entry.get("groups", []), entry.get("signoff_service", False)
    where = f"the JWKS in {path}: {name}"
    if not isinstance(service, bool):
        raise ConfigError(f"{where}: signoff_service must be true or false")
    if subject is not None and (problem := name_problem("sub", subject)) is not None:
        raise ConfigError(f"{where}: {problem}")
    if not isinstance(groups, list) or any(name_problem("group", g) for g in groups):
        raise ConfigError(f"{where}: groups must be a list of group names")
    if groups and subject is None:
        raise ConfigError(f"{where}: has groups but no sub; a person's key names its subject")
    return subject, tuple(dict.fromkeys(groups)), service
