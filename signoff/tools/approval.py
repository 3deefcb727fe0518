"""`ApprovalRequiredTool`: every call of the wrapped tool waits for a human."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from signoff.approval.policy import ApprovalPolicy
from signoff.tools.base import Tool, ToolCapabilities, ToolResult, capabilities_of


class ApprovalRequiredTool:
    """Forwards everything to `inner`; only `requires_approval` answers True.

    The model sees the same name, description and schema, and an approved call
    runs exactly as the inner tool would: keyword options of `execute` (such as
    `approved=` for tools whose capabilities are `approval_aware`) are passed through,
    and the inner tool's capabilities are its own but for the gate (`always`) and the
    policy (this wrapper's).

    Args:
        inner: the tool whose every call waits for a person.
        policy: who may decide its calls, how many must agree, what a timeout does
            (None: anyone, unless the worker's policy file says otherwise).
    """

    # Declared for type checkers, never assigned: reads fall through to `__getattr__`,
    # so the wrapper always shows the inner tool's current values.
    name: str
    description: str
    parameters: dict[str, Any]
    idempotent: bool
    kind: str

    def __init__(self, inner: Tool, policy: ApprovalPolicy | None = None) -> None:
        self.inner = inner
        self.approval_policy = policy

    def __getattr__(self, attribute: str) -> Any:
        if attribute in ("inner", "approval_policy"):  # not set yet (e.g. while copying): avoid recursing
            raise AttributeError(attribute)
        return getattr(self.inner, attribute)

    @property
    def capabilities(self) -> ToolCapabilities:
        inner = capabilities_of(self.inner)
        aware = None if inner.approval_aware is None else self.execute
        return replace(inner, gate="always", policy=self.approval_policy, approval_aware=aware)

    async def execute(self, arguments: dict[str, Any], **options: Any) -> ToolResult:
        return await self.inner.execute(arguments, **options)

    def requires_approval(self, arguments: dict[str, Any]) -> bool:
        return True

    def __repr__(self) -> str:
        return f"ApprovalRequiredTool({self.inner!r})"
