"""The worker's Prometheus endpoint (`SIGNOFF_METRICS_ADDRESS`): the SDK's metrics and signoff's.

Runs that are approved, denied, timed out and left waiting on the session's dev server, with
a worker that caches no workflow (every task replays the run from its start), then a
replay of their histories with the same runtime: each decision is counted once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from temporalio.client import Client, WorkflowHandle
from temporalio.worker import Replayer

from signoff.config.environment import Environment
from signoff.contract import METRIC_DECISIONS, METRIC_PENDING, METRIC_TOKENS, METRIC_TOOL_CALLS, METRIC_WAIT, RunOptions
from signoff.errors import ConfigError
from signoff.messages import Usage
from signoff.metrics import MAX_LABEL_CHARS, tool_label
from signoff.runtime.connection import ConnectionSettings, connect
from signoff.runtime.telemetry import PendingGauge, TelemetrySettings
from signoff.runtime.worker import sandbox_runner
from signoff.workflows.agent_run import AgentRun
from tests.helpers import Reply, ScriptedModelServer, ScriptedRequest, agents_for, call, running_worker, start_run
from tests.helpers import wait_pending as pending_of
from tests.processes import free_port
from tests.waiting import assert_eventually

DASHBOARD = Path(__file__).resolve().parent.parent / "grafana" / "signoff-dashboard.json"
USAGE = Usage(prompt_tokens=10, completion_tokens=5, total_tokens=15)
SAMPLE = re.compile(r"^(?P<name>[a-z_]+)(?:\{(?P<labels>[^}]*)\})? (?P<value>\S+)$")


def echo_then_stop(request: ScriptedRequest) -> Reply:
    if request.round == 1:
        return Reply.tool_calls([call("run_command", "call_1", command="echo hi")], usage=USAGE)
    return Reply.text("done", usage=USAGE)


def dashboard_metrics() -> set[str]:
    """Every metric the Grafana dashboard's queries name."""
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    return {name for e in exprs for name in re.findall(r"\b((?:signoff|temporal)_[a-z_]+)\{", e)}


def test_the_dashboard_graphs_every_signoff_metric() -> None:
    names = dashboard_metrics()
    assert {METRIC_PENDING, METRIC_DECISIONS, METRIC_TOOL_CALLS, METRIC_TOKENS, METRIC_WAIT + "_bucket"} <= names


def scrape(text: str, name: str, **labels: str) -> float:
    """The sum of `name`'s samples whose labels include `labels`."""
    total, seen = 0.0, False
    for line in text.splitlines():
        match = SAMPLE.match(line)
        if not match or match["name"] != name:
            continue
        have = dict(re.findall(r'(\w+)="([^"]*)"', match["labels"] or ""))
        if all(have.get(k) == v for k, v in labels.items()):
            total, seen = total + float(match["value"]), True
    assert seen, f"no {name} with {labels} in:\n{text}"
    return total


async def test_metrics_count_each_decision_once_and_the_gauge_counts_waiting_runs(
    client: Client, tmp_path: Path, task_queue: str
) -> None:
    address = f"127.0.0.1:{free_port()}"
    environ = {"TEMPORAL_ADDRESS": client.service_client.config.target_host, "SIGNOFF_METRICS_ADDRESS": address}
    settings = ConnectionSettings.load(Environment(environ))
    runtime = settings.telemetry.runtime()
    assert runtime is not None
    metered = await connect(settings, runtime=runtime, worker=True)
    url = f"http://{address}/metrics"
    with ScriptedModelServer(echo_then_stop) as model:
        async with running_worker(metered, task_queue, model, agents_for(tmp_path), max_cached_workflows=0):
            approved, denied = await start_run(client, task_queue), await start_run(client, task_queue)
            timed_out = await start_run(client, task_queue, options=RunOptions(approval_timeout_seconds=1))
            waiting = await start_run(client, task_queue)
            for handle in (approved, denied, waiting):
                await pending_of(handle)
            await approved.execute_update("submit_tool_approval", {"call_id": "call_1", "approved": True})
            await denied.execute_update("submit_tool_approval", {"call_id": "call_1", "approved": False})
            finished: list[WorkflowHandle] = [approved, denied, timed_out]
            for handle in finished:
                await handle.result()
            gauge = PendingGauge(metered, runtime.metric_meter, task_queue)

            async def one_waiting() -> None:
                assert await gauge.poll() == 1

            await assert_eventually(one_waiting, 20)
            text = (await httpx.AsyncClient().get(url)).text
        ours = {"task_queue": task_queue}
        for outcome in ("approved", "denied", "timed_out"):
            assert scrape(text, "signoff_decisions_total", outcome=outcome, tool="run_command", **ours) == 1
            assert scrape(text, "signoff_approval_wait_seconds_count", outcome=outcome, **ours) == 1
        assert scrape(text, "signoff_approval_wait_seconds_sum", outcome="timed_out", **ours) >= 1
        assert scrape(text, "signoff_decision_seconds_count", approver="unverified", tool="run_command", **ours) == 2
        assert scrape(text, "signoff_approval_wait_seconds_bucket", outcome="timed_out", le="1", **ours) == 0
        assert scrape(text, "signoff_tool_calls_total", tool="run_command", outcome="ok", **ours) == 1
        assert scrape(text, "signoff_tool_calls_total", tool="run_command", outcome="rejected", **ours) == 2
        turns = 3 * 2 + 1  # three runs of two model turns, one waiting after its first
        assert scrape(text, "signoff_model_tokens_total", kind="prompt", agent="default", **ours) == 10 * turns
        assert scrape(text, "signoff_model_tokens_total", kind="completion", **ours) == 5 * turns
        assert scrape(text, "signoff_pending_approvals", namespace="default", **ours) == 1
        assert scrape(text, "temporal_workflow_completed", task_queue=task_queue) >= 3  # the SDK's own
        for name in dashboard_metrics():  # the ready-made dashboard graphs what a worker exposes
            assert scrape(text, name, **ours) >= 0

        replayer = Replayer(
            workflows=[AgentRun],
            data_converter=metered.data_converter,
            workflow_runner=sandbox_runner(),
            runtime=runtime,
        )
        for handle in finished:
            await replayer.replay_workflow(await handle.fetch_history())
        again = (await httpx.AsyncClient().get(url)).text
        for outcome in ("approved", "denied", "timed_out"):
            assert scrape(again, "signoff_decisions_total", outcome=outcome, **ours) == 1  # replays count nothing
        await waiting.terminate()


