"""Canonical JSON and the SHA-256 digests that bind decisions and audit records to content.

`canonical_json` is the one serialisation every digest uses (CONTRACT v2): keys sorted,
separators `,` and `:`, UTF-8, no extra whitespace, so any program can recompute a
digest with its own JSON library.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> str:
    """`value` as canonical JSON text (keys sorted, no whitespace, non-ASCII kept)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def sha256_hex(text: str) -> str:
    """Lowercase hex SHA-256 of `text` encoded as UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def arguments_digest(arguments: Any) -> str:
    """The digest of a call's arguments as a person reviewed them (`arguments_digest`)."""
    return sha256_hex(canonical_json(arguments))


def call_digest(name: str, arguments: Any) -> str:
    """The digest of a call as it ran: tool name and arguments (audit records)."""
    return sha256_hex(canonical_json({"name": name, "arguments": arguments}))
