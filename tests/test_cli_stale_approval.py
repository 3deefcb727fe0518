"""The wrong call is never approved: `signoff approve` is bound to what the operator was shown.

The finding (issue 7, item 6): an operator runs `signoff pending` and sees `echo hello`;
the call times out, and the model then asks `rm -rf data` under the same call id. Every
way of approving without looking again (`approve RUN`, `approve RUN --all`, `approve RUN
call_1`) must leave `data` where it is.
"""
# ruff: noqa: F811 - the harness's fixtures are imported by name and taken as parameters

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from temporalio.client import Client

from signoff.contract import AgentRunResult, RunOptions
from tests.cli_harness import Cli, Done, cli, cli_environ, served  # noqa: F401
from tests.helpers import (
    Reply,
    ScriptedRequest,
    assert_eventually,
    call,
    start_run,
    wait_pending,
)

TIMEOUT = 10.0
"""Long enough for the operator's `signoff pending` to see the first call on a busy machine."""
VARIANTS = {"no call": [], "--all": ["--all"], "same call id": ["call_1"]}


def echo_then_rm(request: ScriptedRequest) -> Reply:
    """Round 1 asks `echo hello`; after its timeout, the same call id asks `rm -rf <the prompt>`."""
    target = next(m.content for m in request.messages if m.role == "user")
    if request.round == 1:
        return Reply.tool_calls([call("run_command", "call_1", command="echo hello")])
    if request.round == 2:
        return Reply.tool_calls([call("run_command", "call_1", command=f"rm -rf {target}")])
    return Reply.text(f"saw: {request.last.content}")


async def operator_approves_after_the_switch(
    client: Client, task_queue: str, cli: Cli, workspace: Path, variant: list[str], name: str
) -> tuple[Done, Done, AgentRunResult]:
    data = workspace / name
    data.mkdir()
    (data / "keep.txt").write_text("precious\n")
    handle = await start_run(client, task_queue, name, options=RunOptions(approval_timeout_seconds=TIMEOUT))
    await wait_pending(handle)
    seen = await cli("pending", handle.id)
    assert seen.code == 0 and '"command": "echo hello"' in seen.out, seen

    async def switched() -> None:
        (request,) = await handle.query("pending_approvals")
        assert request["arguments"] == {"command": f"rm -rf {name}"}

    await assert_eventually(switched, timeout=TIMEOUT + 30)
    await handle.execute_update("extend_deadline", {"call_id": "call_1", "seconds": 600})  # no second timeout
    approved = await cli("approve", handle.id, *variant)
    again = await cli("deny", handle.id, "call_1")  # still bound to `echo hello`: refused too
    assert again.code == 1 and "is not what was reviewed" in again.err, again
    await cli("pending", handle.id)  # the operator looks again, and sees `rm -rf`
    denied = await cli("deny", handle.id)
    return approved, denied, await asyncio.wait_for(handle.result(), 60)


async def test_a_call_that_changed_after_it_was_shown_is_not_approved(
    client: Client, task_queue: str, tmp_path: Path, cli: Cli
) -> None:
    async with served(client, task_queue, tmp_path, echo_then_rm):
        outcomes = await asyncio.gather(
            *(
                operator_approves_after_the_switch(client, task_queue, cli, tmp_path, args, f"data_{i}")
                for i, args in enumerate(VARIANTS.values())
            )
        )
    for i, (label, (approved, denied, result)) in enumerate(zip(VARIANTS, outcomes, strict=True)):
        name = f"data_{i}"
        assert (tmp_path / name / "keep.txt").read_text() == "precious\n", label
        assert approved.code == 1, (label, approved)
        assert "is not what was reviewed" in approved.err, (label, approved.err)
        assert "call_1 changed since you were shown it: nothing was decided" in approved.out, label
        assert f'"command": "rm -rf {name}"' in approved.out, label  # shown as it is now
        assert denied.code == 0, (label, denied)
        assert f'denied call_1: run_command {{"command": "rm -rf {name}"}}' in denied.out, label
        assert [(a.arguments, a.approved, a.timed_out) for a in result.approvals] == [
            ({"command": "echo hello"}, False, True),
            ({"command": f"rm -rf {name}"}, False, False),
        ], label


@pytest.mark.parametrize("stdin", ["", "y\n"])
async def test_approve_without_a_call_refuses_a_call_never_shown_when_nobody_can_confirm(
    client: Client, task_queue: str, tmp_path: Path, cli: Cli, stdin: str
) -> None:
    """Standard input is not a terminal: even a piped `y` does not confirm what nobody saw."""
    async with served(client, task_queue, tmp_path):
        handle = await start_run(client, task_queue)
        (request,) = await wait_pending(handle)
        refused = await cli("approve", handle.id, "--yes", stdin=stdin)
        still = await handle.query("pending_approvals")
        bound = await cli("approve", handle.id, "--digest", request["arguments_digest"][:16])
        await handle.result()
    assert refused.code == 2, refused
    assert '"command": "echo hi"' in refused.out  # printed whole
    assert f"--digest {request['arguments_digest']}" in refused.err and "nothing decided" in refused.err
    assert [r["call_id"] for r in still] == ["call_1"]
    assert bound.code == 0, bound
    assert 'approved call_1: run_command {"command": "echo hi"}' in bound.out


async def test_all_decides_only_the_calls_that_were_shown(
    client: Client, task_queue: str, tmp_path: Path, cli: Cli
) -> None:
    def one_then_another(request: ScriptedRequest) -> Reply:
        if request.round == 1:
            return Reply.tool_calls([call("run_command", "call_a", command="echo a")])
        return Reply.text("done")

    async with served(client, task_queue, tmp_path, one_then_another):
        handle = await start_run(client, task_queue)
        await wait_pending(handle)
        nothing = await cli("approve", handle.id, "--all")
        await cli("pending", handle.id)
        everything = await cli("approve", handle.id, "--all")
        await handle.result()
    assert nothing.code == 2 and "not decided (not shown to you before): call_a" in nothing.out
    assert everything.code == 0 and 'approved call_a: run_command {"command": "echo a"}' in everything.out
