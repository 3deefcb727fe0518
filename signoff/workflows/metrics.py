"""A run's metrics, counted from the loop's events: decisions, their wait, tool calls.

The workflow calls `RunMetrics.observe` with each event it publishes and the tool names of
its snapshot; nothing else. A `tool` label is one of those names or `unknown`
(`signoff.metrics.tool_label`): the model's made-up names never become series. The
SDK's workflow meter records nothing while a workflow task replays, so a run that is
replayed (evicted from the cache, moved to another worker) counts each decision once.
The pending gauge is not counted here: a per-process gauge set by many runs overwrites
itself, and a count kept up and down is wrong after a restart or an eviction, so the
worker reads it from visibility instead (`runtime/telemetry.py`).
"""

from __future__ import annotations

from collections.abc import Collection

from temporalio import workflow
from temporalio.common import MetricCounter, MetricHistogramFloat

from signoff.contract import METRIC_DECISION_SECONDS, METRIC_DECISIONS, METRIC_TOOL_CALLS, METRIC_WAIT
from signoff.messages import AgentEvent, ApprovalDecisionEvent, ToolResultEvent
from signoff.metrics import DESCRIPTIONS, decider_label, decision_outcome, tool_label, tool_outcome, wait_seconds


class RunMetrics:
    """The run's instruments, made on first use (a run that never decides makes none)."""

    def __init__(self) -> None:
        self._instruments: tuple[MetricCounter, MetricHistogramFloat, MetricCounter] | None = None
        self._decision_seconds: MetricHistogramFloat | None = None

    def observe(self, event: AgentEvent, tools: Collection[str]) -> None:
        """Count what `event` says: a decision (and how long it waited), or a tool call answered.

        Args:
            event: one of the run's events.
            tools: the names of the run's snapshot's tools (none before it has one).
        """
        if isinstance(event, ApprovalDecisionEvent):
            decisions, wait, _ = self._made()
            record = event.record
            labels = {"outcome": decision_outcome(record), "tool": tool_label(record.name, tools)}
            decisions.add(1, labels)
            seconds = wait_seconds(record)
            if seconds is not None:
                wait.record(seconds, labels)
                self._decided_in(labels["tool"], decider_label(record), seconds)
        elif isinstance(event, ToolResultEvent):
            labels = {"tool": tool_label(event.name, tools), "outcome": tool_outcome(event.content)}
            self._made()[2].add(1, labels)

    def _decided_in(self, tool: str, approver: str | None, seconds: float) -> None:
        """How long a person (or auto mode) took: `signoff_decision_seconds{approver,tool}`."""
        if approver is None:
            return
        if self._decision_seconds is None:
            self._decision_seconds = workflow.metric_meter().create_histogram_float(
                METRIC_DECISION_SECONDS, DESCRIPTIONS[METRIC_DECISION_SECONDS], "s"
            )
        self._decision_seconds.record(seconds, {"approver": approver, "tool": tool})

    def _made(self) -> tuple[MetricCounter, MetricHistogramFloat, MetricCounter]:
        if self._instruments is None:
            meter = workflow.metric_meter()
            self._instruments = (
                meter.create_counter(METRIC_DECISIONS, DESCRIPTIONS[METRIC_DECISIONS]),
                meter.create_histogram_float(METRIC_WAIT, DESCRIPTIONS[METRIC_WAIT], "s"),
                meter.create_counter(METRIC_TOOL_CALLS, DESCRIPTIONS[METRIC_TOOL_CALLS]),
            )
        return self._instruments
