"""Payload encryption: AES-256-GCM with key ids and rotation (`SIGNOFF_CODEC_KEYS`).

`SIGNOFF_CODEC_KEYS` names a key file the worker and the CLI (and `signoff codec-server`)
read at start, one key a line, oldest first, `#` for comments::

    # kid:base64 of 32 random bytes; make one with
    # python -c "import base64, os; print('2026-06:' + base64.b64encode(os.urandom(32)).decode())"
    2026-01:3q2+7w0y...=
    2026-06:Zm9vYmFy...=

The last key encrypts every new payload; every key listed decrypts. To rotate, append a
new key and restart the workers and clients; drop an old key only once no history you
keep (the namespace's retention, plus your longest run) holds payloads it encrypted.

An encrypted payload has the metadata `encoding: binary/encrypted` and
`encryption-key-id: <kid>`, and its data is a 12-byte random nonce followed by the
AES-GCM ciphertext and tag of the original `Payload` message: the layout of Temporal's
encryption samples, so their codec servers can read it with the same key. Payloads that
are not encrypted (plain JSON sent by the `temporal` CLI or the Web UI without a codec)
pass through unchanged, so any Temporal client can still drive a run.

The SDK applies the codec before external storage (`runtime/storage.py`), so the payload
store keeps ciphertext too; the references history keeps for them stay plaintext.
"""

from __future__ import annotations

import base64
import binascii
import logging
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from google.protobuf.message import DecodeError
from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec

from signoff.config.environment import CODEC_KEYS_ENV, Environment
from signoff.config.smallfile import ExposedSecret, read_small_file
from signoff.errors import ConfigError

ENCODING = b"binary/encrypted"
KEY_ID = "encryption-key-id"
_KEY_BYTES = 32
_NONCE_BYTES = 12
_MAX_KEY_FILE_BYTES = 64 * 1024
_KID = re.compile(r"[A-Za-z0-9._-]{1,64}")
_LINE = "kid:base64key (a key id of letters, digits, '.', '_' or '-', then 32 bytes in base64)"
log = logging.getLogger("signoff.codec")

__all__ = ["ENCODING", "KEY_ID", "CodecKeys", "EncryptionCodec", "PayloadDecryptError"]


class PayloadDecryptError(ConfigError):
    """A payload is encrypted with a key this process does not hold, or was altered."""


