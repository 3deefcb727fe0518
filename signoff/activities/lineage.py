"""The runs above a sub-agent's run, as the server says (each run's `parent_execution`).

A sub-agent's call waits in a child run; people are shown where it sits in the tree (the top
run, the runs down to the one that waits, the tool) and sent to the top run. Who the parents are
is the server's word, never the run's (a child's id `<parent>--<call>` is only a name): each run
above is described in turn, at most `MAX_ANCESTORS` of them.
"""

from __future__ import annotations

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import DescribeWorkflowExecutionRequest
from temporalio.client import Client
from temporalio.service import RPCError

MAX_ANCESTORS = 16
"""The most runs above one that are looked up (sub-agents nest 3 deep by default)."""


async def ancestors(client: Client, parent_id: str | None) -> list[str]:
    """The workflow ids of the runs above a run whose parent is `parent_id`, the top first
    (empty for a top run); where the server cannot say more, what it said."""
    chain: list[str] = []
    while parent_id and len(chain) < MAX_ANCESTORS and parent_id not in chain:
        chain.append(parent_id)
        parent_id = await parent_of(client, parent_id)
    return chain[::-1]


async def parent_of(client: Client, workflow_id: str) -> str | None:
    """The parent run of `workflow_id`'s latest run (None: a top run, or the server cannot say)."""
    request = DescribeWorkflowExecutionRequest(
        namespace=client.namespace, execution=WorkflowExecution(workflow_id=workflow_id)
    )
    try:
        info = (await client.workflow_service.describe_workflow_execution(request)).workflow_execution_info
    except RPCError:
        return None
    return (info.parent_execution.workflow_id or None) if info.HasField("parent_execution") else None
