"""Worker Versioning: `SIGNOFF_DEPLOYMENT_NAME` and `SIGNOFF_BUILD_ID`.

With both set, the worker joins Temporal's Worker Deployment `SIGNOFF_DEPLOYMENT_NAME` as the
version `<name>.<build id>` (`WorkerDeploymentConfig`), and `AgentRun` is pinned: a run is
replayed only by the version it runs on, so a deploy never hands a parked run to code that
cannot replay it. When the deployment's target version changes, a run moves there itself,
through a continue-as-new that starts a new run on the new code (`workflows/upgrade.py`). The
pin is the worker's default behaviour, not an annotation on `AgentRun`: the server refuses a
workflow task that names a versioning behaviour from an unversioned worker. Which version
new runs start on is the server's routing (its current and ramping versions, set with
`temporal worker deployment set-current-version` / `set-ramping-version`); the server reports
when an old version is drained (no open run pinned to it). docs/deploys.md, "Deploys and parked runs".
Without them the worker is unversioned, as before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from temporalio.api.workflowservice.v1 import DescribeWorkerDeploymentRequest
from temporalio.client import Client
from temporalio.common import VersioningBehavior, WorkerDeploymentVersion
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import WorkerDeploymentConfig

from signoff.config.environment import BUILD_ID_ENV, DEPLOYMENT_NAME_ENV, Environment
from signoff.contract import WORKFLOW_TYPE
from signoff.errors import ConfigError

MAX_CHARS = 255
_PRINTABLE = re.compile(r"[!-~]+")  # visible ASCII, no spaces


@dataclass(frozen=True)
class DeploymentSettings:
    """This worker's Worker Deployment version; validated when built.

    Attributes:
        name: the deployment (one per service: every version of these workers shares it).
        build_id: this build of the code (a release tag, a commit, an image digest).
    """

    name: str
    build_id: str

    def __post_init__(self) -> None:
        for variable, value in ((DEPLOYMENT_NAME_ENV, self.name), (BUILD_ID_ENV, self.build_id)):
            if not _PRINTABLE.fullmatch(value) or len(value) > MAX_CHARS:
                raise ConfigError(
                    f"{variable} must be 1-{MAX_CHARS} visible ASCII characters without spaces, got {value!r}"
                )
            if value.startswith("__"):
                raise ConfigError(f"{variable} may not start with '__' (Temporal reserves such names), got {value!r}")
        if "." in self.name:
            raise ConfigError(
                f"{DEPLOYMENT_NAME_ENV} may not contain '.' (a version is written "
                f"<deployment>.<build id>), got {self.name!r}"
            )

    @classmethod
    def from_env(cls, env: Environment) -> DeploymentSettings | None:
        """The version both variables name, or None when neither is set.

        Raises:
            ConfigError: only one is set, or a value Temporal would refuse.
        """
        name, build_id = env.read(DEPLOYMENT_NAME_ENV), env.read(BUILD_ID_ENV)
        if not name and not build_id:
            return None
        if not (name and build_id):
            given, missing = (DEPLOYMENT_NAME_ENV, BUILD_ID_ENV) if name else (BUILD_ID_ENV, DEPLOYMENT_NAME_ENV)
            raise ConfigError(
                f"{given} is set but {missing} is not: Worker Versioning needs both (the deployment "
                "and this build of it), or neither"
            )
        return cls(name, build_id)

    @property
    def version(self) -> WorkerDeploymentVersion:
        return WorkerDeploymentVersion(deployment_name=self.name, build_id=self.build_id)

    def worker_config(self) -> WorkerDeploymentConfig:
        """The SDK's deployment options: this version, versioning on, workflows pinned by default."""
        return WorkerDeploymentConfig(
            version=self.version, use_worker_versioning=True, default_versioning_behavior=VersioningBehavior.PINNED
        )

    def describe(self) -> str:
        """The start-up log line."""
        return (
            f"worker deployment {self.name}, build {self.build_id} (version {self.version.to_canonical_string()}); "
            f"{WORKFLOW_TYPE} runs are pinned, and move to the deployment's current version only at a safe point "
            "(between rounds, or waiting for a person with no approved call left to run)"
        )

    def commands(self) -> str:
        """How an operator routes new runs to this version (ramp first, then make it current)."""
        flags = f"--deployment-name {self.name} --build-id {self.build_id}"
        return (
            f"temporal worker deployment set-ramping-version {flags} --percentage 10, then "
            f"temporal worker deployment set-current-version {flags}"
        )


async def routing_note(client: Client, deployment: DeploymentSettings) -> str:
    """Where the server routes new runs now, and, unless it is this version, how to change that."""
    request = DescribeWorkerDeploymentRequest(namespace=client.namespace, deployment_name=deployment.name)
    try:
        described = await client.workflow_service.describe_worker_deployment(request)
    except RPCError as exc:
        if exc.status != RPCStatusCode.NOT_FOUND:
            return f"routing of deployment {deployment.name} unknown ({exc.message})"
        return (
            f"deployment {deployment.name} is new: new runs go to unversioned workers until a version is "
            f"current; once this worker polls: {deployment.commands()}"
        )
    routing = described.worker_deployment_info.routing_config
    current = routing.current_deployment_version.build_id or None
    if current == deployment.build_id:
        return "this version is the deployment's current version: new runs start here"
    ramping = routing.ramping_deployment_version.build_id or None
    if ramping == deployment.build_id:
        return (
            f"this version is ramping ({routing.ramping_version_percentage:g}% of new runs; current: "
            f"{current or 'unversioned workers'}); to finish: temporal worker deployment set-current-version "
            f"--deployment-name {deployment.name} --build-id {deployment.build_id}"
        )
    return (
        f"new runs start on {current or 'unversioned workers'}, not on this version (runs pinned here still "
        f"come here); to move new runs: {deployment.commands()}"
    )
