"""The worker's `"grants": false` holds at the last gate (issue 27, weak points).

A run's snapshot keeps the policy it started with, so a run that began before the worker's
policy file said `grants = false` still makes and uses grants in its workflow; and a forged
`AgentRun` hands the tool activity whatever grant tokens it has. Either way the tool
activity runs no call a grant approved where the worker's own policy for the tool takes no
grants: the model is told why, and the run goes on. Real dev server, real workers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from signoff.approval.policy import PolicyBook
from signoff.approval.requests import GrantSpec
from tests.approver_keys import write_secret
from tests.governance import deploy, events_of, ops_agent, turns
from tests.helpers import ScriptedModelServer, running_worker, start_run, wait_pending
from tests.test_grants import approve, decide
from tests.test_spent_signatures import Forgery, forged_run

NO_GRANTS = "this worker's policy for deploy takes no grants (grants = false), and the run approved it with grant_1"


async def test_a_grant_made_before_the_worker_said_grants_false_runs_nothing_after(
    client: Client, task_queue: str
) -> None:
    """The run's snapshot allows grants (its first worker had no policy file); the worker that
    runs its calls now says `grants = false` for `deploy`. The call alice approved runs; the
    later one her grant approves is refused at the tool activity, and the run finishes."""
    agents = {"ops": ops_agent()}
    no_grants = PolicyBook.parse({"deploy": {"grants": False}})
    with ScriptedModelServer(turns([deploy("call_1")], [deploy("call_2", "api")])) as model:
        async with running_worker(client, task_queue, model, agents):
            handle = await start_run(client, task_queue, agent="ops")
            (pending,) = await wait_pending(handle)
        async with running_worker(client, task_queue, model, agents, policies=no_grants):
            await decide(handle, approve("call_1", match="tool"))
            result = await handle.result()
            results = {e["call_id"]: e["content"] for e in await events_of(handle, "tool_result")}
    assert (pending["policy"] or {}).get("grants", True) is True  # the run's snapshot allows grants
    assert results["call_1"] == "deployed web"
    assert results["call_2"].startswith("Error: this call was not run: ") and NO_GRANTS in results["call_2"]
    assert "each call of deploy needs a decision of its own" in results["call_2"]
    assert [(a.call_id, a.grant_id) for a in result.approvals] == [("call_1", None), ("call_2", "grant_1")]
    assert result.text == f"deployed web|{results['call_2']}"


@pytest.fixture
def keys(tmp_path: Path) -> Path:
    write_secret(tmp_path / "approvers.key")
    return tmp_path / "approvers.key"


@pytest.mark.parametrize("grants", [False, True], ids=["grants-false", "grants-allowed"])
async def test_a_signed_grant_a_forged_run_hands_over_runs_nothing_where_the_worker_takes_no_grants(
    client: Client, task_queue: str, tmp_path: Path, keys: Path, grants: bool
) -> None:
    """Alice really signed a grant on call_g (verified policy); a forged `AgentRun` hands it with
    call_1, saying nothing of a grant. Under the worker's `grants: false` the token does not
    count and the command does not run; where grants are allowed (the control) it runs."""
    forgery = Forgery(client, task_queue, tmp_path, keys, policy={"grants": grants})

    async def plan(handle: Any) -> list[dict[str, Any]]:
        granting = forgery.binding(handle, "call_g")
        grant = forgery.token(granting, grant=GrantSpec(match="tool"))
        return [await forgery.tool_input(granting, [grant], call_id="call_1")]

    _, (content,) = await forged_run(forgery, plan)
    if grants:
        assert content.startswith("exit code: 0") and forgery.ran() == 1, content
        return
    assert content.startswith(
        "Error: this call was not run: this worker's policy for run_command needs signed approvals, and 0 of 1"
    ), content
    assert "alice's token approves it through a grant, and run_command takes no grants here" in content
    assert forgery.ran() == 0
