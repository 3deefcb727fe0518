"""The Tool protocol, what a tool returns, and what a tool declares it can do beyond it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any, Protocol, get_args, runtime_checkable

from pydantic import BaseModel

from signoff.approval.policy import ApprovalPolicy, Gate
from signoff.approval.requests import InputAsked
from signoff.errors import UsageError
from signoff.messages import ToolSpec

Preview = Callable[[dict[str, Any]], "str | Awaitable[str | None] | None"]
"""A tool's preview: a call's arguments in, what the call would do out (None: nothing to say)."""


class ToolResult(BaseModel):
    """What a tool returns. An error is data for the model, not a failed run.

    `input`: the tool has not finished: its MCP server asked a person a question first
    (`input_required`); the run waits for the answer and sends it back (`content` says so)."""

    content: str
    is_error: bool = False
    input: InputAsked | None = None

    @classmethod
    def error(cls, message: str) -> ToolResult:
        return cls(content=message, is_error=True)

    def to_message(self) -> str:
        """The tool message text the model sees (`Error: ...` for an error)."""
        return f"Error: {self.content}" if self.is_error else self.content


@runtime_checkable
class Tool(Protocol):
    """A tool an agent can call.

    A tool may also declare what it can do beyond this protocol: a `capabilities`
    attribute or property holding a `ToolCapabilities` (see `capabilities_of`). A tool
    that declares none is gated per call by `requires_approval`, is never told whether a
    call was approved, and has no preview.

    Attributes:
        name: unique within an agent; what the model calls.
        description: what the model is told the tool does.
        parameters: JSON schema of the arguments object.
        idempotent: whether running it twice is harmless. Non-idempotent tools run
            at most once under Temporal.
        kind: a short label (`"command"`, `"file"`, `"function"`) for operators.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    idempotent: bool
    kind: str

    async def execute(self, arguments: dict[str, Any]) -> ToolResult: ...

    def requires_approval(self, arguments: dict[str, Any]) -> bool: ...


class ApprovalAwareExecute(Protocol):
    """A tool's `execute` that is told whether a person approved the call."""

    def __call__(self, arguments: dict[str, Any], *, approved: bool) -> Awaitable[ToolResult]: ...


@dataclass(frozen=True)
class ToolCapabilities:
    """What a tool can do beyond the `Tool` protocol; each default is "nothing more".

        class Deploy:
            ...  # name, description, parameters, idempotent, kind, execute, requires_approval

            @property
            def capabilities(self) -> ToolCapabilities:
                return ToolCapabilities(gate="always", preview=self.describe)

    Attributes:
        gate: how the tool decides whether a call needs approval (`per_call`: ask
            `requires_approval` with the call's arguments).
        policy: who may decide its calls, how many must agree, what a timeout does
            (None: anyone, unless the worker's policy file says otherwise).
        approval_aware: the `execute` to call with `approved=` (whether a person approved
            this very call), for tools that do more for an approved call (a file tool
            leaving its workspace, an MCP tool); None: `execute` is called without it.
        preview: what a gated call would do, shown to the person deciding. It may block
            (it runs off the event loop) or return an awaitable.
        preview_executor: where `preview` runs (None: asyncio's default executor).

    Raises:
        UsageError: `gate` is not one of `always`, `never`, `per_call`, or `policy` is
            not an `ApprovalPolicy`.
    """

    gate: Gate = "per_call"
    policy: ApprovalPolicy | None = None
    approval_aware: ApprovalAwareExecute | None = None
    preview: Preview | None = None
    preview_executor: Executor | None = None

    def __post_init__(self) -> None:
        if self.gate not in get_args(Gate):
            raise UsageError(f"a tool's gate is 'always', 'never' or 'per_call', not {self.gate!r}")
        if self.policy is not None and not isinstance(self.policy, ApprovalPolicy):
            raise UsageError(f"a tool's approval policy is an ApprovalPolicy, not {type(self.policy).__name__}")


NO_CAPABILITIES = ToolCapabilities()
"""What a tool that declares nothing can do: gated per call, nothing more."""

_UNDECLARED = object()


def capabilities_of(tool: Tool) -> ToolCapabilities:
    """What `tool` declares it can do beyond the `Tool` protocol, in a `capabilities`
    attribute or property (`NO_CAPABILITIES` when it has none).

    Raises:
        UsageError: its `capabilities` is not a `ToolCapabilities`.
    """
    declared = getattr(tool, "capabilities", _UNDECLARED)  # not a runtime-checkable Protocol: too slow per call
    if declared is _UNDECLARED:
        return NO_CAPABILITIES
    if not isinstance(declared, ToolCapabilities):
        raise UsageError(
            f"tool {tool.name!r}: `capabilities` must be a ToolCapabilities, not {type(declared).__name__}"
        )
    return declared


def tool_spec(tool: Tool) -> ToolSpec:
    """The model-facing description of a tool."""
    return ToolSpec(name=tool.name, description=tool.description, parameters=tool.parameters)
