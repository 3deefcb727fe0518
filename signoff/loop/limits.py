"""The limits that keep every run inside the model's context and Temporal's payload limits.

Each limit has a defined outcome (CONTRACT v2 "Limits"), and none may wedge a run:

| limit | default (env) | outcome |
| --- | --- | --- |
| tool output kept | 65,536 chars (`SIGNOFF_MAX_TOOL_OUTPUT`) | cut, with a note of how much |
| tool calls in one model answer | 64 (`SIGNOFF_MAX_CALLS_PER_TURN`) | the rest answered `Error: ...` |
| tool activities at once per run | 32 | the rest wait their turn |
| transcript the model sees | 500,000 bytes (`SIGNOFF_TRANSCRIPT_BUDGET`) | oldest tool results elided |
| audit arguments kept | 262,144 bytes | oldest records keep digests only |

The worker reads them once (`signoff.config.environment`); a run snapshots them when it
starts, so a paused run keeps the limits it started with.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from signoff.text.wire import Compact

MAX_ROUNDS_LIMIT = 1000
TEMPORAL_BLOB_LIMIT = 2 * 1024 * 1024
"""Temporal's default per-payload limit (`limit.blobSize.error`)."""
DEFAULT_PAYLOAD_BUDGET = TEMPORAL_BLOB_LIMIT - 128 * 1024
"""The most a payload may hold when no external store takes large payloads."""


class Limits(Compact):
    """Validated limits; defaults are the contract's."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_tool_output: int = Field(65_536, ge=1_024, le=50_000_000)
    max_calls_per_turn: int = Field(64, ge=1, le=512)
    max_parallel_tools: int = Field(32, ge=1, le=512)
    transcript_budget: int = Field(500_000, ge=10_000, le=100_000_000)
    audit_budget: int = Field(262_144, ge=10_000, le=100_000_000)


def cap_text(text: str, limit: int, what: str = "tool output") -> str:
    """`text` cut to at most `limit` characters, keeping its start and end (where errors
    usually are), with a note in the middle saying how much was cut. The note counts
    towards the limit, so capping again changes nothing."""
    if len(text) <= limit:
        return text

    def note(cut: int) -> str:
        return f"\n[... {cut:,} characters cut: {what} over the limit of {limit:,} characters ...]\n"

    keep = max(limit - len(note(len(text))), 0)  # no cut is longer to write than the whole text's length
    head = keep // 2
    tail = keep - head
    return text[:head] + note(len(text) - keep) + text[len(text) - tail :]


def too_large(what: str, size: int, budget: int) -> str:
    """Why a payload of `size` bytes cannot be recorded, and what to do about it."""
    return (
        f"{what} is {size:,} bytes, over the payload limit of {budget:,} bytes (Temporal's 2 MB blob "
        "limit, less a margin); set SIGNOFF_PAYLOAD_STORE to keep large payloads outside the history"
    )


def size_over(payload: BaseModel, budget: int | None) -> int | None:
    """The payload's JSON size if it is over `budget`, else None.

    Exact serialisation costs as much as sending the payload, so it is done only when a
    cheap upper bound (six bytes a character, the worst JSON escape) says it might not fit.
    """
    if budget is None or rough_json_size(payload, budget) <= budget:
        return None
    size = len(payload.model_dump_json())
    return size if size > budget else None


def rough_json_size(value: object, budget: int) -> int:
    """An upper bound of `value`'s JSON size, counted until it passes `budget`."""
    if isinstance(value, str):
        return 6 * len(value) + 2
    if isinstance(value, BaseModel):
        value = value.__dict__
    if isinstance(value, dict):
        items: list[object] = [*value.keys(), *value.values()]
    elif isinstance(value, list | tuple | set | frozenset):
        items = list(value)
    else:
        return 32 + (len(str(value)) if not isinstance(value, int | float | bool) and value is not None else 0)
    total = 2
    for item in items:
        total += rough_json_size(item, budget) + 2
        if total > budget:
            break
    return total
