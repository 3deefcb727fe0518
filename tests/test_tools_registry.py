"""ToolRegistry and ApprovalRequiredTool (and the gate, which alone says which of its calls need approval)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from signoff.agent.gate import gated_call_ids, snapshot_of
from signoff.errors import UsageError
from signoff.loop.limits import Limits
from signoff.messages import ToolCall, ToolSpec
from signoff.tools import ApprovalRequiredTool, ToolRegistry, ToolResult, tool


@tool(idempotent=False, kind="command")
def deploy(env: str) -> str:
    """Deploy the service."""
    return f"deployed to {env}"


@tool
def echo(text: str) -> str:
    """Echo the text."""
    return text


class Recorder:
    """A tool that records its calls and carries an extra attribute."""

    name = "recorder"
    description = "Records calls"
    idempotent = True
    kind = "file"
    extra = "inner's own"

    def __init__(self) -> None:
        self.parameters: dict[str, Any] = {"type": "object", "properties": {}}
        self.calls: list[dict[str, Any]] = []

    async def execute(self, arguments: dict[str, Any]) -> ToolResult:
        self.calls.append(arguments)
        return ToolResult(content="recorded")

    def requires_approval(self, arguments: dict[str, Any]) -> bool:
        return False


def test_approval_wrapper_forwards_the_description_of_the_tool() -> None:
    wrapped = ApprovalRequiredTool(deploy)
    assert (wrapped.name, wrapped.description, wrapped.parameters) == (
        deploy.name,
        deploy.description,
        deploy.parameters,
    )
    assert (wrapped.idempotent, wrapped.kind) == (False, "command")


async def test_approval_wrapper_executes_the_inner_tool() -> None:
    inner = Recorder()
    result = await ApprovalRequiredTool(inner).execute({"x": 1})
    assert (result.content, inner.calls) == ("recorded", [{"x": 1}])


def test_approval_wrapper_always_requires_approval() -> None:
    assert ApprovalRequiredTool(Recorder()).requires_approval({})


def test_approval_wrapper_forwards_attributes_beyond_the_protocol() -> None:
    assert ApprovalRequiredTool(Recorder()).extra == "inner's own"


def test_registry_rejects_a_duplicate_name() -> None:
    registry = ToolRegistry([echo])
    with pytest.raises(UsageError, match="'echo' is already registered"):
        registry.register(ApprovalRequiredTool(echo))


def test_registry_rejects_what_is_not_a_tool() -> None:
    with pytest.raises(UsageError, match="not a Tool"):
        ToolRegistry().register(lambda: None)  # type: ignore[arg-type]


def test_registry_specs_follow_registration_order() -> None:
    assert ToolRegistry([echo, deploy]).specs() == [
        ToolSpec(name="echo", description="Echo the text.", parameters=echo.parameters),
        ToolSpec(name="deploy", description="Deploy the service.", parameters=deploy.parameters),
    ]


def test_registry_finds_tools_by_name() -> None:
    registry = ToolRegistry([echo])
    assert (registry.get("echo"), registry.get("nope"), "echo" in registry) == (echo, None, True)
    assert (registry.names(), list(registry), len(registry)) == (["echo"], [echo], 1)


def gated(registry: ToolRegistry, *calls: tuple[str, dict[str, Any]]) -> list[str]:
    """The names of the calls the gate holds under a snapshot of `registry` (one call a name)."""
    snapshot = snapshot_of("agent", "", registry, Limits())
    asked = [ToolCall(id=name, name=name, arguments=json.dumps(arguments)) for name, arguments in calls]
    return gated_call_ids(snapshot, registry, asked)


def test_the_gate_holds_the_wrapped_tools_calls_and_lets_the_others_run() -> None:
    registry = ToolRegistry([echo, ApprovalRequiredTool(deploy)])
    assert gated(registry, ("deploy", {"env": "prod"}), ("echo", {"text": "hi"})) == ["deploy"]


def test_the_gate_never_holds_a_call_of_an_unknown_tool() -> None:
    assert gated(ToolRegistry(), ("rm_everything", {})) == []
