"""What the model and tool activities tell operators: token counts, and their span's attributes.

Attributes name the agent, the tool, the outcome and token counts: never arguments, tool
output, prompts or secrets, so a trace backend learns what ran and how it ended, not what
it said. Spans exist when the worker's client has Temporal's tracing interceptor
(`SIGNOFF_OTEL=1`); without OpenTelemetry installed these are no-ops.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from temporalio import activity

from signoff.contract import METRIC_TOKENS
from signoff.messages import ChatResponse
from signoff.metrics import DESCRIPTIONS, tool_outcome

try:
    from opentelemetry import trace
except ImportError:  # the `otel` extra is not installed: no spans to annotate
    trace = None  # type: ignore[assignment]


def model_turn_done(agent: str, response: ChatResponse) -> None:
    """Count the turn's tokens; the span says the finish reason and the tools asked for."""
    usage = response.usage
    counter = activity.metric_meter().create_counter(METRIC_TOKENS, DESCRIPTIONS[METRIC_TOKENS])
    for kind, tokens in (("prompt", usage.prompt_tokens), ("completion", usage.completion_tokens)):
        if tokens > 0:
            counter.add(tokens, {"kind": kind, "agent": agent})
    calls = response.message.tool_calls or []
    _annotate(
        {
            "signoff.agent": agent,
            "signoff.outcome": response.finish_reason.value,
            "signoff.tools_requested": sorted({c.name for c in calls}),
            "signoff.tokens.prompt": usage.prompt_tokens,
            "signoff.tokens.completion": usage.completion_tokens,
        }
    )


def tool_call_done(agent: str, tool: str, content: str) -> None:
    """The span says which tool ran and how it ended (`ok`, `error`, `rejected`)."""
    _annotate({"signoff.agent": agent, "signoff.tool": tool, "signoff.outcome": tool_outcome(content)})


def _annotate(attributes: Mapping[str, Any]) -> None:
    if trace is None:
        return
    span = trace.get_current_span()
    if span.is_recording():
        span.set_attributes(attributes)