@dataclass(frozen=True)
class CodecKeys:
    """The keys of a key file, oldest first; the last one encrypts. Validated when built.

    Attributes:
        keys: (key id, 32-byte key) pairs, never shown in `repr`.
        source: where they were read from, for messages.
    """

    keys: tuple[tuple[str, bytes], ...] = field(repr=False)
    source: str = "the codec keys"

    def __post_init__(self) -> None:
        if not self.keys:
            raise ConfigError(f"{self.source} holds no key; each line is {_LINE}")
        ids = [kid for kid, _ in self.keys]
        repeated = sorted({kid for kid in ids if ids.count(kid) > 1})
        if repeated:
            raise ConfigError(f"{self.source} lists the key id {repeated[0]!r} twice: each key needs its own id")

    @classmethod
    def from_env(cls, env: Environment) -> CodecKeys | None:
        """The keys of the file `SIGNOFF_CODEC_KEYS` names, or None when it is unset."""
        path = env.read(CODEC_KEYS_ENV)
        return cls.read(path) if path else None

    @classmethod
    def read(cls, path: Path) -> CodecKeys:
        """Read a key file (non-blocking, a regular file of at most 64 KiB).

        Raises:
            ConfigError: naming the file and the line that cannot work.
        """
        where = f"{CODEC_KEYS_ENV} file {path}"
        try:
            data = read_small_file(path, _MAX_KEY_FILE_BYTES)
        except ExposedSecret as exc:
            raise ConfigError(f"{CODEC_KEYS_ENV}: {exc}") from None
        except OSError as exc:
            raise ConfigError(f"cannot read the {where}: {exc.strerror or exc}") from None
        except ValueError as exc:
            raise ConfigError(f"the {where} is {exc}") from None
        return cls.parse(data.decode("utf-8", "replace"), where)

    @classmethod
    def parse(cls, text: str, source: str = "the codec keys") -> CodecKeys:
        """Keys from the text of a key file; ConfigError names the line that is wrong."""
        keys = []
        for number, line in enumerate(text.splitlines(), 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            kid, sep, encoded = line.partition(":")
            if not sep or not _KID.fullmatch(kid.strip()):
                raise ConfigError(f"{source}, line {number}: expected {_LINE}")
            try:
                key = base64.b64decode(encoded.strip(), validate=True)
            except binascii.Error:
                raise ConfigError(f"{source}, line {number} (key {kid.strip()!r}): the key is not base64") from None
            if len(key) != _KEY_BYTES:
                raise ConfigError(
                    f"{source}, line {number} (key {kid.strip()!r}): AES-256 needs {_KEY_BYTES} "
                    f"bytes, this key has {len(key)}"
                )
            keys.append((kid.strip(), key))
        return cls(tuple(keys), source)

    @property
    def current(self) -> str:
        """The id of the key that encrypts."""
        return self.keys[-1][0]

    def describe(self) -> str:
        """`payload encryption: AES-256-GCM with key 2026-06 (2 keys)`, for start-up logs."""
        return f"payload encryption: AES-256-GCM with key {self.current} ({len(self.keys)} key(s))"


class EncryptionCodec(PayloadCodec):
    """AES-256-GCM over each whole payload (metadata included).

    Args:
        keys: the key file's keys; the last encrypts.
        strict: a payload that cannot be decrypted (unknown key id, altered bytes) raises
            PayloadDecryptError. A worker and the codec server are not strict: they leave
            such a payload as it is, so a workflow sees an input it cannot decode and fails
            the run (or ignores the signal) clearly, instead of retrying a workflow task
            forever on bytes a stranger sent; the Web UI shows it still encrypted.
    """

    def __init__(self, keys: CodecKeys, *, strict: bool = True) -> None:
        self._keys = dict(keys.keys)
        self._current = keys.current
        self._cipher = {kid: AESGCM(key) for kid, key in keys.keys}
        self._strict = strict

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.encrypt(p) for p in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.decrypt(p) for p in payloads]

    def encrypt(self, payload: Payload) -> Payload:
        """The payload, encrypted with the current key (one already encrypted is left alone)."""
        if payload.metadata.get("encoding") == ENCODING:
            return payload
        nonce = os.urandom(_NONCE_BYTES)
        sealed = self._cipher[self._current].encrypt(nonce, payload.SerializeToString(), None)
        return Payload(metadata={"encoding": ENCODING, KEY_ID: self._current.encode()}, data=nonce + sealed)

    def decrypt(self, payload: Payload) -> Payload:
        """The original payload; a plaintext one as it is."""
        if payload.metadata.get("encoding") != ENCODING:
            return payload
        kid = payload.metadata.get(KEY_ID, b"").decode("utf-8", "replace")
        cipher = self._cipher.get(kid)
        if cipher is None:
            return self._undecryptable(
                payload,
                f"a payload is encrypted with the key {kid!r}, which {CODEC_KEYS_ENV} does not hold "
                f"(it holds {', '.join(sorted(self._keys))}): give this process the keys the workers have",
            )
        try:
            return Payload.FromString(cipher.decrypt(payload.data[:_NONCE_BYTES], payload.data[_NONCE_BYTES:], None))
        except (InvalidTag, DecodeError, ValueError):
            return self._undecryptable(
                payload,
                f"a payload encrypted with the key {kid!r} does not decrypt: "
                "it was altered, or encrypted with another key of that id",
            )

    def _undecryptable(self, payload: Payload, message: str) -> Payload:
        if self._strict:
            raise PayloadDecryptError(message)
        log.warning("signoff: %s; it is left encrypted", message)
        return payload
