"""How each effect of a run is executed: activity options, retries, and Web UI summaries.

Every activity has an explicit timeout. Model turns are retried by Temporal (timeouts,
cut streams, 408/409/429 honouring Retry-After, 5xx; about six minutes); other provider
errors fail the run with the provider's message. Idempotent tools are retried a little;
others run at most once, and a worker dying mid-call is reported as an unknown outcome.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from temporalio.common import RetryPolicy

from signoff.loop.agent_loop import AgentLoop
from signoff.messages import ToolCall

MODEL_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=60), maximum_attempts=10
)


def chat_options() -> dict[str, Any]:
    return {
        "start_to_close_timeout": timedelta(minutes=10),
        "heartbeat_timeout": timedelta(seconds=30),
        "retry_policy": MODEL_RETRY,
    }


def prepare_options() -> dict[str, Any]:
    return {"start_to_close_timeout": timedelta(seconds=60), "retry_policy": RetryPolicy(maximum_attempts=5)}


OUTCOME_UNKNOWN = (
    "Error: outcome unknown: the worker running this tool stopped before it reported. "
    "It was not run again; check its effects before retrying."
)
ACTIVITY_SUMMARY_CHARS = 120


def tool_options(idempotent: bool) -> dict[str, Any]:
    return {
        "start_to_close_timeout": timedelta(minutes=30),
        "heartbeat_timeout": timedelta(seconds=10),
        "retry_policy": RetryPolicy(maximum_attempts=3 if idempotent else 1),
    }


def tool_summary(call: ToolCall) -> str:
    """`run_command: ls -la` for the Web UI's timeline (one line, control characters shown escaped)."""
    try:
        arguments = json.loads(call.arguments)
    except ValueError:
        arguments = call.arguments
    if isinstance(arguments, dict) and len(arguments) == 1:
        (arguments,) = arguments.values()
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=True)
    text = text.encode("unicode_escape").decode("ascii")
    short = text if len(text) <= ACTIVITY_SUMMARY_CHARS else text[: ACTIVITY_SUMMARY_CHARS - 1] + "…"
    return f"{call.name}: {short}"


def timer_summary(loop: AgentLoop, wake: datetime | None) -> str | None:
    """`deadline for call_1` (or reminder, escalation) for the timer the wait starts."""
    if wake is None:
        return None
    for entry in loop.state.pending:
        request = entry.request
        if request is not None and wake in entry.timers():
            kind = "deadline" if wake == request.expires_at else "reminder or escalation"
            return f"{kind} for {entry.call.id}"
    return "approval timer"


def root_message(exc: BaseException) -> str:
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return getattr(exc, "message", None) or str(exc)