def test_metric_settings_that_cannot_work_are_refused_at_start() -> None:
    with pytest.raises(ConfigError, match="SIGNOFF_METRICS_ADDRESS must be host:port"):
        TelemetrySettings.from_env(Environment({"SIGNOFF_METRICS_ADDRESS": "9464"}))
    with pytest.raises(ConfigError, match="SIGNOFF_OTEL must be 1 or 0"):
        TelemetrySettings.from_env(Environment({"SIGNOFF_OTEL": "maybe"}))
    taken = f"127.0.0.1:{free_port()}"
    first = TelemetrySettings(taken).runtime()
    assert first is not None
    with pytest.raises(ConfigError, match=f"SIGNOFF_METRICS_ADDRESS={taken}: cannot serve metrics there"):
        TelemetrySettings(taken).runtime()
    assert TelemetrySettings().runtime() is None


SECRET = "s3cr3t-4f9a"


def made_up_tools(count: int) -> Callable[[ScriptedRequest], Reply]:
    """A model that asks `count` tools no snapshot has (the first named after a secret), then stops."""

    def model(request: ScriptedRequest) -> Reply:
        if request.round == 1:
            names = [f"exfil_{SECRET}"] + [f"exfil_{SECRET}_{i}_{'x' * 80}" for i in range(1, count)]
            return Reply.tool_calls([call(name, f"call_{i}") for i, name in enumerate(names)], usage=USAGE)
        return Reply.text("done", usage=USAGE)

    return model


def series(text: str, name: str, task_queue: str) -> set[str]:
    """The label sets of `name`'s samples for `task_queue`."""
    return {
        m["labels"]
        for m in map(SAMPLE.match, text.splitlines())
        if m and m["name"] == name and task_queue in m["labels"]
    }


async def test_a_made_up_tool_name_is_counted_as_unknown_and_never_published(
    client: Client, tmp_path: Path, task_queue: str
) -> None:
    address = f"127.0.0.1:{free_port()}"
    runtime = TelemetrySettings(address).runtime()
    assert runtime is not None
    environ = {"TEMPORAL_ADDRESS": client.service_client.config.target_host}
    metered = await connect(ConnectionSettings.load(Environment(environ)), runtime=runtime, worker=True)
    url, ours = f"http://{address}/metrics", {"task_queue": task_queue}
    seen = []
    for count in (1, 40):
        with ScriptedModelServer(made_up_tools(count)) as model:
            async with running_worker(metered, task_queue, model, agents_for(tmp_path)):
                result = await (await start_run(client, task_queue)).result()
        assert result.messages[2].content.startswith("Error: unknown tool")  # the model is told, whole
        async with httpx.AsyncClient() as http:
            seen.append((await http.get(url)).text)
    one, many = seen
    assert SECRET not in one and SECRET not in many and "exfil" not in many
    assert scrape(one, "signoff_tool_calls_total", tool="unknown", outcome="error", **ours) == 1
    assert scrape(many, "signoff_tool_calls_total", tool="unknown", outcome="error", **ours) == 41
    assert series(many, "signoff_tool_calls_total", task_queue) == series(one, "signoff_tool_calls_total", task_queue)
    assert len(series(many, "signoff_tool_calls_total", task_queue)) == 1  # 41 names, one series


def test_a_tool_label_is_a_snapshot_tool_of_bounded_length_or_unknown() -> None:
    tools = {"run_command", "mcp__notes__read_note", "t" * 65}
    assert tool_label("run_command", tools) == "run_command"
    assert tool_label("mcp__notes__read_note", tools) == "mcp__notes__read_note"
    assert tool_label("exfil_secret", tools) == "unknown"
    assert tool_label("t" * 65, tools) == "unknown"  # bounded, even for a tool of the snapshot
    assert len(tool_label("t" * 64, {"t" * 64})) == MAX_LABEL_CHARS
