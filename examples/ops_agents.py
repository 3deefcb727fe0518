"""Your own agents, served by one worker: `python worker.py --agents examples.ops_agents`.

`get_status` runs at once; `deploy_service` waits for a person's sign-off. Deployments
are recorded in `deployments.json` in the workspace (`SIGNOFF_WORKSPACE`), so the
effect of an approval can be seen from outside.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from signoff import AgentBuilder, ApprovalPolicy, ApprovalRequiredTool, ChatClientAgent, tool


def _ledger() -> Path:
    return Path(os.environ.get("SIGNOFF_WORKSPACE") or ".") / "deployments.json"


def _deployed() -> dict[str, str]:
    path = _ledger()
    return json.loads(path.read_text()) if path.exists() else {}


@tool
def get_status(service: str) -> str:
    """Report which version of a service is deployed.

    Args:
        service: the service's name, e.g. "billing".
    """
    version = _deployed().get(service)
    return f"{service} is at version {version}" if version else f"{service} is not deployed"


@tool(idempotent=False, kind="deploy")
def deploy_service(service: str, version: str) -> str:
    """Deploy a version of a service to production.

    Args:
        service: the service's name.
        version: the version to deploy, e.g. "1.4.2".
    """
    deployed = _deployed() | {service: version}
    _ledger().write_text(json.dumps(deployed, indent=2))
    return f"deployed {service} {version}"


def agents() -> list[ChatClientAgent]:
    ops = (
        AgentBuilder("ops")
        .with_instructions("You deploy services. Check a service's status before deploying it.")
        .with_tool(get_status)
        # Anyone may approve a deployment here (the plain path); a real team would name its
        # approvers and ask for verified tokens, e.g. ApprovalPolicy(approvers=("group:release",),
        # verified=True, quorum=2), or set it in SIGNOFF_POLICY_FILE.
        .with_tool(ApprovalRequiredTool(deploy_service, policy=ApprovalPolicy(timeout_seconds=86400)))
        .build()
    )
    return [ops]
