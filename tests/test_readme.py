"""The manual's examples run as written: the README's in-process example against the scripted
model, and the `temporal` CLI's decisions of docs/ (start, update, signal, deadline, grants)
against a real dev server."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import shlex
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from signoff.contract import AgentRunResult
from signoff.messages import ToolCall
from signoff.runtime.devserver import find_temporal_binary
from signoff.testing import Reply, ScriptedModelServer, ScriptedRequest
from signoff.testing.demo import demo_script
from tests import docs
from tests.helpers import agents_for, running_worker, wait_pending
from tests.waiting import assert_eventually

ROOT = Path(__file__).parent.parent
PROVIDER = 'LLMConfig.preset("deepseek")'


def example() -> str:
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S) if PROVIDER in b]
    return block.replace(PROVIDER, 'LLMConfig(base_url=__import__("os").environ["MODEL_URL"], model="scripted")')


def script(request: ScriptedRequest) -> Reply:
    if request.round == 1:
        return Reply.tool_calls([ToolCall(id="call_1", name="run_command", arguments='{"command": "ls /tmp/logs"}')])
    return Reply.text(f"model saw: {request.last.content}")


def test_in_process_example_pauses_and_resumes_with_the_denial(tmp_path: Path) -> None:
    with ScriptedModelServer(script) as server:
        env = {**os.environ, "MODEL_URL": server.base_url, "PYTHONPATH": str(ROOT)}
        out = subprocess.run([sys.executable, "-c", example()], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert '[Approval required: run_command({"command": "ls /tmp/logs"})]' in out.stdout
    assert "model saw: Rejected: Back up the logs first" in out.stdout


# The manual's decisions with the `temporal` CLI, run as written against runs started as the contract's
# page starts them (with the walkthrough's scripted model: its first call is `call_1_1`, `ls -la /tmp/logs`).
# Only the address, the task queue and the workflow ids are this test's own.
SECTIONS = (
    ("contract.md", "## Starting runs from any Temporal client"),
    ("approvals.md", "## Approving from the Temporal Web UI or CLI"),
    ("fleets.md", "## Deadlines, reminders and escalation"),
    ("fleets.md", "## Grants"),
)


def doc_section(where: tuple[str, str]) -> str:
    """The section of a docs/ page, up to its first subsection."""
    text = docs.section(docs.page(where[0]), where[1])
    end = re.search(r"\n#{2,4} ", text[len(where[1]) :])
    return text[: len(where[1]) + end.start()] if end else text


def bash_commands(section: str, program: str = "temporal") -> list[list[str]]:
    """The `program` command lines of the section's bash blocks, as words: continued lines (a
    trailing backslash, or a quote still open) joined."""
    lines: list[str] = []
    for block in re.findall(r"```bash\n(.*?)```", section, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            if lines and lines[-1].count("'") % 2:
                lines[-1] += " " + line.strip()
            else:
                lines.append(line)
    return [shlex.split(line, comments=True) for line in lines if line.startswith(program + " ")]


def json_inputs(section: str) -> list[str]:
    (block,) = re.findall(r"```json\n(.*?)```", section, re.S)
    return block.strip().splitlines()


def ours(words: list[str], address: str, queue: str, run: str) -> list[str]:
    """`words` against this test's server, queue and run (`cleanup-1`, `RUN_ID` name the run)."""
    out = [str(find_temporal_binary()) if words[0] == "temporal" else words[0]]
    for before, word in itertools.pairwise(words):
        out.append(queue if before == "--task-queue" else run if word in ("cleanup-1", "RUN_ID") else word)
    return [*out[:3], "--address", address, *out[3:]]


async def run_cli(words: list[str]) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        *words, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await asyncio.wait_for(process.communicate(), timeout=60)
    return process.returncode or 0, out.decode()


def grant_script(request: ScriptedRequest) -> Reply:
    """The walkthrough's first call, then one the grant approves, then one that waits again
    (a write outside the workspace), so the run is still there to revoke the grant."""
    if request.round == 1:
        return demo_script(request)
    if request.round == 2:
        return Reply.tool_calls([("run_command", {"command": "ls -la /tmp"})])
    if request.round == 3:
        return Reply.tool_calls([("write_file", {"path": "/nonexistent-readme/x", "content": "x"})])
    return Reply.text("done")


