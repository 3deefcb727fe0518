""" "Approve similar" on a real server: the pending request shows the pattern before anyone signs,
a similar grant approves a later call the pattern covers and not one it does not, and no bulk
decision mints one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from temporalio.client import Client

from signoff.approval.identity import ApproverKeys
from signoff.approval.policy import ApprovalPolicy, PolicyBook
from signoff.approval.similar import covers, similar_pattern
from signoff.testing import Reply, ScriptedRequest
from tests.approver_keys import signed, write_secret
from tests.governance import deploy, ops_agent, ops_run, refusal
from tests.helpers import ScriptedModelServer, agents_for, call, running_worker, start_run, wait_pending
from tests.test_grants import next_pending


def commands(*lines: str) -> Any:
    """A model that runs `lines[i]` on turn i+1, then answers the tool messages joined by `|`."""

    def script(request: ScriptedRequest) -> Reply:
        if request.round <= len(lines):
            n = request.round
            return Reply.tool_calls([call("run_command", f"call_{n}", command=lines[n - 1])])
        return Reply.text("|".join((m.content or "").strip() for m in request.messages if m.role == "tool"))

    return script


def test_patterns_are_derived_from_the_call_alone() -> None:
    assert similar_pattern("run_command", {"command": "git log -n 5 src/app.py"}) == (
        "run_command: git log -n <number> <path>"
    )
    assert similar_pattern("run_command", {"command": "git push origin main"}) == "run_command: git push origin main"
    assert similar_pattern("run_command", {"command": "ls; rm -rf /"}) is None
    assert similar_pattern("run_command", {"command": "echo $HOME"}) is None
    assert similar_pattern("write_file", {"path": "src/app/main.py", "content": "x"}) == "write_file: under src/app/"
    assert similar_pattern("write_file", {"path": "src/../etc/passwd", "content": "x"}) is None
    assert similar_pattern("deploy", {"target": "web"}) is None
    pattern = "write_file: under src/"
    assert covers(pattern, "write_file", {"path": "src/app/x.py"})
    assert not covers(pattern, "write_file", {"path": "srcx/y.py"})
    assert not covers(pattern, "write_file", {"path": "/src/y.py"})
    assert not covers(pattern, "remove_path", {"path": "src/y.py"})
    assert not covers("remove_path: under ./ (recursive=false)", "remove_path", {"path": "a", "recursive": True})


async def test_a_similar_grant_approves_a_matching_later_call_and_not_another(
    client: Client, task_queue: str, ws: Path
) -> None:
    script = commands("echo 1", "echo 2", "echo 3 4")
    with ScriptedModelServer(script) as model:
        async with running_worker(client, task_queue, model, agents_for(ws)):
            handle = await start_run(client, task_queue)
            (pending,) = await wait_pending(handle)
            decision = {"call_id": "call_1", "approved": True, "approver": "al", "grant": {"match": "similar"}}
            await handle.execute_update("submit_tool_approval", decision)
            third = await next_pending(handle, "call_3")
            await handle.execute_update("submit_tool_approval", {"call_id": "call_3", "approved": False})
            result = await handle.result()
            (grant,) = await handle.query("grants")
    assert pending["similar_pattern"] == "run_command: echo <number>"
    assert grant["pattern"] == "run_command: echo <number>" and grant["arguments_digest"] is None
    assert third["similar_pattern"] == "run_command: echo <number> <number>"
    assert result.text.split("|")[-1] == "Rejected: User denied" and result.text.count("exit code: 0") == 2
    assert [(a.call_id, a.grant_id) for a in result.approvals] == [
        ("call_1", None),
        ("call_2", "grant_1"),
        ("call_3", None),
    ]


async def test_a_bulk_decision_creates_no_similar_grant(client: Client) -> None:
    def script(request: ScriptedRequest) -> Reply:
        return Reply.tool_calls([deploy("call_1"), deploy("call_2", "api")]) if request.round == 1 else Reply.text("")

    agents = {"ops": ops_agent(restart=ApprovalPolicy())}
    async with ops_run(client, script, worker={"agents": agents}) as handle:
        await wait_pending(handle, 2)
        star = {"call_id": "*", "approved": True, "grant": {"match": "similar"}}
        bulk = [{"call_id": c, "approved": True, "grant": {"match": "similar"}} for c in ("call_1", "call_2")]
        refused_star = await refusal(handle.execute_update("submit_tool_approval", star))
        refused_batch = await refusal(handle.execute_update("submit_tool_approval", bulk))
        grants = await handle.query("grants")
        await handle.terminate()
    assert "never by a bulk decision" in refused_star and "never in a batch" in refused_batch
    assert grants == []


async def test_a_signed_similar_grant_names_its_pattern_and_the_tool_activity_checks_it(
    client: Client, task_queue: str, ws: Path, tmp_path: Path
) -> None:
    keys = tmp_path / "approvers.key"
    write_secret(keys)
    book = PolicyBook(policies={"run_command": ApprovalPolicy(verified=True, approvers=("alice",))})
    with ScriptedModelServer(commands("echo 1", "echo 2")) as model:
        async with running_worker(
            client, task_queue, model, agents_for(ws), policies=book, verifier=ApproverKeys.load(keys)
        ):
            handle = await start_run(client, task_queue)
            (pending,) = await wait_pending(handle)
            unnamed = signed(keys, pending, "alice", grant={"match": "similar"})
            refused = await refusal(handle.execute_update("submit_tool_approval", unnamed))
            named = {"match": "similar", "pattern": pending["similar_pattern"]}
            await handle.execute_update("submit_tool_approval", signed(keys, pending, "alice", grant=named))
            result = await handle.result()
    assert "names the pattern it approves" in refused
    assert result.text.count("exit code: 0") == 2 and result.approvals[1].grant_id == "grant_1"
