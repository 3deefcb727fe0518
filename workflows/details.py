"""The Web UI's current details of a waiting run: each pending call and how to decide it.

Markdown the Temporal Web UI renders. Arguments and previews are shown as JSON and
fenced text (inert), cut where very long with a note saying where the whole is.
"""

from __future__ import annotations

import json

from signoff.approvals import ToolApprovalRequest
from signoff.howto import decide_commands, decision_input, temporal_commands

SHOWN_CHARS = 2_000


def describe_pending(workflow_id: str, pending: list[ToolApprovalRequest]) -> str:
    """Markdown: each pending call (tool, description, arguments, digest, policy, preview) and commands."""
    if not pending:
        return ""
    lines = [f"**Awaiting approval** for {len(pending)} tool call(s):", ""]
    for request in pending:
        lines += _call(request)
    first = pending[0]
    lines += [
        "",
        "Decide in this UI with **Send an Update** `submit_tool_approval` (validated; or **Send a Signal**",
        f"`tool_approval`), input e.g. `{decision_input(first.call_id, first.arguments_digest, True)}`.",
    ]
    signed = [r.call_id for r in pending if r.policy.verified]
    if signed:
        lines += [
            f"Calls under a verified policy ({', '.join(f'`{c}`' for c in signed)}) need a signed decision:",
            f"`signoff sign {workflow_id} {signed[0]}` prints one to paste here (`signoff approve` signs and sends).",
        ]
    lines += [
        "",
        "From a terminal:",
        "```",
        *decide_commands(workflow_id, first.call_id, first.arguments_digest),
        *temporal_commands(workflow_id, first.call_id, first.arguments_digest),
        "```",
    ]
    return "\n".join(lines)


def _call(request: ToolApprovalRequest) -> list[str]:
    arguments = _cut(json.dumps(request.arguments, ensure_ascii=True, indent=1))
    expires = f", expires {request.expires_at.isoformat()}" if request.expires_at else ""
    policy = request.policy
    who = ", ".join(policy.approvers) or "anyone"
    rules = f"approvers: {who}; quorum {policy.quorum}" + ("; verified" if policy.verified else "")
    votes = f"; votes so far: {', '.join(v.approver or '?' for v in request.votes)}" if request.votes else ""
    lines = [
        f"- `{request.call_id}`: **{request.name}**{expires} ({rules}{votes})",
        *([f"  {_inline(request.description)}"] if request.description else []),
        f"  digest `{request.arguments_digest}`",
        "  ```json",
        *("  " + line for line in arguments.splitlines()),
        "  ```",
    ]
    if request.preview:
        lines += ["  preview:", "  ```", *("  " + line for line in _cut(request.preview).splitlines()), "  ```"]
    return lines


def _inline(text: str) -> str:
    """Text as one inert code span (a tool's description may come from an MCP server)."""
    flat = " ".join(text.split()).replace("`", "'")
    return f"`{flat if len(flat) <= SHOWN_CHARS // 4 else flat[: SHOWN_CHARS // 4] + '…'}`"


def _cut(text: str) -> str:
    text = text.replace("```", "`\u200b``")  # a fence inside would end ours early
    if len(text) <= SHOWN_CHARS:
        return text
    return text[:SHOWN_CHARS] + f"\n... {len(text) - SHOWN_CHARS:,} more characters: see `signoff pending`"
