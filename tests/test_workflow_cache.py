"""`SIGNOFF_MAX_CACHED_WORKFLOWS`: how many runs a worker keeps in memory; the others replay
their history when their decision comes, and finish all the same."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import Client

from bench.scale import cache_counts
from signoff.errors import ConfigError
from signoff.runtime.worker import build_worker
from tests.helpers import Reply, ScriptedModelServer, ScriptedRequest, call, start_run, wait_pending, worker_settings
from tests.processes import Processes, clean_env, free_port


def script(request: ScriptedRequest) -> Reply:
    if request.last.role == "user":
        return Reply.tool_calls([call("run_command", "call_1", command="echo woken")])
    return Reply.text(f"done: {request.last.content}")


@pytest.mark.parametrize("value", ["-1", "many", "100001"])
def test_a_cache_size_that_cannot_work_stops_the_worker(value: str) -> None:
    with pytest.raises(ConfigError, match="SIGNOFF_MAX_CACHED_WORKFLOWS must be a whole number of runs"):
        worker_settings({}, {"SIGNOFF_MAX_CACHED_WORKFLOWS": value})


async def test_the_cache_size_reaches_the_worker_and_its_log(client: Client, task_queue: str) -> None:
    setup = worker_settings({}, {"SIGNOFF_MAX_CACHED_WORKFLOWS": "2,000"})
    assert build_worker(client, {}, task_queue, settings=setup).config()["max_cached_workflows"] == 2000
    assert "workflow cache: 2,000 runs in memory (SIGNOFF_MAX_CACHED_WORKFLOWS)" in " ".join(setup.describe())
    unset = build_worker(client, {}, f"{task_queue}-unset", settings=worker_settings({}, {})).config()
    assert unset["max_cached_workflows"] == 1000  # not set by signoff: the SDK's default


async def test_a_run_evicted_from_a_one_run_cache_replays_when_approved_and_finishes(
    client: Client, task_queue: str, procs: Processes, tmp_path: Path
) -> None:
    port = free_port()
    with ScriptedModelServer(script) as model:
        env = clean_env(
            TEMPORAL_ADDRESS=client.service_client.config.target_host,
            SIGNOFF_TASK_QUEUE=task_queue,
            SIGNOFF_LLM_BASE_URL=model.base_url,
            SIGNOFF_LLM_MODEL="scripted",
            SIGNOFF_WORKSPACE=tmp_path,
            SIGNOFF_MAX_CACHED_WORKFLOWS="1",
            SIGNOFF_METRICS_ADDRESS=f"127.0.0.1:{port}",
        )
        worker = procs.worker("worker", env)
        await worker.wait_for_output("signoff: worker on task queue", 60)
        assert "workflow cache: 1 runs in memory" in worker.stdout()
        first = await start_run(client, task_queue, "first")
        await wait_pending(first)
        second = await start_run(client, task_queue, "second")
        await wait_pending(second)
        counts = [await cache_counts(f"http://127.0.0.1:{port}/metrics")]
        for run in (second, first):  # the second is the one in memory; the first was evicted for it
            await run.execute_update("submit_tool_approval", {"call_id": "call_1", "approved": True})
            assert (await run.result()).text == "done: exit code: 0\nwoken\n"
            counts.append(await cache_counts(f"http://127.0.0.1:{port}/metrics"))
    (hits0, misses0), (hits1, misses1), (_, misses2) = counts  # a miss: a task for a run no longer held
    assert (hits1 > hits0, misses1 - misses0, misses2 - misses1 >= 1) == (True, 0, True)
