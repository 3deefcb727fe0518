"""Transcripts and snapshots travel by reference, and a new worker still gets them right."""

from __future__ import annotations

import json
from pathlib import Path

from temporalio.client import Client

from signoff.agent.builder import AgentBuilder
from signoff.loop.transcript import TranscriptDelta
from signoff.tools import WorkspaceScope, default_tools
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


def gate_then_text(request: ScriptedRequest) -> Reply:
    if request.round == 1:
        return Reply.tool_calls([call("run_command", "call_1", command="echo hi")])
    return Reply.text("done")


async def test_paused_run_keeps_its_snapshot_when_worker_config_changes(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    changed = (
        AgentBuilder("default")
        .with_instructions("NEW INSTRUCTIONS")
        .with_tools(default_tools(WorkspaceScope(tmp_path))[:2])
        .build()
    )
    with ScriptedModelServer(gate_then_text) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_run(client, task_queue)
            await wait_pending(handle)
        async with running_worker(client, task_queue, model, {"default": changed}):
            await handle.execute_update("submit_tool_approval", {"call_id": "call_1", "approved": True})
            result = await handle.result()
    first, second = model.requests
    assert result.text == "done"
    assert second.messages[0] == first.messages[0] and "NEW INSTRUCTIONS" not in (second.messages[0].content or "")
    assert second.tools == first.tools == ["run_command", "read_file", "list_dir", "write_file", "remove_path"]
    assert second.messages[1:] == result.messages[:3]


async def test_model_inputs_in_history_carry_only_new_messages(client: Client, task_queue: str, tmp_path: Path) -> None:
    with ScriptedModelServer(gate_then_text) as model:
        async with running_worker(client, task_queue, model, agents_for(tmp_path)):
            handle = await start_run(client, task_queue, "a prompt")
            await wait_pending(handle)
            await handle.execute_update("submit_tool_approval", {"call_id": "call_1", "approved": True})
            await handle.result()
            history = await handle.fetch_history()
    inputs = [
        json.loads(e.activity_task_scheduled_event_attributes.input.payloads[0].data)
        for e in history.events
        if e.activity_task_scheduled_event_attributes.activity_type.name == "signoff.chat"
    ]
    deltas = [TranscriptDelta.model_validate(i["transcript"]) for i in inputs]  # payloads leave base 0 out
    assert [(d.base, [m.role for m in d.messages]) for d in deltas] == [(0, ["user"]), (2, ["tool"])]
    assert all("instructions" not in i and "tools" not in i for i in inputs)
