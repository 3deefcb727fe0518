"""Effect previews on the real dev server: what a pending write or removal would do, in the
`pending_approvals` query and in the Web UI's current details."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client

from signoff.agent.builder import AgentBuilder
from signoff.chat.config import LLMConfig
from signoff.chat.openai import OpenAIChatClient
from signoff.contract import RunOptions
from signoff.messages import ApprovalRequestEvent, ChatMessage
from signoff.tools import ApprovalRequiredTool, ReadFile, WorkspaceScope, WriteFile, default_tools
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


def outside_effects(outside: Path) -> Callable[[ScriptedRequest], Reply]:
    def script(request: ScriptedRequest) -> Reply:
        if request.round == 1:
            return Reply.tool_calls(
                [
                    call(
                        "write_file",
                        "call_w",
                        path=str(outside / "hosts"),
                        content="127.0.0.1 localhost\n10.0.0.9 db\n",
                    ),
                    call("remove_path", "call_r", path=str(outside / "cache"), recursive=True),
                ]
            )
        return Reply.text(" | ".join(m.content or "" for m in request.messages if m.role == "tool"))

    return script


async def test_pending_writes_and_removals_carry_their_previews(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    (outside / "cache" / "objects").mkdir(parents=True)
    workspace.mkdir()
    (outside / "hosts").write_text("127.0.0.1 localhost\n")
    (outside / "cache" / "index").write_bytes(b"i" * 2048)
    (outside / "cache" / "objects" / "ab12").write_bytes(b"o" * 100)
    with ScriptedModelServer(outside_effects(outside)) as model:
        async with running_worker(client, task_queue, model, agents_for(workspace)):  # approve_outside
            handle = await start_run(client, task_queue, options=RunOptions(max_rounds=3))
            write, remove = await wait_pending(handle, 2)
            metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
            assert (outside / "hosts").read_text() == "127.0.0.1 localhost\n"  # previews change nothing
            await handle.signal("tool_approval", {"call_id": "*", "approved": True, "approver": "alice"})
            result = await handle.result()
    assert write["preview"] == (  # outside the workspace: the new content, not the file's current one
        f"--- {outside}/hosts (now: 20 bytes, not shown: the file is outside the workspace)\n"
        f"+++ {outside}/hosts (after write_file: 32 bytes, 2 lines)\n"
        "+127.0.0.1 localhost\n"
        "+10.0.0.9 db"
    )
    assert remove["preview"] == (
        f"remove_path would delete the directory {outside}/cache and everything in it: "
        "2 files, 1 directory, 0 symbolic links; 2,148 bytes in all.\n"
        "  (entries not listed: the directory is outside the workspace)"
    )
    details = metadata.current_details  # what the Web UI shows as the run's current details
    assert "  preview:" in details and "  +10.0.0.9 db" in details and "2,148 bytes in all" in details
    assert result.messages[-1] == ChatMessage.assistant(
        f"wrote 32 bytes to {outside}/hosts | removed directory {outside}/cache and everything in it"
    )
    assert not (outside / "cache").exists()


async def test_the_in_process_agent_shows_the_same_preview(tmp_path: Path) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    (outside / "cache" / "objects").mkdir(parents=True)
    workspace.mkdir()
    (outside / "hosts").write_text("127.0.0.1 localhost\n")
    with ScriptedModelServer(outside_effects(outside)) as model:
        client = OpenAIChatClient(LLMConfig(base_url=model.base_url, model="scripted"))
        tools = default_tools(WorkspaceScope(workspace))
        agent = AgentBuilder("ops").with_chat_client(client).with_tools(tools).build()
        events = [event async for event in agent.run("tidy up")]
    requests = {e.request.call_id: e.request.preview for e in events if isinstance(e, ApprovalRequestEvent)}
    assert requests["call_w"] is not None and requests["call_w"].endswith("\n+127.0.0.1 localhost\n+10.0.0.9 db")
    assert requests["call_r"] == (
        f"remove_path would delete the directory {outside}/cache and everything in it: "
        "0 files, 1 directory, 0 symbolic links; 0 bytes in all.\n"
        "  (entries not listed: the directory is outside the workspace)"
    )


async def test_a_gated_write_inside_the_workspace_shows_its_diff(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    """Where the file is readable without approval anyway (the workspace), the preview is a diff."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "hosts").write_text("127.0.0.1 localhost\n")
    scope = WorkspaceScope(workspace)
    careful = AgentBuilder("careful").with_tools([ApprovalRequiredTool(WriteFile(scope)), ReadFile(scope)]).build()

    def script(request: ScriptedRequest) -> Reply:
        if request.round == 1:
            new = "127.0.0.1 localhost\n10.0.0.9 db\n"
            return Reply.tool_calls([call("write_file", "call_w", path="hosts", content=new)])
        return Reply.text("done")

    with ScriptedModelServer(script) as model:
        async with running_worker(client, task_queue, model, {"careful": careful}):
            handle = await start_run(client, task_queue, agent="careful")
            (write,) = await wait_pending(handle)
            await handle.terminate()
    assert write["preview"] == (
        "--- hosts (now: 20 bytes, 1 line)\n"
        "+++ hosts (after write_file: 32 bytes, 2 lines)\n"
        "@@ -1 +1,2 @@\n"
        " 127.0.0.1 localhost\n"
        "+10.0.0.9 db"
    )
