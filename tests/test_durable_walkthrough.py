"""The durable section of docs/getting-started.md works as written without a provider (issue 16, finding 6).

A newcomer's steps, as real processes: the scripted model (`python -m signoff.testing`),
the worker pointed at it, `signoff run ... --wait` answered at its prompt. And a worker
with no model configured says so when it starts, naming the scripted model; one whose
model settings cannot work stops, naming the variable.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from temporalio.client import Client

from tests import docs
from tests.cli_harness import finish, spawn
from tests.processes import Processes, clean_env, free_port


async def test_the_durable_section_runs_as_written_with_the_scripted_model(
    client: Client, task_queue: str, procs: Processes, tmp_path: Path
) -> None:
    address = client.service_client.config.target_host
    port = free_port()  # the docs' 8400, free here
    model = procs.start("model", [sys.executable, "-m", "signoff.testing", "--port", str(port)], clean_env())
    await model.wait_for_output(f"http://127.0.0.1:{port}/v1")
    settings = {"SIGNOFF_LLM_BASE_URL": f"http://127.0.0.1:{port}/v1", "SIGNOFF_LLM_MODEL": "scripted"}
    worker = procs.worker(
        "worker", clean_env(TEMPORAL_ADDRESS=address, SIGNOFF_TASK_QUEUE=task_queue, **settings), cwd=tmp_path
    )
    await worker.wait_for_output("signoff: worker on task queue")
    env = clean_env(TEMPORAL_ADDRESS=address, SIGNOFF_TASK_QUEUE=task_queue, XDG_STATE_HOME=tmp_path / "state")
    done = await finish(await spawn(env, "run", "Delete the directory /tmp/logs", "--wait", cwd=tmp_path), "y\n", 90)
    assert done.code == 0, done.out + done.err
    assert '{"command": "ls -la /tmp/logs"}' in done.out and "The command ran" in done.out
    assert "no model configured" not in worker.stdout()


async def test_a_worker_without_a_model_says_so_and_how_to_serve_the_scripted_one(
    client: Client, task_queue: str, procs: Processes, tmp_path: Path
) -> None:
    env = clean_env(TEMPORAL_ADDRESS=client.service_client.config.target_host, SIGNOFF_TASK_QUEUE=task_queue)
    worker = procs.worker("worker", env, cwd=tmp_path)
    await worker.wait_for_output("signoff: worker on task queue")
    said = worker.stdout()
    assert "no model configured (SIGNOFF_LLM_BASE_URL is not set): runs of default will fail" in said
    assert "python -m signoff.testing --port 8400" in said and "SIGNOFF_LLM_MODEL=scripted" in said
    assert await worker.terminate() == 0


async def test_a_worker_whose_model_settings_cannot_work_stops_naming_the_variable(
    client: Client, task_queue: str, procs: Processes, tmp_path: Path
) -> None:
    env = clean_env(
        TEMPORAL_ADDRESS=client.service_client.config.target_host,
        SIGNOFF_TASK_QUEUE=task_queue,
        SIGNOFF_LLM_BASE_URL="http://127.0.0.1:9/v1",
    )  # no SIGNOFF_LLM_MODEL
    worker = procs.worker("worker", env, cwd=tmp_path)
    assert await worker.wait_exit(60) == 1
    assert "SIGNOFF_LLM_MODEL" in worker.stderr() and "Traceback" not in worker.stderr()


def test_the_docs_show_these_steps() -> None:
    durable = docs.section(docs.page("getting-started.md"), "## Durable:")
    for step in (
        "python -m signoff.testing --port 8400",
        "export SIGNOFF_LLM_BASE_URL=http://127.0.0.1:8400/v1",
        "SIGNOFF_LLM_MODEL=scripted",
        "signoff-worker",
        'signoff run "Delete the directory /tmp/logs"',
    ):
        assert step in durable, step
    assert re.search(r"signoff run .*--wait", durable)
