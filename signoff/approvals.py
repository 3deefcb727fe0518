"""Approval requests, the human's responses, and the audit record of each decision."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict


class ToolApprovalRequest(BaseModel):
    """A gated tool call waiting for a human decision."""

    call_id: str
    name: str
    arguments: Any = None
    description: str = ""
    round: int = 0
    requested_at: datetime | None = None
    expires_at: datetime | None = None


class ToolApprovalResponse(BaseModel):
    """A human's decision on one pending call (`call_id="*"` decides them all).

    Unknown fields are rejected: a typo such as `"aproved"` must not read as a denial.
    """

    model_config = ConfigDict(extra="forbid")

    call_id: str
    approved: bool
    reason: str | None = None
    approver: str | None = None
    arguments: dict[str, Any] | None = None

    @classmethod
    def approve(cls, call_id: str, **kwargs: Any) -> ToolApprovalResponse:
        return cls(call_id=call_id, approved=True, **kwargs)

    @classmethod
    def deny(cls, call_id: str, reason: str | None = None, **kwargs: Any) -> ToolApprovalResponse:
        return cls(call_id=call_id, approved=False, reason=reason, **kwargs)


class ApprovalRecord(BaseModel):
    """The audit trail entry of one decided call."""

    call_id: str
    name: str
    arguments: Any = None
    approved: bool
    reason: str | None = None
    approver: str | None = None
    edited_arguments: dict[str, Any] | None = None
    requested_at: datetime | None = None
    decided_at: datetime | None = None
    timed_out: bool = False


def parse_arguments(raw: str) -> Any:
    """The model's argument text as JSON, or the raw text when it is not valid JSON."""
    try:
        return json.loads(raw) if raw.strip() else {}
    except ValueError:
        return raw
