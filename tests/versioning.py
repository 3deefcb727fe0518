"""Worker Versioning in tests: the `temporal worker deployment` commands docs/deploys.md gives, and
what the server says of a run's version and of a version's drainage."""

from __future__ import annotations

import asyncio
import json
import subprocess
from typing import Any

from temporalio.api.enums.v1 import ContinueAsNewVersioningBehavior, RoutingConfigUpdateState
from temporalio.api.workflowservice.v1 import DescribeWorkerDeploymentRequest
from temporalio.client import Client, WorkflowHandle

from signoff.contract import AgentRunResult
from signoff.runtime.devserver import find_temporal_binary
from tests.waiting import assert_eventually

FAST_DRAINAGE = (
    "--dynamic-config-value",
    'matching.wv.VersionDrainageStatusRefreshInterval="1s"',
    "--dynamic-config-value",
    'matching.wv.VersionDrainageStatusVisibilityGracePeriod="1s"',
)
"""A dev server that re-checks a draining version every second (default: 3 minutes)."""
_VERSIONS = ("worker", "deployment")


def temporal(address: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(find_temporal_binary()), *args, "--address", address], capture_output=True, text=True, timeout=60
    )


async def temporal_ok(address: str, *args: str, timeout: float = 30.0) -> str:
    """Run a `temporal` command until it succeeds (a version exists once its worker has polled)."""

    async def done() -> str:
        ran = await asyncio.to_thread(temporal, address, *args)
        assert ran.returncode == 0, ran.stderr
        return ran.stdout

    return await assert_eventually(done, timeout)


async def make_current(client: Client, deployment: str, build: str) -> None:
    """`temporal worker deployment set-current-version`, then wait until the server has passed the
    new routing to the task queues (`routing_config_update_state` COMPLETED): a task started before
    that still says the target is unchanged, and the run it belongs to moves only at a later one."""
    await _route(client, deployment, build, "set-current-version")


async def make_ramping(client: Client, deployment: str, build: str, percentage: int) -> None:
    """`temporal worker deployment set-ramping-version`, then wait until the server routes by it."""
    await _route(client, deployment, build, "set-ramping-version", "--percentage", str(percentage))


async def _route(client: Client, deployment: str, build: str, command: str, *more: str) -> None:
    address = client.service_client.config.target_host
    await temporal_ok(
        address, *_VERSIONS, command, "--deployment-name", deployment, "--build-id", build, *more, "--yes"
    )

    async def routed() -> None:
        request = DescribeWorkerDeploymentRequest(namespace=client.namespace, deployment_name=deployment)
        info = (await client.workflow_service.describe_worker_deployment(request)).worker_deployment_info
        config = info.routing_config
        routed_to = config.ramping_deployment_version if more else config.current_deployment_version
        assert routed_to.build_id == build
        assert info.routing_config_update_state == RoutingConfigUpdateState.ROUTING_CONFIG_UPDATE_STATE_COMPLETED

    await assert_eventually(routed, 30)


async def drainage(address: str, deployment: str, build: str) -> str:
    shown = await temporal_ok(
        address,
        *_VERSIONS,
        "describe-version",
        "--deployment-name",
        deployment,
        "--build-id",
        build,
        "--output",
        "json",
    )
    status: str = json.loads(shown)["drainageInfo"]["drainageStatus"]
    return status


async def pinned_to(handle: WorkflowHandle[Any, Any]) -> tuple[int, str]:
    """The run's versioning behaviour and the build it is pinned to (the latest run without a run id)."""
    info = (await handle.describe()).raw_description.workflow_execution_info.versioning_info
    return info.behavior, info.deployment_version.build_id


def chain(client: Client, handle: WorkflowHandle[Any, Any]) -> WorkflowHandle[Any, AgentRunResult]:
    """The first run of `handle`'s chain, by its run id (a handle without one follows the latest run)."""
    first = handle.first_execution_run_id or handle.result_run_id
    return client.get_workflow_handle(handle.id, run_id=first, result_type=AgentRunResult)


async def moved(
    client: Client, handle: WorkflowHandle[Any, Any], timeout: float = 30.0
) -> WorkflowHandle[Any, AgentRunResult]:
    """The run `handle`'s chain continued into (by run id), once there is one."""
    latest = client.get_workflow_handle(handle.id)

    async def next_run() -> str:
        run_id = (await latest.describe()).run_id
        assert run_id != handle.result_run_id, "the run has not continued as new"
        return run_id

    run_id = await assert_eventually(next_run, timeout)
    return client.get_workflow_handle(handle.id, run_id=run_id, result_type=AgentRunResult)


async def started_by_a_move(handle: WorkflowHandle[Any, Any]) -> bool:
    """Whether the run was started by a continue-as-new with `AUTO_UPGRADE` (the server keeps it
    in the new run's versioning info; the ContinuedAsNew event of this server does not say it)."""
    info = (await handle.describe()).raw_description.workflow_execution_info.versioning_info
    auto = ContinueAsNewVersioningBehavior.CONTINUE_AS_NEW_VERSIONING_BEHAVIOR_AUTO_UPGRADE
    return info.continue_as_new_initial_versioning_behavior == auto
