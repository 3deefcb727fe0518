"""How a notification proves where and when it came from: `X-Signoff-Signature`.

    X-Signoff-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<delivery id>.<body>">

The HMAC (keyed with `SIGNOFF_NOTIFY_SECRET_FILE`'s secret) covers the time of sending,
the delivery id (`X-Signoff-Delivery`, `<workflow_id>/<run_id>/<event number>`) and the
exact body bytes. A captured notice therefore cannot be replayed under another delivery
id, nor later than the receiver's tolerance: a receiver checks the signature, refuses a
`t` outside its window (`TOLERANCE_SECONDS` either side), and drops a delivery id it has
already seen in that window (a retry carries the same id, with a new `t`). `verify` does
all of that but the bookkeeping of seen ids.

The signature over the body alone (`sha256=<hex>`, CONTRACT v2) is not sent any more: it
let anyone who saw one notice replay it for ever.
"""

from __future__ import annotations

import hashlib
import hmac

SIGNATURE_HEADER = "X-Signoff-Signature"
VERSION = "v1"
TOLERANCE_SECONDS = 300


def signature(secret: bytes, timestamp: int, delivery: str, body: bytes) -> str:
    """The header's value for a notice sent at `timestamp` (unix seconds) as `delivery`."""
    return f"t={timestamp},{VERSION}={_mac(secret, timestamp, delivery, body)}"


def verify(
    secret: bytes, header: str, delivery: str, body: bytes, now: float, tolerance: float = TOLERANCE_SECONDS
) -> bool:
    """Whether `header` signs this delivery id and body, sent within `tolerance` seconds of `now`."""
    fields = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    try:
        timestamp = int(fields.get("t", ""))
    except ValueError:
        return False
    expected = _mac(secret, timestamp, delivery, body)
    return abs(now - timestamp) <= tolerance and hmac.compare_digest(fields.get(VERSION, ""), expected)


def _mac(secret: bytes, timestamp: int, delivery: str, body: bytes) -> str:
    return hmac.new(secret, f"{timestamp}.{delivery}.".encode() + body, hashlib.sha256).hexdigest()
