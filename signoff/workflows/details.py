"""The Web UI's current details of a waiting run: each pending call and how to decide it.

Markdown the Temporal Web UI renders. Everything in it that a model, a client or an
approver chose (call ids, tool names, approvers' names, arguments, previews, the
workflow id in the commands) is shown as text, never read as markdown: inline values
are backslash-escaped or put in code spans longer than any run of backticks they hold,
blocks are fenced with their own fences broken, and control, bidi and zero-width
characters appear as escapes (`signoff.text.neutral`). Long blocks are cut with a note
saying where the whole is.
"""

from __future__ import annotations

import json
import re
import shlex

from signoff.approval.requests import ToolApprovalRequest
from signoff.text.neutral import neutralise
from signoff.views.howto import decide_commands, decision_input, temporal_commands

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
        f"`tool_approval`), input e.g. {code(decision_input(first.call_id, first.arguments_digest, True))}.",
    ]
    signed = [r.call_id for r in pending if r.policy.verified]
    if signed:
        lines += [
            f"Calls under a verified policy ({', '.join(code(c) for c in signed)}) need a signed decision:",
            f"{code(f'signoff sign {shlex.quote(workflow_id)} {signed[0]}')} prints one to paste here "
            "(`signoff approve` signs and sends).",
        ]
    lines += [
        "",
        "From a terminal:",
        "```",
        *(_fenced(line) for line in decide_commands(workflow_id, first.call_id, first.arguments_digest)),
        *(_fenced(line) for line in temporal_commands(workflow_id, first.call_id, first.arguments_digest)),
        "```",
    ]
    return "\n".join(lines)


def code(text: str) -> str:
    """`text` as an inline code span: inert, on one line, delimited by more backticks than it holds."""
    text = neutralise(text).replace("\n", "\\n")
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def plain(text: str) -> str:
    """`text` as literal markdown text: every ASCII punctuation escaped, inert, on one line."""
    return re.sub(r"([!-/:-@\[-`{-~])", r"\\\1", neutralise(text).replace("\n", " "))


def _call(request: ToolApprovalRequest) -> list[str]:
    arguments = _cut(json.dumps(request.arguments, ensure_ascii=True, indent=1))
    expires = f", expires {request.expires_at.isoformat()}" if request.expires_at else ""
    policy = request.policy
    who = ", ".join(plain(a) for a in policy.approvers) or "anyone"
    rules = f"approvers: {who}; quorum {policy.quorum}" + ("; verified" if policy.verified else "")
    voters = ", ".join(plain(v.approver or "?") for v in request.votes)
    votes = f"; votes so far: {voters}" if request.votes else ""
    lines = [
        f"- {code(request.call_id)}: **{plain(request.name)}**{expires} ({rules}{votes})",
        *([f"  {_inline(request.description)}"] if request.description else []),
        f"  digest {code(request.arguments_digest)}",
        "  ```json",
        *("  " + line for line in arguments.splitlines()),
        "  ```",
    ]
    if request.preview:
        lines += ["  preview:", "  ```", *("  " + line for line in _cut(request.preview).splitlines()), "  ```"]
    return lines


def _inline(text: str) -> str:
    """Text as one inert code span, cut short (a tool's description may come from an MCP server)."""
    flat = " ".join(text.split())
    return code(flat if len(flat) <= SHOWN_CHARS // 4 else flat[: SHOWN_CHARS // 4] + "…")


def _fenced(text: str) -> str:
    """`text` for a fenced block: inert, and no fence of its own can end ours."""
    return neutralise(text).replace("```", "`\u200b``")


def _cut(text: str) -> str:
    text = _fenced(text)
    if len(text) <= SHOWN_CHARS:
        return text
    return text[:SHOWN_CHARS] + f"\n... {len(text) - SHOWN_CHARS:,} more characters: see `signoff pending`"
