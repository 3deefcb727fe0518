"""OpenTelemetry traces (`SIGNOFF_OTEL=1`): Temporal's tracing interceptor on client and worker.

In process, spans go to an in-memory exporter; a worker process with the standard `OTEL_*`
settings sends them over OTLP/HTTP to a receiver the test runs.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.client import Client

from signoff.chat.config import LLMConfig
from signoff.chat.openai import OpenAIChatClient
from signoff.contract import AgentRunInput, AgentRunResult
from signoff.runtime.telemetry import tracing_interceptor
from signoff.runtime.worker import build_worker
from tests.helpers import Reply, ScriptedModelServer, ScriptedRequest, agents_for, call, wait_pending
from tests.processes import Processes, clean_env, free_port
from tests.waiting import wait_until

SECRET_ARGUMENT = f"classified-{uuid.uuid4().hex}"
API_KEY = f"sk-{uuid.uuid4().hex}"


def command_then_stop(request: ScriptedRequest) -> Reply:
    if request.round == 1:
        return Reply.tool_calls([call("run_command", "call_1", command=f"echo {SECRET_ARGUMENT}")])
    return Reply.text(f"it said {request.last.content}")


async def test_spans_name_the_tool_and_its_outcome_never_arguments_or_secrets(
    client: Client, tmp_path: Path, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SIGNOFF_LLM_API_KEY", API_KEY)  # what the worker's chat client sends
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    config = client.config()
    config["interceptors"] = [tracing_interceptor(provider)]
    traced = Client(**config)
    with ScriptedModelServer(command_then_stop) as model:
        llm = LLMConfig(base_url=model.base_url, model="scripted")
        worker = build_worker(traced, agents_for(tmp_path), task_queue, default_client=lambda: OpenAIChatClient(llm))
        async with worker:
            handle = await traced.start_workflow(
                "AgentRun",
                AgentRunInput(prompt="say the word"),
                id=f"run-{uuid.uuid4()}",
                task_queue=task_queue,
                result_type=AgentRunResult,
            )
            await wait_pending(handle)
            await handle.execute_update("submit_tool_approval", {"call_id": "call_1", "approved": True})
            assert SECRET_ARGUMENT in ((await handle.result()).text or "")
    spans = exporter.get_finished_spans()
    names = {span.name for span in spans}
    assert {
        "StartWorkflow:AgentRun",
        "RunWorkflow:AgentRun",
        "RunActivity:signoff.chat",
        "RunActivity:signoff.tool",
        "StartWorkflowUpdate:submit_tool_approval",
    } <= names
    assert len({span.context.trace_id for span in spans if span.name.startswith("Run")}) == 1  # one trace per run
    (tool,) = [s for s in spans if s.name == "RunActivity:signoff.tool"]
    assert tool.attributes is not None
    assert tool.attributes["signoff.tool"] == "run_command" and tool.attributes["signoff.outcome"] == "ok"
    assert tool.attributes["temporalWorkflowID"] == handle.id
    assert tool.attributes["signoff.agent"] == "default"
    turns = [s.attributes for s in spans if s.name == "RunActivity:signoff.chat"]
    assert [(a or {}).get("signoff.outcome") for a in turns] == ["tool_calls", "stop"]
    assert (turns[0] or {})["signoff.tools_requested"] == ("run_command",)
    assert {(a or {}).get("signoff.agent") for a in turns} == {"default"}
    for span in spans:
        exported = span.to_json()
        assert SECRET_ARGUMENT not in exported and API_KEY not in exported and "echo" not in exported, span.name


class _Receiver(BaseHTTPRequestHandler):
    requests: list[ExportTraceServiceRequest]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).requests.append(ExportTraceServiceRequest.FromString(body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()
        self.wfile.write(b"")

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[tuple[str, list[ExportTraceServiceRequest]]]:
    """An OTLP/HTTP trace receiver on a free port: its endpoint, and what it received."""
    requests: list[ExportTraceServiceRequest] = []
    server = HTTPServer(("127.0.0.1", 0), type("Receiver", (_Receiver,), {"requests": requests}))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", requests
    server.shutdown()
    server.server_close()


async def test_a_worker_with_signoff_otel_exports_spans_to_the_otlp_endpoint(
    client: Client,
    tmp_path: Path,
    task_queue: str,
    procs: Processes,
    collector: tuple[str, list[ExportTraceServiceRequest]],
) -> None:
    endpoint, received = collector
    with ScriptedModelServer(lambda request: Reply.text("nothing to do")) as model:
        env = clean_env(
            TEMPORAL_ADDRESS=client.service_client.config.target_host,
            SIGNOFF_TASK_QUEUE=task_queue,
            SIGNOFF_LLM_BASE_URL=model.base_url,
            SIGNOFF_LLM_MODEL="scripted",
            SIGNOFF_WORKSPACE=tmp_path,
            SIGNOFF_OTEL="1",
            OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
            OTEL_SERVICE_NAME="ops-agents",
            OTEL_BSP_SCHEDULE_DELAY="100",
            SIGNOFF_METRICS_ADDRESS=f"127.0.0.1:{free_port()}",
        )
        worker = procs.worker("worker", env)
        await worker.wait_for_output("signoff: worker on task queue")
        assert "traces: OpenTelemetry" in worker.stdout() and "metrics: http://127.0.0.1:" in worker.stdout()
        handle = await client.start_workflow(
            "AgentRun", AgentRunInput(prompt="hello"), id=f"run-{uuid.uuid4()}", task_queue=task_queue
        )
        await asyncio.wait_for(handle.result(), 30)

        def exported() -> set[str]:
            return {s.name for r in received for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans}

        await wait_until(lambda: "RunActivity:signoff.chat" in exported(), 20, lambda: f"spans: {exported()}")
    services = {
        a.value.string_value
        for r in received
        for rs in r.resource_spans
        for a in rs.resource.attributes
        if a.key == "service.name"
    }
    assert services == {"ops-agents"} and "RunWorkflow:AgentRun" in exported()
