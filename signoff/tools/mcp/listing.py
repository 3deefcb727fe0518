"""An MCP tool as a run was shown it, and what its server's trust lets its annotations decide.

A tool's listing (its server, its own name, its annotations, whether the server was
trusted) is recorded in the run's snapshot with its spec, so a parked run keeps the tool
it was shown and any worker can call it by name. Annotations are hints a server gives
about itself (`readOnlyHint`, `destructiveHint`, `idempotentHint`, `openWorldHint`); the
MCP specification says a client must not rely on those of a server it does not trust, so
here they relax nothing unless the operator marked the server `trusted`:

| the tool declares (server trusted)              | gate   | retried after a lost worker |
| ----------------------------------------------- | ------ | --------------------------- |
| `readOnlyHint: true`, not `destructiveHint: true` | none   | only with `idempotentHint`  |
| `idempotentHint: true`                          | always | yes (up to 3 attempts)      |
| anything else, or any tool of an untrusted server | always | no: at most once            |
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

PREFIX = "mcp__"
_ANNOTATIONS = ("title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
"""The annotations kept from a listing (`ToolAnnotations` in the MCP specification)."""
_FUNCTION_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""What chat-completion providers accept as a function name."""
_DESCRIBED_CHARS = 1_000
"""How much of the server's description of a tool an approval request repeats."""


class MCPToolInfo(BaseModel):
    """Where an MCP tool comes from and what it declared, as the run was shown it.

    Attributes:
        server: the server's name in the configuration.
        tool: the server's own name of the tool (the model's is `mcp__<server>__<tool>`).
        trusted: whether the server was trusted when the tool was listed.
        annotations: the hints the server declared (camelCase, as MCP sends them); only
            those it set.
    """

    model_config = ConfigDict(frozen=True)

    server: str
    tool: str
    trusted: bool = False
    annotations: dict[str, Any] = Field(default_factory=dict)

    @property
    def ungated(self) -> bool:
        """A trusted server's tool that declares it is read-only and not destructive."""
        hints = self.annotations
        return self.trusted and hints.get("readOnlyHint") is True and hints.get("destructiveHint") is not True

    @property
    def gate(self) -> Literal["always", "never"]:
        return "never" if self.ungated else "always"

    @property
    def idempotent(self) -> bool:
        """Whether a call may be retried: a trusted server's tool that declares `idempotentHint: true`."""
        return self.trusted and self.annotations.get("idempotentHint") is True

    def describe(self, description: str) -> str:
        """What an approval request says of the tool: server, tool, annotations, trust, then
        the server's description (shortened)."""
        hints = ", ".join(f"{k}: {_shown(v)}" for k, v in self.annotations.items()) or "no annotations"
        trust = "trusted server" if self.trusted else "untrusted server: annotations shown, not relied on"
        text = f"MCP tool {self.tool!r} of server {self.server!r} ({trust}; {hints})"
        if description:
            short = description if len(description) <= _DESCRIBED_CHARS else description[: _DESCRIBED_CHARS - 1] + "…"
            text += f". {short}"
        return text


def annotations_of(declared: Any) -> dict[str, Any]:
    """The annotations a listed tool declared, camelCase, without those left unset."""
    if declared is None:
        return {}
    dumped = declared.model_dump(by_alias=True, exclude_none=True) if hasattr(declared, "model_dump") else declared
    return {k: dumped[k] for k in _ANNOTATIONS if k in dumped and dumped[k] is not None}


def model_name(server: str, tool: str) -> str:
    """`mcp__<server>__<tool>`, made a valid function name: other characters become `_`,
    and a name over 64 characters is cut and ends in a hash of the whole."""
    name = f"{PREFIX}{server}__{tool}"
    if _FUNCTION_NAME.fullmatch(name):
        return name
    clean = re.sub(r"[^A-Za-z0-9_-]", "_", name)
    if len(clean) <= 64:
        return clean
    return clean[:55] + "_" + hashlib.sha256(name.encode()).hexdigest()[:8]


def _shown(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else repr(value)


__all__ = ["PREFIX", "MCPToolInfo", "annotations_of", "model_name"]
