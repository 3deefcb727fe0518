"""How the inbox's pages show things: Jinja2 with autoescaping, and inert text filters.

Everything a model, a tool or an approver wrote (arguments, previews, transcript, reasons,
names, ids) reaches HTML through autoescaping (no markup), is never read as markdown, and
is `neutralise`d first: control characters, escape sequences and bidi overrides appear as
visible escapes (`\\x1b`, `\\u202e`), as the CLI shows them. The edited-arguments field is
JSON with every non-ASCII character escaped, so what it holds parses back to exactly the
arguments (nothing hidden is in it, and nothing is lost).
"""

from __future__ import annotations

import difflib
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import jinja2

from signoff.approval.authority import allowed_approvers
from signoff.approval.requests import ToolApprovalRequest
from signoff.text.neutral import neutralise
from signoff.views.links import inbox_path
from signoff.views.render import arguments_text
from signoff.views.text import auto_text, format_age, format_deadline, policy_text, votes_text

HERE = Path(__file__).parent
ARGUMENTS_SUMMARY_CHARS = 160


def inert(value: Any) -> str:
    """Any value as inert text (None as empty)."""
    return "" if value is None else neutralise(value if isinstance(value, str) else str(value))


def pretty(value: Any) -> str:
    """Arguments whole, as indented JSON (the raw text when not JSON), inert."""
    return neutralise(arguments_text(value, indent=2))


def one_line(value: Any) -> str:
    """Arguments on one line, inert, whole."""
    return " ".join(neutralise(arguments_text(value)).split())


def summary(value: Any, limit: int = ARGUMENTS_SUMMARY_CHARS) -> str:
    """Arguments on one line, cut to `limit` characters (the call page shows them whole)."""
    text = one_line(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def fits(value: Any, limit: int = ARGUMENTS_SUMMARY_CHARS) -> bool:
    """Whether `summary` shows the arguments whole (False: the list row cuts them)."""
    return len(one_line(value)) <= limit


def arguments_diff(before: Any, after: Any) -> list[tuple[str, str]]:
    """The model's arguments against the edited ones, as `diff_lines` of a unified diff of
    their pretty JSON, with every line of both in it (nothing of either is left out)."""
    old, new = pretty(before).splitlines(), pretty(after).splitlines()
    labels = "the model's arguments", "the edited arguments"
    lines = difflib.unified_diff(old, new, *labels, n=len(old) + len(new), lineterm="")
    return diff_lines("\n".join(lines))


def editable(value: Any) -> str:
    """The arguments as the edit field holds them: pretty JSON, ASCII only (exact round trip)."""
    return json.dumps(value, indent=2, ensure_ascii=True)


def diff_lines(preview: str) -> list[tuple[str, str]]:
    """A preview's lines with a class each: `add`, `del`, `hunk`, `file` for a unified diff."""
    lines = neutralise(preview).splitlines()
    is_diff = any(line.startswith("@@") for line in lines) or (len(lines) > 1 and lines[0].startswith("--- "))
    if not is_diff:
        return [("", line) for line in lines]

    def kind(line: str) -> str:
        if line.startswith(("+++ ", "--- ")):
            return "file"
        return {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "")

    return [(kind(line), line) for line in lines]


def who_may(request: ToolApprovalRequest) -> str:
    """`alice, group:sre (2 of them)` or `anyone`."""
    approvers = allowed_approvers(request.policy, request.escalated)
    who = ", ".join(inert(a) for a in approvers) or "anyone"
    quorum = f" ({request.policy.quorum} of them)" if request.policy.quorum > 1 else ""
    return who + quorum + (", verified" if request.policy.verified else "")


def stamp(moment: datetime | None) -> str:
    return moment.isoformat() if moment else ""


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        inert=inert,
        pretty=pretty,
        summary=summary,
        fits=fits,
        editable=editable,
        diff_lines=diff_lines,
        age=format_age,
        deadline=format_deadline,
        stamp=stamp,
        policy_text=policy_text,
        auto_text=auto_text,
        votes_text=votes_text,
        who_may=who_may,
    )
    env.globals["inbox_path"] = inbox_path
    return env
