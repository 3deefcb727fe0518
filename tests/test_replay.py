"""Determinism: committed histories replay, and a worker without a cache replays every step."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from signoff.runtime.guard import guarded
from signoff.runtime.worker import sandbox_runner
from signoff.workflows.agent_run import AgentRun
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

HISTORIES = sorted((Path(__file__).parent / "histories").glob("*.json"))


def replayer() -> Replayer:
    """Replays as a worker runs: with its guarded converter (a forged payload in a history reads as refused)."""
    return Replayer(workflows=[AgentRun], data_converter=guarded(pydantic_data_converter),
                    workflow_runner=sandbox_runner())  # fmt: skip


def test_every_history_shape_is_committed() -> None:
    assert {p.stem for p in HISTORIES} >= {
        "approved", "denied", "timed_out", "continued_as_new", "verified", "timeout_grant", "mcp",
        "signed", "sealed_continued_as_new", "continued_run", "strangers", "paused_deadline",
    }  # fmt: skip


def test_the_verified_history_holds_its_verifications() -> None:
    """Replay needs no keys: each token's verification is a recorded local-activity marker."""
    history = WorkflowHistory.from_json("verified", (Path(__file__).parent / "histories" / "verified.json").read_text())
    markers = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED]
    assert len(markers) == 3  # the refused token and two valid ones


def _markers(name: str) -> list[str]:
    """The local activities and patches a committed history recorded, by marker name."""
    history = WorkflowHistory.from_json(name, (Path(__file__).parent / "histories" / f"{name}.json").read_text())
    return [e.marker_recorded_event_attributes.marker_name for e in history.events
            if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED]  # fmt: skip


def test_the_v3_histories_hold_the_seal_and_its_check() -> None:
    assert _markers("sealed_continued_as_new") == ["core_patch", "core_local_activity"]  # the patch, the seal
    assert _markers("continued_run") == ["core_patch", "core_local_activity"]  # the patch, the check
    assert set(_markers("signed")) == {"core_local_activity"}  # verifications only: signed decisions need no patch


@pytest.mark.parametrize("path", HISTORIES, ids=[p.stem for p in HISTORIES])
async def test_committed_history_replays(path: Path) -> None:
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    await replayer().replay_workflow(history)


async def test_run_completes_with_every_step_replayed(client: Client, task_queue: str, tmp_path: Path) -> None:
    def script(request: ScriptedRequest) -> Reply:
        if request.round == 1:
            return Reply.tool_calls([call("run_command", "call_1", command="echo a"), call("list_dir", "call_2")])
        return Reply.text("done")

    with ScriptedModelServer(script) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path), max_cached_workflows=0):
            handle = await start_run(client, task_queue)
            await wait_pending(handle)
            await handle.execute_update("submit_tool_approval", {"call_id": "call_1", "approved": True})
            result = await handle.result()
        history = await handle.fetch_history()
    assert result.text == "done" and result.messages[2].content == "exit code: 0\na\n"
    await replayer().replay_workflow(history)