@pytest.fixture
async def readme_run(client: Client, tmp_path: Path) -> AsyncIterator[Callable[..., Awaitable[Any]]]:
    """Starts runs as docs/contract.md starts `cleanup-1`, on a worker with the walkthrough's model
    (or the script given)."""
    queue, address = f"readme-{uuid.uuid4().hex[:8]}", client.service_client.config.target_host
    (start, _query) = bash_commands(doc_section(SECTIONS[0]))
    (tmp_path / "ws").mkdir()
    scripts: list[Callable[[ScriptedRequest], Reply]] = [demo_script]
    with ScriptedModelServer(lambda request: scripts[-1](request)) as model:
        async with running_worker(client, queue, model, agents_for(tmp_path / "ws")):

            async def started(script: Callable[[ScriptedRequest], Reply] = demo_script) -> Any:
                scripts.append(script)
                run = f"cleanup-{uuid.uuid4().hex[:8]}"
                code, out = await run_cli(ours(start, address, queue, run))
                assert code == 0, out
                handle = client.get_workflow_handle(run, result_type=AgentRunResult)
                await wait_pending(handle)
                return handle

            yield started


async def test_the_readme_query_shows_the_call_ids_its_decisions_use(client: Client, readme_run: Any) -> None:
    handle = await readme_run()
    (_start, query) = bash_commands(doc_section(SECTIONS[0]))
    code, out = await run_cli(ours(query, client.service_client.config.target_host, "", handle.id))
    assert code == 0 and '"call_id":"call_1_1"' in out.replace(" ", ""), out
    assert '"command":"ls -la /tmp/logs"' in out


@pytest.mark.parametrize("line", range(4))
async def test_each_readme_decision_input_is_accepted_by_the_update(client: Client, readme_run: Any, line: int) -> None:
    handle = await readme_run()
    decision = json_inputs(doc_section(SECTIONS[1]))[line]
    words = ["temporal", "workflow", "update", "execute", "--workflow-id", "cleanup-1"]
    words += ["--name", "submit_tool_approval", "--input", decision]
    code, out = await run_cli(ours(words, client.service_client.config.target_host, "", handle.id))
    assert code == 0, out
    result = await handle.result()
    (record,) = result.approvals
    assert record.approved == json.loads(decision)["approved"]
    assert record.edited_arguments == json.loads(decision).get("arguments")


async def test_the_readme_temporal_cli_decisions_run_as_written(client: Client, readme_run: Any) -> None:
    address = client.service_client.config.target_host
    for words, approved in zip(bash_commands(doc_section(SECTIONS[1])), (True, False), strict=True):
        handle = await readme_run()
        code, out = await run_cli(ours(words, address, "", handle.id))
        assert code == 0, out
        assert (await handle.result()).approvals[0].approved is approved


async def test_the_readme_deadline_and_grant_examples_run_as_written(client: Client, readme_run: Any) -> None:
    address = client.service_client.config.target_host
    extend = [w for w in bash_commands(doc_section(SECTIONS[2])) if "extend_deadline" in w]
    grants = bash_commands(doc_section(SECTIONS[3]))
    assert len(extend) == 1 and len(grants) == 3
    handle = await readme_run(grant_script)
    for words in [*extend, *grants[:2]]:
        code, out = await run_cli(ours(words, address, "", handle.id))
        assert code == 0, f"{words}: {out}"
        if "grants" in words:
            assert '"grant_id":"grant_1"' in out.replace(" ", ""), out
    await assert_eventually(lambda: waiting_for(handle, "write_file"))
    code, out = await run_cli(ours(grants[2], address, "", handle.id))  # revoke grant_1
    assert code == 0, out
    await handle.terminate()
    trail = await handle.query("audit")
    first, second = trail["records"][:2]
    assert (first["approver"], first["approved"], second["grant_id"]) == ("alice", True, "grant_1")


async def waiting_for(handle: Any, tool: str) -> None:
    assert [p["name"] for p in await handle.query("pending_approvals")] == [tool]


async def test_empty_lists_in_the_query_answers_are_lists(client: Client, readme_run: Any) -> None:
    """What the run answers holds `[]` where the contract shows lists (the `temporal` CLI prints
    an empty list as `null`: its display, not the answer; docs/contract.md says so)."""
    from temporalio.api.common.v1 import WorkflowExecution
    from temporalio.api.query.v1 import WorkflowQuery
    from temporalio.api.workflowservice.v1 import QueryWorkflowRequest

    handle = await readme_run()

    async def raw(query: str) -> Any:
        request = QueryWorkflowRequest(
            namespace=client.namespace,
            execution=WorkflowExecution(workflow_id=handle.id),
            query=WorkflowQuery(query_type=query),
        )
        (payload,) = (await client.workflow_service.query_workflow(request)).query_result.payloads
        return json.loads(payload.data)

    (pending,) = await raw("pending_approvals")
    policy = pending["policy"]
    assert (pending["votes"], policy["approvers"], policy["remind_after_seconds"], policy["escalate_to"]) == ([],) * 4
    status = await raw("status")
    assert status["grants"] == [] and status["pending"][0]["votes"] == []
    await handle.terminate()
    assert await raw("grants") == []
