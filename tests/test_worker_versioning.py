"""Worker Versioning (`SIGNOFF_DEPLOYMENT_NAME`, `SIGNOFF_BUILD_ID`): settings checked at start, the
worker registers its version and pins `AgentRun` to it, and the rollout of docs/deploys.md runs as written:
a new version ramped and made current, the old one draining while its parked run's approved call
runs there (the run then moves to the new version: test_parked_runs_move.py), then drained by the
server's own account. Without the variables a worker is unversioned."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import VersioningBehavior
from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from signoff.config.environment import Environment
from signoff.contract import AgentRunResult
from signoff.errors import ConfigError
from signoff.runtime.deployment import DeploymentSettings
from tests.conftest import start_dev_server
from tests.helpers import (
    Reply,
    ScriptedModelServer,
    ScriptedRequest,
    agents_for,
    call,
    running_worker,
    start_run,
    wait_pending,
)
from tests.processes import Proc, Processes, clean_env
from tests.versioning import FAST_DRAINAGE, chain, drainage, make_current, pinned_to, started_by_a_move, temporal_ok
from tests.waiting import assert_eventually


def script(request: ScriptedRequest) -> Reply:
    if request.last.role == "user":
        return Reply.tool_calls([call("run_command", "call_1", command="echo deployed")])
    return Reply.text(f"done: {request.last.content}")


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"SIGNOFF_DEPLOYMENT_NAME": "ops"}, "SIGNOFF_DEPLOYMENT_NAME is set but SIGNOFF_BUILD_ID is not"),
        ({"SIGNOFF_BUILD_ID": "1.2"}, "SIGNOFF_BUILD_ID is set but SIGNOFF_DEPLOYMENT_NAME is not"),
        ({"SIGNOFF_DEPLOYMENT_NAME": "ops.agents", "SIGNOFF_BUILD_ID": "1"}, "may not contain '.'"),
        ({"SIGNOFF_DEPLOYMENT_NAME": "ops", "SIGNOFF_BUILD_ID": "1 2"}, "visible ASCII characters without spaces"),
        ({"SIGNOFF_DEPLOYMENT_NAME": "ops", "SIGNOFF_BUILD_ID": "x" * 256}, "1-255 visible ASCII"),
        ({"SIGNOFF_DEPLOYMENT_NAME": "__unversioned__", "SIGNOFF_BUILD_ID": "1"}, "may not start with '__'"),
    ],
)
def test_deployment_settings_that_cannot_work_stop_the_worker_with_the_variable_named(
    env: dict[str, str], says: str
) -> None:
    with pytest.raises(ConfigError, match=says.replace(".", r"\.").replace("(", r"\(")):
        DeploymentSettings.from_env(Environment(env))


def test_both_variables_make_a_pinned_version_and_neither_none() -> None:
    settings = DeploymentSettings.from_env(
        Environment({"SIGNOFF_DEPLOYMENT_NAME": "ops-agents", "SIGNOFF_BUILD_ID": "2026.12.1"})
    )
    assert settings is not None and settings.version.to_canonical_string() == "ops-agents.2026.12.1"
    config = settings.worker_config()
    assert config.use_worker_versioning and config.default_versioning_behavior.name == "PINNED"
    assert DeploymentSettings.from_env(Environment({})) is None


def worker_env(address: str, queue: str, model: ScriptedModelServer, workspace: Path, **more: str) -> dict[str, str]:
    return clean_env(
        TEMPORAL_ADDRESS=address,
        SIGNOFF_TASK_QUEUE=queue,
        SIGNOFF_LLM_BASE_URL=model.base_url,
        SIGNOFF_LLM_MODEL="scripted",
        SIGNOFF_WORKSPACE=workspace,
        **more,
    )


async def versioned_worker(procs: Processes, env: dict[str, str], deployment: str, build: str) -> Proc:
    worker = procs.worker(f"worker-{build}", env | {"SIGNOFF_DEPLOYMENT_NAME": deployment, "SIGNOFF_BUILD_ID": build})
    await worker.wait_for_output("signoff: worker on task queue", 60)
    return worker


@pytest.fixture
async def drains_fast() -> AsyncIterator[WorkflowEnvironment]:
    """A dev server that re-checks a draining version every second (default: 3 minutes)."""
    env = await start_dev_server(*FAST_DRAINAGE)
    yield env
    await env.shutdown()


async def test_a_versioned_worker_registers_its_version_pins_its_runs_and_says_how_to_route_to_it(
    client: Client, procs: Processes, tmp_path: Path
) -> None:
    address, queue, deployment = client.service_client.config.target_host, f"tq-{uuid.uuid4()}", f"d{uuid.uuid4().hex}"
    with ScriptedModelServer(script) as model:
        worker = await versioned_worker(procs, worker_env(address, queue, model, tmp_path), deployment, "a")
        log = worker.stdout()
        assert (
            f"signoff: worker deployment {deployment}, build a (version {deployment}.a); AgentRun runs are "
            "pinned, and move to the deployment's current version only at a safe point" in log
        )
        assert (
            f"deployment {deployment} is new: new runs go to unversioned workers until a version is current; "
            f"once this worker polls: temporal worker deployment set-ramping-version --deployment-name "
            f"{deployment} --build-id a --percentage 10"
        ) in log
        await temporal_ok(
            address,
            "worker",
            "deployment",
            "set-current-version",
            "--deployment-name",
            deployment,
            "--build-id",
            "a",
            "--yes",
        )
        run = await start_run(client, queue)
        await wait_pending(run)
        assert await pinned_to(run) == (VersioningBehavior.VERSIONING_BEHAVIOR_PINNED, "a")
        await run.execute_update("submit_tool_approval", {"call_id": "call_1", "approved": True})
        assert (await run.result()).text == "done: exit code: 0\ndeployed\n"


async def test_without_the_variables_a_worker_is_unversioned(client: Client, task_queue: str, tmp_path: Path) -> None:
    with ScriptedModelServer(script) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            run = await start_run(client, task_queue)
            await wait_pending(run)
            assert await pinned_to(run) == (VersioningBehavior.VERSIONING_BEHAVIOR_UNSPECIFIED, "")
            await run.terminate("done")


async def test_the_readme_rollout_new_version_ramped_then_current_old_one_drained(
    drains_fast: WorkflowEnvironment, procs: Processes, tmp_path: Path
) -> None:
    client = drains_fast.client
    address, queue, name = client.service_client.config.target_host, f"tq-{uuid.uuid4()}", "ops-agents"
    version = ("worker", "deployment")
    with ScriptedModelServer(script) as model:
        env = worker_env(address, queue, model, tmp_path)
        old = await versioned_worker(procs, env, name, "v1")
        await temporal_ok(
            address, *version, "set-current-version", "--deployment-name", name, "--build-id", "v1", "--yes"
        )
        parked: WorkflowHandle[Any, AgentRunResult] = await start_run(client, queue, "parked on v1")
        await wait_pending(parked)

        new = await versioned_worker(procs, env, name, "v2")
        assert "new runs start on v1, not on this version" in new.stdout()
        await temporal_ok(
            address,
            *version,
            "set-ramping-version",
            "--deployment-name",
            name,
            "--build-id",
            "v2",
            "--percentage",
            "10",
            "--yes",
        )
        assert "v2" in await temporal_ok(address, *version, "describe", "--name", name)
        await make_current(client, name, "v2")  # the docs' set-current-version, once the server routes by it
        fresh: WorkflowHandle[Any, AgentRunResult] = await start_run(client, queue, "starts on v2")
        await wait_pending(fresh)
        assert await pinned_to(fresh) == (VersioningBehavior.VERSIONING_BEHAVIOR_PINNED, "v2")
        assert await drainage(address, name, "v1") == "draining"  # the parked run still needs v1

        for run in (parked, fresh):
            await run.execute_update("submit_tool_approval", {"call_id": "call_1", "approved": True})
            assert (await run.result()).text == "done: exit code: 0\ndeployed\n"
        # The parked run's approved call ran on v1, then the run moved to v2 for the rest (workflows/upgrade.py).
        assert await pinned_to(chain(client, parked)) == (VersioningBehavior.VERSIONING_BEHAVIOR_PINNED, "v1")
        assert await pinned_to(parked) == (VersioningBehavior.VERSIONING_BEHAVIOR_PINNED, "v2")
        assert await started_by_a_move(parked) and not await started_by_a_move(fresh)
        assert (await fresh.describe()).run_id == fresh.result_run_id  # started on v2: it never moved

        async def drained() -> None:
            assert await drainage(address, name, "v1") == "drained"

        await assert_eventually(drained, 60)
        assert await old.terminate() == 0 and new.popen.poll() is None
