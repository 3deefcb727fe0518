"""What signoff's own metrics say, and how a run's events map onto them (no Temporal, no I/O).

The names are the contract's (`signoff.contract.METRIC_*`). The workflow counts decisions
and tool calls from the loop's events (`workflows/metrics.py`, replay-safe); the chat
activity counts tokens; the worker polls the pending gauge from visibility
(`runtime/telemetry.py`).

| metric | kind | labels (besides the SDK's `namespace`, `task_queue`, `service_name`) |
| --- | --- | --- |
| `signoff_pending_approvals` | gauge | — (runs of the task queue waiting for a decision) |
| `signoff_approval_wait_seconds` | histogram | `outcome`, `tool` |
| `signoff_decisions_total` | counter | `outcome`: approved, denied, timed_out, granted, responded; `tool` |
| `signoff_tool_calls_total` | counter | `tool`, `outcome`: ok, error, rejected, unknown |
| `signoff_model_tokens_total` | counter | `kind`: prompt, completion; `agent` |
| `signoff_decision_seconds` | histogram | `approver` (a verified subject or `auto:<set>`, else `unverified`), `tool` |
| `signoff_auto_verdicts_total` | counter | `verdict`: approve, deny, escalate (auto mode's evaluator) |

A `tool` label is a tool's name only if it is a tool of the run's snapshot, and at most
`MAX_LABEL_CHARS` long; any other name the model makes up is `unknown` (`tool_label`).
The endpoint is unauthenticated and every label value is a series: a made-up name
(`exfil_<secret>`) must neither be published nor grow the series without end.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Literal

from signoff.approval.requests import ApprovalRecord
from signoff.contract import (
    METRIC_AUTO_VERDICTS,
    METRIC_DECISION_SECONDS,
    METRIC_DECISIONS,
    METRIC_PENDING,
    METRIC_TOKENS,
    METRIC_TOOL_CALLS,
    METRIC_WAIT,
)

DecisionOutcome = Literal["approved", "denied", "timed_out", "granted", "responded"]
ToolOutcome = Literal["ok", "error", "rejected", "unknown"]

DESCRIPTIONS = {
    METRIC_PENDING: "Runs of this task queue waiting for a decision (SignoffStatus=AwaitingApproval)",
    METRIC_WAIT: "Seconds from a call's approval request to its decision",
    METRIC_DECISIONS: "Decided tool calls, by outcome",
    METRIC_TOOL_CALLS: "Tool calls answered, by tool and outcome",
    METRIC_TOKENS: "Model tokens spent, by kind",
    METRIC_AUTO_VERDICTS: "Auto mode's verdicts on gated calls, by verdict",
    METRIC_DECISION_SECONDS: "Seconds each approver took to decide a call (a rubber-stamp signal)",
}
WAIT_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 28800, 86400, 259200, 604800)
"""Seconds: people take from seconds to days (the SDK's default buckets are milliseconds)."""
_UNKNOWN_PREFIX = "Error: outcome unknown"
UNKNOWN_TOOL = "unknown"
"""The `tool` label of a name that is not a tool of the run's snapshot."""
MAX_LABEL_CHARS = 64
"""The longest label value (a provider's function names are at most 64 characters)."""


def tool_label(name: str, tools: Collection[str]) -> str:
    """`name` as a `tool` label: itself if it is one of the run's `tools` and short enough, else `unknown`."""
    return name if name in tools and len(name) <= MAX_LABEL_CHARS else UNKNOWN_TOOL


def decision_outcome(record: ApprovalRecord) -> DecisionOutcome:
    """`timed_out` (whatever its policy made of it), `granted` (settled by a grant), else the answer."""
    if record.timed_out:
        return "timed_out"
    if record.grant_id is not None:
        return "granted"
    if record.outcome == "responded":
        return "responded"
    return "approved" if record.approved else "denied"


def wait_seconds(record: ApprovalRecord) -> float | None:
    """How long the call waited for its decision, when both times are known."""
    if record.requested_at is None or record.decided_at is None:
        return None
    return max((record.decided_at - record.requested_at).total_seconds(), 0.0)


def tool_outcome(content: str) -> ToolOutcome:
    """What the tool message the model reads says of the call (CONTRACT's `Rejected:`/`Error:`)."""
    if content.startswith("Rejected:"):
        return "rejected"
    if content.startswith(_UNKNOWN_PREFIX):
        return "unknown"
    return "error" if content.startswith("Error:") else "ok"


__all__ = [
    "DESCRIPTIONS",
    "MAX_LABEL_CHARS",
    "UNKNOWN_TOOL",
    "WAIT_BUCKETS",
    "DecisionOutcome",
    "ToolOutcome",
    "decider_label",
    "decision_outcome",
    "tool_label",
    "tool_outcome",
    "wait_seconds",
]


def decider_label(record: ApprovalRecord) -> str | None:
    """Who decided, as a label of `signoff_decision_seconds`: a verified subject or auto mode
    (names a key vouched for, or the evaluator's), else `unverified` (claimed names are anyone's
    to make up, and would make a label per name); None for a decision nobody made (a timeout, a grant)."""
    if record.timed_out or record.grant_id is not None:
        return None
    if record.approver and (record.verified or record.approver.startswith("auto:")):
        return record.approver
    return "unverified"
