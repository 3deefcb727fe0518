"""What a person decides on: pending calls, the approval block and prompt, and the answer.

Everything here shows a call *whole*: its arguments (pretty JSON when long, wrapped,
never cut), digest, policy, votes, deadline and preview, each value made inert.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from signoff.approval.requests import ToolApprovalRequest
from signoff.cli.style import Style
from signoff.contract import DecisionAck
from signoff.views.howto import decide_commands
from signoff.views.links import inbox_link
from signoff.views.notices import PATH_MARK
from signoff.views.text import (
    auto_text,
    format_age,
    format_deadline,
    policy_text,
    safe,
    text_lines,
    value_lines,
    votes_text,
)

PAD = "    "
LABEL = 10
ABOUT_MORE = "| "
"""What each further line of a tool's description starts with."""
_OUTCOMES = {
    "approved": ("approved", "green"),
    "denied": ("denied", "red"),
    "vote": ("vote counted (quorum not reached yet) on", "yellow"),
}


@dataclass(frozen=True)
class PendingRow:
    """One waiting call of a run, or (no worker answered) the run with the tools it waits on."""

    workflow_id: str
    request: ToolApprovalRequest | None = None
    note: str = ""
    tools: list[str] = field(default_factory=list)
    paused: bool = False
    top: str | None = None
    """For a sub-agent's call listed by an ancestor: the run that listed it (`workflow_id` waits)."""

    @property
    def path(self) -> str | None:
        """The top run, the runs down to the one that waits, the tool, joined by `PATH_MARK` (a
        sub-agent's call; None for a run's own)."""
        if self.top is None or self.request is None or not self.request.path:
            return None
        return PATH_MARK.join(safe(part) for part in [self.top, *self.request.path, self.request.name])


def row(name: str, value: str | Sequence[str]) -> list[str]:
    """`    name       value`, further lines of the value as given (already indented)."""
    lines = [value] if isinstance(value, str) else list(value) or [""]
    return [f"{PAD}{name:<{LABEL}} {lines[0]}", *lines[1:]]


def _value(name: str, value: object, width: int | None) -> list[str]:
    lead = f"{PAD}{name:<{LABEL}} "
    return row(name, value_lines(value, width, len(lead), " " * len(lead)))


def call_rows(request: ToolApprovalRequest, width: int | None, now: datetime | None = None) -> list[str]:
    """Arguments, digest, policy, votes, deadline and preview of one call."""
    lines = _value("arguments", request.arguments, width)
    lines += row("digest", request.arguments_digest or "(none)")
    lines += row("policy", policy_text(request.policy))
    if request.votes:
        lines += row("votes", f"{votes_text(request.votes)} of {request.policy.quorum}")
    lines += row("deadline", format_deadline(request.expires_at, now) + (" (escalated)" if request.escalated else ""))
    if request.preview:
        lead = " " * (len(PAD) + LABEL + 1)
        shown = text_lines(request.preview, width, lead)
        lines += row("preview", [shown[0][len(lead) :], *shown[1:]])
    if request.similar_pattern:
        lines += row("similar", safe(request.similar_pattern))
    if request.auto is not None:
        lines += row("auto", safe(auto_text(request.auto)))
    if request.asks_input:  # an MCP server's question: answered with `signoff answer`, not approved
        lines += row("asks", safe(request.message or ""))
        if request.url is not None:
            lines += row(
                "sends to", f"{safe(request.url_host or '?')} ({safe(request.url)}); answer --json true to consent"
            )
        else:
            lines += _value("schema", request.input_schema, width)
        lines += row("answer", "signoff answer RUN CALL --json '{...}' | --decline | --cancel")
    return lines


def _about(request: ToolApprovalRequest, width: int | None) -> list[str]:
    """The tool's description (for an MCP tool: its server, annotations and whether they are trusted).

    Its further lines start with `| `: a server writes the description, and a line of it that
    looks like a row (`policy     approved by admin`) must read as part of `about`."""
    if not request.description:
        return []
    lead = " " * (len(PAD) + LABEL + 1)
    first, *more = request.description.split("\n")  # only newlines: `\r` and the like are shown as escapes
    shown = text_lines("\n".join([first, *(ABOUT_MORE + line for line in more)]), width, lead)
    return row("about", [shown[0][len(lead) :], *shown[1:]])


