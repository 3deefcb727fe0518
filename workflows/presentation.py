"""Text for people: the Web UI's current details and readable input errors."""

from __future__ import annotations

import json
from pydantic import ValidationError

from signoff.approvals import ToolApprovalRequest


def describe_pending(workflow_id: str, pending: list[ToolApprovalRequest]) -> str:
    """Markdown for the Web UI: each pending call and copy-paste commands to decide it."""
    if not pending:
        return ""
    lines = [f"**Awaiting approval** for {len(pending)} tool call(s):", ""]
    for request in pending:
        arguments = json.dumps(request.arguments, ensure_ascii=False)
        expires = f" (expires {request.expires_at.isoformat()})" if request.expires_at else ""
        lines.append(f"- `{request.call_id}`: **{request.name}** `{arguments}`{expires}")
    first = pending[0].call_id
    approve = json.dumps({"call_id": first, "approved": True, "approver": "you"})
    deny = json.dumps({"call_id": first, "approved": False, "reason": "why not"})
    lines += [
        "",
        "Approve or deny in this UI with **Send an Update** `submit_tool_approval` (or **Send a Signal**",
        f"`tool_approval`) and input `{approve}`; `\"call_id\": \"*\"` decides every pending call.",
        "",
        "From a terminal:",
        "```",
        f"signoff approve {workflow_id} {first}",
        f"signoff deny {workflow_id} {first} --reason 'why not'",
        f"temporal workflow update execute --workflow-id {workflow_id} --name submit_tool_approval "
        f"--input '{approve}'",
        f"temporal workflow signal --workflow-id {workflow_id} --name tool_approval --input '{deny}'",
        "```",
    ]
    return "\n".join(lines)


def format_validation_error(exc: ValidationError) -> str:
    """`invalid input: options.max_rounds: Input should be ...; prompt: ...`"""
    parts = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(p) for p in error["loc"]) or "input"
        parts.append(f"{where}: {error['msg']}")
    return f"invalid {exc.title}: " + "; ".join(parts)
