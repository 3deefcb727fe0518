"""What tools declare they can do beyond the Tool protocol, and what one that declares nothing gets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from signoff.agent.gate import gated_call_ids, snapshot_of
from signoff.approval.policy import ApprovalPolicy
from signoff.errors import UsageError
from signoff.loop.limits import Limits
from signoff.messages import ToolCall, ToolSpec
from signoff.tools import (
    ApprovalRequiredTool,
    ReadFile,
    RunCommand,
    ToolRegistry,
    ToolResult,
    WorkspaceScope,
    WriteFile,
    tool,
)
from signoff.tools.base import NO_CAPABILITIES, ToolCapabilities, capabilities_of
from signoff.tools.dispatch import execute_call
from signoff.tools.files.filetool import file_tool_executor
from signoff.tools.mcp import MCPToolInfo
from signoff.tools.mcp.sessions import MCPSessions
from signoff.tools.mcp.tool import rebuilt_tools
from signoff.tools.preview import gather

ALICE = ApprovalPolicy(approvers=("alice",))


class CloseTicket:
    """A user's tool written against the public protocol alone: it declares nothing more."""

    name, description, kind, idempotent = "close_ticket", "Close a ticket", "function", True
    parameters: dict[str, Any] = {"type": "object", "properties": {"id": {"type": "integer"}}}  # noqa: RUF012

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def requires_approval(self, arguments: dict[str, Any]) -> bool:
        return int(arguments.get("id", 0)) > 100

    async def execute(self, arguments: dict[str, Any]) -> ToolResult:
        self.calls.append(arguments)
        return ToolResult(content=f"closed {arguments['id']}")


def call(name: str, call_id: str, **arguments: object) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=json.dumps(arguments))


def test_a_tool_that_declares_nothing_is_gated_per_call_and_nothing_more() -> None:
    close = CloseTicket()
    registry = ToolRegistry([close])
    snapshot = snapshot_of("agent", "", registry, Limits())
    assert capabilities_of(close) is NO_CAPABILITIES
    assert (snapshot.tools[0].gate, snapshot.tools[0].policy) == ("per_call", None)
    assert gated_call_ids(snapshot, registry, [call("close_ticket", "a", id=5), call("close_ticket", "b", id=500)]) == [
        "b"
    ]


async def test_a_tool_that_declares_nothing_is_called_without_approved() -> None:
    close = CloseTicket()
    assert await execute_call(ToolRegistry([close]), call("close_ticket", "a", id=7), approved=True) == "closed 7"
    assert close.calls == [{"id": 7}]


async def test_a_tool_that_declares_nothing_has_no_preview() -> None:
    assert await gather.previews(ToolRegistry([CloseTicket()]), [call("close_ticket", "a", id=500)], ["a"]) == {}


def test_a_function_tool_declares_its_gate_policy_and_preview() -> None:
    @tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    @tool(approval=ALICE, preview=lambda env: f"would deploy to {env}")
    def deploy(env: str) -> str:
        """Deploy."""
        return env

    assert capabilities_of(echo) == ToolCapabilities(gate="never")
    declared = capabilities_of(deploy)
    assert (declared.gate, declared.policy, declared.approval_aware) == ("always", ALICE, None)
    assert declared.preview is not None and declared.preview({"env": "prod"}) == "would deploy to prod"


def test_file_tools_are_told_of_approval_and_preview_on_their_own_pool(tmp_path: Path) -> None:
    scope = WorkspaceScope(tmp_path)
    read, write = capabilities_of(ReadFile(scope)), capabilities_of(WriteFile(scope))
    assert (read.gate, read.preview, read.preview_executor) == ("per_call", None, file_tool_executor())
    assert read.approval_aware is not None and write.approval_aware is not None
    assert write.preview is not None and write.preview_executor is file_tool_executor()


def test_the_approval_wrapper_keeps_the_inner_tools_abilities_but_gates_every_call(tmp_path: Path) -> None:
    inner = WriteFile(WorkspaceScope(tmp_path))
    declared = capabilities_of(ApprovalRequiredTool(inner, ALICE))
    assert (declared.gate, declared.policy) == ("always", ALICE)
    assert declared.approval_aware is not None and declared.preview_executor is file_tool_executor()
    assert declared.preview is not None and declared.preview({"path": "x", "content": ""}) == inner.preview(
        {"path": "x", "content": ""}
    )


def test_the_approval_wrapper_of_a_tool_that_is_not_told_of_approval_tells_it_nothing() -> None:
    declared = capabilities_of(ApprovalRequiredTool(CloseTicket()))
    assert declared == ToolCapabilities(gate="always")


def test_run_command_declares_nothing(tmp_path: Path) -> None:
    assert capabilities_of(RunCommand(WorkspaceScope(tmp_path))) is NO_CAPABILITIES


async def test_an_mcp_tool_declares_its_listing_gate_and_is_told_of_approval() -> None:
    spec = ToolSpec(name="mcp__notes__read", description="Read.", parameters={"type": "object"})
    sessions = MCPSessions()
    try:
        trusted = MCPToolInfo(server="notes", tool="read", trusted=True, annotations={"readOnlyHint": True})
        untrusted = trusted.model_copy(update={"trusted": False})
        tools = rebuilt_tools([(spec, trusted), (spec, untrusted)], {}, sessions)
    finally:
        await sessions.aclose()
    assert [capabilities_of(t).gate for t in tools] == ["never", "always"]
    assert all(capabilities_of(t).approval_aware is not None for t in tools)


@pytest.mark.parametrize("gate", ["sometimes", "", "ALWAYS"])
def test_a_gate_that_is_not_one_of_the_three_is_refused_when_declared(gate: str) -> None:
    with pytest.raises(UsageError, match="'always', 'never' or 'per_call'"):
        ToolCapabilities(gate=gate)  # type: ignore[arg-type]


def test_a_policy_that_is_not_an_approval_policy_is_refused_when_declared() -> None:
    with pytest.raises(UsageError, match="an ApprovalPolicy, not dict"):
        ToolCapabilities(policy={"approvers": ["alice"]})  # type: ignore[arg-type]


def test_the_registry_refuses_a_tool_whose_capabilities_are_not_a_tool_capabilities() -> None:
    class Misdeclared(CloseTicket):
        capabilities = {"gate": "never"}  # noqa: RUF012

    with pytest.raises(UsageError, match="`capabilities` must be a ToolCapabilities, not dict"):
        ToolRegistry([Misdeclared()])