def approval_block(
    request: ToolApprovalRequest,
    workflow_id: str,
    link: str | None,
    style: Style,
    options: str = "",
    width: int | None = None,
    inbox: str | None = None,
) -> list[str]:
    """What a person needs to decide one call: the call whole, where it is, how to decide.

    `inbox` is the inbox's root (`SIGNOFF_INBOX_URL`): the block links to the call's page there."""
    approve, deny = decide_commands(workflow_id, request.call_id, request.arguments_digest, options)
    tool = style.paint(safe(request.name), "bold") + (f"  {safe(request.description)}" if request.description else "")
    lines = [f"{style.sym('wait', 'yellow')} {style.paint('Approval needed', 'yellow', 'bold')}", *row("tool", tool)]
    lines += call_rows(request, width)
    lines += row("run", safe(workflow_id)) + row("call", safe(request.call_id))
    lines += row("Web UI", link) if link else []
    page = inbox_link(workflow_id, request.call_id, inbox)
    lines += row("inbox", style.paint(page, "cyan")) if page else []
    lines += row("approve", style.paint(safe(approve), "cyan")) + row("deny", style.paint(safe(deny), "cyan"))
    return lines


def approval_prompt(request: ToolApprovalRequest, style: Style, width: int | None = None) -> str:
    """`Approve run_command {"command": "ls"}? [y/n/reason] `, the arguments whole."""
    head = f"Approve {safe(request.name)} "
    arguments = value_lines(request.arguments, width, len(head), "")
    arguments[-1] += "? [y/n/reason] "
    return style.paint("Approve", "bold") + head[len("Approve") :] + "\n".join(arguments)


def call_header(workflow_id: str, request: ToolApprovalRequest, style: Style, now: datetime | None = None) -> str:
    """`run-1  call_1  run_command  waiting 42s`"""
    age = format_age(request.requested_at, now)
    parts = [safe(workflow_id), safe(request.call_id), style.paint(safe(request.name), "bold"), f"waiting {age}"]
    return "  ".join(parts)


def shown_call(
    workflow_id: str, request: ToolApprovalRequest, style: Style, width: int | None, now: datetime | None = None
) -> list[str]:
    """One call whole under its header (what `pending`, bulk decisions and refusals print)."""
    return [call_header(workflow_id, request, style, now), *_about(request, width), *call_rows(request, width, now)]


def render_pending(
    rows: Iterable[PendingRow],
    style: Style,
    width: int | None = None,
    now: datetime | None = None,
    inbox: str | None = None,
) -> list[str]:
    """Every waiting call, whole, one block each (with its page in the inbox at `inbox`)."""
    lines: list[str] = []
    for item in rows:
        if item.request is None:
            tools = ", ".join(safe(t) for t in item.tools) or "?"
            lines += [f"{safe(item.workflow_id)}  ?  {tools}  {item.note}", ""]
        else:
            page = inbox_link(item.workflow_id, item.request.call_id, inbox)
            lines += [
                *shown_call(item.workflow_id, item.request, style, width, now),
                *(row("path", item.path) if item.path else []),
                *(row("inbox", page) if page else []),
                "",
            ]
    return lines[:-1] if lines else ["No run is awaiting approval."]


def render_ack(ack: DecisionAck, style: Style, width: int | None = None) -> list[str]:
    """Each decided call with its tool, arguments (whole) and outcome; then what still waits."""
    lines: list[str] = []
    for call in ack.decided:
        verb, colour = _OUTCOMES.get(call.outcome, (call.outcome, "yellow"))
        head = f"{style.paint(safe(verb), colour)} {safe(call.call_id)}: {safe(call.name)} "
        runs = call.edited_arguments if call.edited_arguments is not None else call.arguments
        arguments = value_lines(runs, width, len(head), PAD)
        lines += [head + arguments[0], *arguments[1:]]
        if call.edited_arguments is not None:  # what runs is the edit; say what it replaced
            asked = value_lines(call.arguments, width, len(PAD) + 20, PAD)
            lines += [f"{PAD}(edited; the model asked {asked[0]}", *asked[1:]]
            lines[-1] += ")"
    decided = {call.call_id for call in ack.decided}
    lines += [f"decided {safe(call_id)}" for call_id in ack.accepted if call_id not in decided]
    pending = f"still pending: {', '.join(safe(p) for p in ack.pending)}" if ack.pending else "nothing else pending"
    return [*lines, pending]
