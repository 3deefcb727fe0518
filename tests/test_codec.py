"""Payload encryption (signoff/runtime/codec.py): keys, rotation, and what cannot be decrypted."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import pydantic_data_converter

from signoff.config.environment import Environment
from signoff.errors import ConfigError
from signoff.runtime.codec import ENCODING, KEY_ID, CodecKeys, EncryptionCodec, PayloadDecryptError


def key_line(kid: str) -> str:
    return f"{kid}:{base64.b64encode(os.urandom(32)).decode()}"


def write_keys(path: Path, *lines: str) -> Path:
    path.write_text("# signoff codec keys, oldest first\n" + "\n".join(lines) + "\n")
    path.chmod(0o600)
    return path


def plain(value: object) -> Payload:
    return pydantic_data_converter.payload_converter.to_payload(value)


OLD, NEW = key_line("2026-01"), key_line("2026-06")


async def test_a_payload_round_trips_encrypted_with_the_newest_key() -> None:
    codec = EncryptionCodec(CodecKeys.parse(f"{OLD}\n{NEW}"))
    original = plain({"command": "rm -rf /tmp/logs"})
    (sealed,) = await codec.encode([original])
    assert sealed.metadata["encoding"] == ENCODING and sealed.metadata[KEY_ID] == b"2026-06"
    assert b"rm -rf" not in sealed.SerializeToString()
    assert await codec.decode([sealed]) == [original]


async def test_payloads_of_an_older_key_still_decode_after_rotation() -> None:
    before = EncryptionCodec(CodecKeys.parse(OLD))
    (sealed,) = await before.encode([plain("written before the rotation")])
    after = EncryptionCodec(CodecKeys.parse(f"{OLD}\n{NEW}"))
    assert await after.decode([sealed]) == [plain("written before the rotation")]
    (fresh,) = await after.encode([plain("written after")])
    assert fresh.metadata[KEY_ID] == b"2026-06"


async def test_plaintext_payloads_pass_through_so_any_client_can_still_send_json() -> None:
    codec = EncryptionCodec(CodecKeys.parse(NEW))
    sent = plain({"call_id": "call_1", "approved": True})
    assert await codec.decode([sent]) == [sent]


async def test_each_encryption_uses_a_fresh_nonce() -> None:
    codec = EncryptionCodec(CodecKeys.parse(NEW))
    first, second = await codec.encode([plain("same"), plain("same")])
    assert first.data != second.data


async def test_an_unknown_key_id_is_named_by_a_strict_codec_and_left_alone_by_a_lenient_one() -> None:
    (sealed,) = await EncryptionCodec(CodecKeys.parse(OLD)).encode([plain("x")])
    with pytest.raises(PayloadDecryptError, match=r"key '2026-01'.*does not hold \(it holds 2026-06\)"):
        await EncryptionCodec(CodecKeys.parse(NEW)).decode([sealed])
    assert await EncryptionCodec(CodecKeys.parse(NEW), strict=False).decode([sealed]) == [sealed]


async def test_altered_ciphertext_does_not_decrypt() -> None:
    codec = EncryptionCodec(CodecKeys.parse(NEW))
    (sealed,) = await codec.encode([plain("approve me")])
    tampered = Payload(metadata=dict(sealed.metadata), data=sealed.data[:-1] + bytes([sealed.data[-1] ^ 1]))
    with pytest.raises(PayloadDecryptError, match="was altered"):
        await codec.decode([tampered])
    short = Payload(metadata=dict(sealed.metadata), data=b"\x00" * 5)
    assert await EncryptionCodec(CodecKeys.parse(NEW), strict=False).decode([short]) == [short]


def test_the_key_file_is_read_oldest_first(tmp_path: Path) -> None:
    keys = CodecKeys.read(write_keys(tmp_path / "keys", OLD, "", "  " + NEW))
    assert [kid for kid, _ in keys.keys] == ["2026-01", "2026-06"] and keys.current == "2026-06"
    assert "2026-06" in keys.describe() and NEW.split(":")[1] not in repr(keys)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", "holds no key"),
        ("# only a comment", "holds no key"),
        ("no-colon-here", "line 1: expected kid:base64key"),
        ("bad id!:" + NEW.split(":")[1], "line 1: expected kid:base64key"),
        ("k1:not base64!", "line 1 \\(key 'k1'\\): the key is not base64"),
        (f"k1:{base64.b64encode(b'short').decode()}", "AES-256 needs 32 bytes, this key has 5"),
        (f"{OLD}\n{OLD}", "lists the key id '2026-01' twice"),
    ],
)
def test_a_key_file_that_cannot_work_is_refused_naming_the_line(text: str, error: str) -> None:
    with pytest.raises(ConfigError, match=error):
        CodecKeys.parse(text)


def test_a_missing_key_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"cannot read the SIGNOFF_CODEC_KEYS file .*missing"):
        CodecKeys.from_env(Environment({"SIGNOFF_CODEC_KEYS": str(tmp_path / "missing")}))
    assert CodecKeys.from_env(Environment({})) is None
