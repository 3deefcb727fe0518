"""Seeing a fleet the Temporal way: Prometheus metrics and OpenTelemetry traces.

- `SIGNOFF_METRICS_ADDRESS=host:port`: the worker's SDK runtime serves Prometheus metrics at
  `http://host:port/metrics`: the SDK's own (`temporal_*`: task latencies, slots, polls...)
  and signoff's (`signoff.metrics`). Only the worker binds it; the CLI never does.
- `SIGNOFF_OTEL=1`: workers and clients get Temporal's tracing interceptor; spans go to the
  OTLP/HTTP exporter, configured by the standard `OTEL_EXPORTER_OTLP_*` variables
  (`OTEL_EXPORTER_OTLP_ENDPOINT`, `..._TRACES_ENDPOINT`, `..._HEADERS`...), the service by
  `OTEL_SERVICE_NAME` (default `signoff`) and `OTEL_RESOURCE_ATTRIBUTES`;
  `OTEL_TRACES_EXPORTER=console` prints them instead. Needs `pip install 'signoff[otel]'`.

The pending gauge is the namespace's own figure, read from visibility every
`_PENDING_POLL_SECONDS` by every worker (runs of its task queue whose `SignoffStatus` is
`AwaitingApproval`): correct however runs move between workers, restart or replay. Every
worker of a task queue reports the same value, so aggregate it with `max`, not `sum`.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from temporalio.client import Client
from temporalio.common import MetricGauge, MetricMeter
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

from signoff.config.environment import (
    METRICS_ADDRESS_ENV,
    OTEL_ENV,
    OTEL_SERVICE_NAME_ENV,
    OTEL_TRACES_EXPORTER_ENV,
    Environment,
)
from signoff.contract import (
    METRIC_DECISION_SECONDS,
    METRIC_PENDING,
    METRIC_WAIT,
    SA_STATUS,
    STATUS_AWAITING,
    WORKFLOW_TYPE,
)
from signoff.errors import ConfigError
from signoff.metrics import DESCRIPTIONS, WAIT_BUCKETS

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from temporalio.contrib.opentelemetry import TracingInterceptor

_OTEL_EXTRA = "signoff[otel]"
_DEFAULT_SERVICE_NAME = "signoff"
_PENDING_POLL_SECONDS = 15.0
log = logging.getLogger("signoff.telemetry")

__all__ = ["PendingGauge", "TelemetrySettings", "flush_traces", "install_tracer_provider", "tracing_interceptor"]


@dataclass(frozen=True)
class TelemetrySettings:
    """Metrics and tracing; validated when built.

    Attributes:
        metrics_address: `host:port` of the Prometheus endpoint, or None for no metrics.
        otel: trace with OpenTelemetry (`SIGNOFF_OTEL`).
    """

    metrics_address: str | None = None
    otel: bool = False

    def __post_init__(self) -> None:
        if self.metrics_address is not None:
            host, _, port = self.metrics_address.rpartition(":")
            if not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise ConfigError(
                    f"{METRICS_ADDRESS_ENV} must be host:port (e.g. 127.0.0.1:9464), got {self.metrics_address!r}"
                )

    @classmethod
    def from_env(cls, env: Environment) -> TelemetrySettings:
        """`SIGNOFF_METRICS_ADDRESS` and `SIGNOFF_OTEL`."""
        otel = env.read(OTEL_ENV)
        return cls(env.read(METRICS_ADDRESS_ENV), otel)

    def runtime(self) -> Runtime | None:
        """A runtime serving Prometheus metrics on `metrics_address`, or None (the SDK's default).

        Raises:
            ConfigError: the address cannot be bound (in use, not this host's).
        """
        if self.metrics_address is None:
            return None
        prometheus = PrometheusConfig(
            bind_address=self.metrics_address,
            histogram_bucket_overrides={METRIC_WAIT: WAIT_BUCKETS, METRIC_DECISION_SECONDS: WAIT_BUCKETS},
        )
        try:
            return Runtime(telemetry=TelemetryConfig(metrics=prometheus))
        except Exception as exc:  # the core's error: address in use, cannot resolve
            raise ConfigError(
                f"{METRICS_ADDRESS_ENV}={self.metrics_address}: cannot serve metrics there ({exc})"
            ) from None

    def describe(self) -> list[str]:
        """Lines for the worker's start-up log."""
        lines = [f"metrics: http://{self.metrics_address}/metrics"] if self.metrics_address else []
        return lines + (["traces: OpenTelemetry (OTLP)"] if self.otel else [])


def tracing_interceptor(provider: TracerProvider | None = None) -> TracingInterceptor:
    """Temporal's tracing interceptor, for a client (and so its workers).

    Workflow spans are made even for runs a client without tracing started (the Web UI,
    the `temporal` CLI), so a run's model and tool activities share one trace; after a
    worker restart, a replayed run's later spans may start a new trace.

    Args:
        provider: where spans go; default the global tracer provider (`install_tracer_provider`).

    Raises:
        ConfigError: OpenTelemetry is not installed.
    """
    try:
        from opentelemetry import trace
        from temporalio.contrib.opentelemetry import TracingInterceptor
    except ImportError:
        raise ConfigError(f"{OTEL_ENV}=1 needs OpenTelemetry: pip install '{_OTEL_EXTRA}'") from None
    tracer = (provider or trace.get_tracer_provider()).get_tracer("signoff")
    return TracingInterceptor(tracer, always_create_workflow_spans=True)


_installed: list[Any] = []


def install_tracer_provider(env: Environment) -> None:
    """Make the global tracer provider export spans as the `OTEL_*` settings say (once per process).

    Raises:
        ConfigError: OpenTelemetry or its OTLP exporter is not installed.
    """
    if _installed:
        return
    try:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
    except ImportError:
        raise ConfigError(f"{OTEL_ENV}=1 needs OpenTelemetry and its exporter: pip install '{_OTEL_EXTRA}'") from None
    attributes = {} if env.read(OTEL_SERVICE_NAME_ENV) is not None else {"service.name": _DEFAULT_SERVICE_NAME}
    provider = TracerProvider(resource=Resource.create(attributes))
    kind = env.read(OTEL_TRACES_EXPORTER_ENV)
    exporter: SpanExporter = ConsoleSpanExporter() if kind == "console" else OTLPSpanExporter()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    _installed.append(provider)


def flush_traces() -> None:
    """Send the spans still buffered (at shutdown)."""
    for provider in _installed:
        provider.force_flush()


class PendingGauge:
    """`signoff_pending_approvals` for one task queue, from visibility.

    Args:
        client: asks the server to count.
        meter: the worker runtime's meter (`Runtime.metric_meter`).
        task_queue: the worker's task queue.
    """

    def __init__(self, client: Client, meter: MetricMeter, task_queue: str) -> None:
        self._client = client
        quoted = task_queue.replace("\\", "\\\\").replace('"', '\\"')
        self.query = (
            f'WorkflowType = "{WORKFLOW_TYPE}" AND ExecutionStatus = "Running" AND TaskQueue = "{quoted}" '
            f'AND {SA_STATUS} = "{STATUS_AWAITING}"'
        )
        labels = {"namespace": client.namespace, "task_queue": task_queue}
        gauge = meter.create_gauge(METRIC_PENDING, DESCRIPTIONS[METRIC_PENDING])
        self._gauge: MetricGauge = gauge.with_additional_attributes(labels)

    async def poll(self) -> int:
        """Count the waiting runs now and set the gauge; returns the count."""
        count = (await self._client.count_workflows(self.query)).count
        self._gauge.set(count)
        return count

    async def run(self, interval: float = _PENDING_POLL_SECONDS) -> None:
        """Poll until cancelled; a failed count is logged and tried again next time."""
        while True:
            try:
                await self.poll()
            except Exception as exc:  # the server is away for a moment: the gauge keeps its last value
                log.warning("signoff: could not count waiting runs for %s: %s", METRIC_PENDING, exc)
            await asyncio.sleep(interval)
