"""What the `signoff` CLI shows: colours, a spinner, events, results and pending calls.

Pure presentation: every function here takes plain JSON values (as the workflow's
queries return them) or the contract's models and returns text, so the CLI's
Temporal code (`client.py`) only decides *when* to show something, never *how*.
Colours and the spinner appear only on a terminal, and colours never when
`NO_COLOR` is set (https://no-color.org).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import shlex
import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TextIO
from urllib.parse import quote

from signoff.contract import AgentRunResult, DecisionAck

DEFAULT_UI_BASE = "http://localhost:8233"
UI_URL_ENV = "SIGNOFF_UI_URL"
LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "[::1]", "0.0.0.0"}
MAX_SHOWN_LINES = 12
MAX_SHOWN_CHARS = 1200

_CODES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "blue": "34", "cyan": "36"}
_FANCY = {"call": "→", "result": "←", "wait": "⏸", "yes": "✔", "no": "✘", "end": "■", "warn": "!"}
_PLAIN = {"call": "->", "result": "<-", "wait": "||", "yes": "+", "no": "x", "end": "#", "warn": "!"}
_FANCY_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_PLAIN_FRAMES = "|/-\\"


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _encodes(stream: TextIO, text: str) -> bool:
    try:
        text.encode(getattr(stream, "encoding", None) or "ascii")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


class Style:
    """ANSI colours (or none) and symbols the stream can encode.

    Attributes:
        colour: whether escape codes are written.
        symbols: the glyphs used for calls, results, decisions... (ASCII when needed).
    """

    def __init__(self, colour: bool = False, fancy: bool = False) -> None:
        self.colour = colour
        self.symbols = _FANCY if fancy else _PLAIN
        self.frames = _FANCY_FRAMES if fancy else _PLAIN_FRAMES

    @classmethod
    def for_stream(cls, stream: TextIO, environ: Mapping[str, str] | None = None) -> Style:
        """Colours on a terminal unless `NO_COLOR` is set; Unicode where the encoding allows."""
        env = os.environ if environ is None else environ
        return cls(colour=_is_tty(stream) and not env.get("NO_COLOR"), fancy=_encodes(stream, "".join(_FANCY.values())))

    def paint(self, text: str, *names: str) -> str:
        """`text` in the named styles (`bold`, `dim`, `red`, `green`, `yellow`, `blue`, `cyan`)."""
        if not self.colour or not names:
            return text
        return f"\033[{';'.join(_CODES[n] for n in names)}m{text}\033[0m"

    def sym(self, name: str, *names: str) -> str:
        """The symbol `name`, painted."""
        return self.paint(self.symbols[name], *names)


class Console:
    """Where the CLI writes: a stream with its style and spinner."""

    def __init__(self, stream: TextIO | None = None, environ: Mapping[str, str] | None = None) -> None:
        self.stream = stream or sys.stdout
        self.style = Style.for_stream(self.stream, environ)
        self.spinner = Spinner(self.stream, _is_tty(self.stream), self.style.frames)

    def print(self, *lines: str) -> None:
        for line in lines:
            self.stream.write(line + "\n")
        self.stream.flush()

    def write(self, text: str) -> None:
        """Text without a newline (a prompt)."""
        self.stream.write(text)
        self.stream.flush()


class Spinner:
    """A one-line animation shown while waiting; nothing at all off a terminal."""

    def __init__(self, stream: TextIO, enabled: bool, frames: str = _PLAIN_FRAMES, interval: float = 0.1) -> None:
        self.stream = stream
        self.enabled = enabled
        self.frames = frames
        self.interval = interval
        self._tick = 0

    async def wait(self, seconds: float, label: str = "", until: asyncio.Future[Any] | None = None) -> None:
        """Wait `seconds`, or less if `until` completes, animating `label` meanwhile."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        try:
            while (remaining := deadline - loop.time()) > 0 and not (until and until.done()):
                self._draw(label)
                step = min(remaining, self.interval if self.enabled else seconds)
                await (asyncio.wait({until}, timeout=step) if until else asyncio.sleep(step))
        finally:  # also on Ctrl-C: leave no half-drawn line behind
            self.clear()

    def _draw(self, label: str) -> None:
        if self.enabled:
            self.stream.write(f"\r{self.frames[self._tick % len(self.frames)]} {label}\033[K")
            self.stream.flush()
            self._tick += 1

    def clear(self) -> None:
        if self.enabled:
            self.stream.write("\r\033[K")
            self.stream.flush()


# --- small formatters --------------------------------------------------------------


def compact_json(value: Any, limit: int = 200) -> str:
    """`value` as one line of JSON, cut at `limit` characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def shorten(text: str, max_lines: int = MAX_SHOWN_LINES, max_chars: int = MAX_SHOWN_CHARS) -> str:
    """At most `max_lines` lines and `max_chars` characters, saying how much was left out."""
    lines = text.rstrip("\n").splitlines() or [""]
    kept = "\n".join(lines[:max_lines])[:max_chars]
    hidden = len(text.rstrip("\n")) - len(kept)
    return kept if hidden <= 0 else f"{kept}\n… ({hidden} more characters)"


def indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in text.splitlines() or [""])


def format_age(requested_at: str | datetime | None, now: datetime | None = None) -> str:
    """How long ago: `42s`, `5m`, `3h`, `2d` (`?` when unknown)."""
    if requested_at is None:
        return "?"
    when = datetime.fromisoformat(requested_at) if isinstance(requested_at, str) else requested_at
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    seconds = max(0, int(((now or datetime.now(UTC)) - when).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def ui_root(address: str, base: str | None = None, environ: Mapping[str, str] | None = None) -> str | None:
    """The Web UI: `SIGNOFF_UI_URL`, else `base`, else localhost:8233 when the server is local."""
    env = os.environ if environ is None else environ
    root = env.get(UI_URL_ENV) or base
    if not root and address.rpartition(":")[0] in LOCAL_HOSTS:
        root = DEFAULT_UI_BASE
    return root.rstrip("/") if root else None


def ui_link(workflow_id: str, namespace: str, address: str, base: str | None = None,
            environ: Mapping[str, str] | None = None) -> str | None:
    """The Web UI page of a run (see `ui_root`); None when no UI is known."""
    root = ui_root(address, base, environ)
    if not root:
        return None
    return f"{root}/namespaces/{quote(namespace, safe='')}/workflows/{quote(workflow_id, safe='')}"


def decide_commands(workflow_id: str, call_id: str, options: str = "") -> tuple[str, str]:
    """The `signoff approve ...` and `signoff deny ...` lines for one call.

    Args:
        options: connection flags to append, e.g. ` --address host:7233`.
    """
    target = f"{shlex.quote(workflow_id)} {shlex.quote(call_id)}"
    return f"signoff approve {target}{options}", f"signoff deny {target} --reason 'why not'{options}"


# --- events --------------------------------------------------------------------------


def render_event(event: Mapping[str, Any], style: Style) -> str | None:
    """One event of the `events` query as text; None for a type this CLI does not know."""
    kind = event.get("type")
    if kind == "text":
        return f"{style.paint('assistant:', 'bold')} " + indent(event["text"], "  ").lstrip()
    if kind == "tool_call":
        call = event["call"]
        name = style.paint(call["name"], "bold")
        return f"{style.sym('call', 'cyan')} {name} {compact_json(call['arguments'])}  {_dim_id(call['id'], style)}"
    if kind == "tool_result":
        head = f"{style.sym('result', 'cyan')} {event['name']} {_dim_id(event['call_id'], style)}"
        return head + "\n" + style.paint(indent(shorten(event["content"])), "dim")
    if kind == "approval_request":
        request = event["request"]
        title = style.paint("approval needed", "yellow", "bold")
        call = f"{request['name']} {compact_json(request['arguments'])}  {_dim_id(request['call_id'], style)}"
        return f"{style.sym('wait', 'yellow')} {title}: {call}"
    if kind == "approval_decision":
        return render_decision(event["record"], style)
    if kind == "decision_ignored":
        return f"{style.sym('warn', 'yellow')} decision ignored: {event['reason']}"
    if kind == "finish":
        tokens = (event.get("usage") or {}).get("total_tokens", 0)
        return f"{style.sym('end', 'blue')} finished: {style.paint(event['reason'], 'bold')} ({tokens} tokens)"
    if kind == "error":
        return f"{style.sym('warn', 'red')} {style.paint('error', 'red', 'bold')}: {event['message']}"
    return None


def _dim_id(call_id: str, style: Style) -> str:
    return style.paint(f"({call_id})", "dim")


def render_decision(record: Mapping[str, Any], style: Style) -> str:
    """`✔ call_1 approved by alice` / `✘ call_1 denied by bob: reason`."""
    by = f" by {record['approver']}" if record.get("approver") else ""
    if record.get("approved"):
        edited = record.get("edited_arguments")
        extra = f" with arguments {compact_json(edited)}" if edited is not None else ""
        return f"{style.sym('yes', 'green')} {record['call_id']} {style.paint('approved', 'green')}{by}{extra}"
    verb = "timed out" if record.get("timed_out") else "denied"
    reason = f": {record['reason']}" if record.get("reason") else ""
    return f"{style.sym('no', 'red')} {record['call_id']} {style.paint(verb, 'red')}{by}{reason}"


def final_text_seqs(events: Sequence[Mapping[str, Any]]) -> set[int]:
    """The seqs of text events directly followed by `finish`: the final answer, shown once at the end."""
    return {a["seq"] for a, b in itertools.pairwise(events) if a.get("type") == "text" and b.get("type") == "finish"}


def gated_call_seqs(events: Sequence[Mapping[str, Any]]) -> set[int]:
    """The seqs of tool calls that have an approval request among `events`: the request shows them."""
    gated = {e["request"]["call_id"] for e in events if e.get("type") == "approval_request"}
    return {e["seq"] for e in events if e.get("type") == "tool_call" and e["call"]["id"] in gated}


def approval_block(request: Mapping[str, Any], workflow_id: str, link: str | None, style: Style,
                   options: str = "") -> list[str]:
    """What a person needs to decide one call: tool, arguments, run, link, commands."""
    approve, deny = decide_commands(workflow_id, request["call_id"], options)
    tool = style.paint(request["name"], "bold")
    if request.get("description"):
        tool += f"  {request['description']}"
    rows = [("tool", tool), ("arguments", compact_json(request["arguments"], 400)),
            ("run", workflow_id), ("call", request["call_id"])]
    rows += [("Web UI", link)] if link else []
    rows += [("approve", style.paint(approve, "cyan")), ("deny", style.paint(deny, "cyan"))]
    title = f"{style.sym('wait', 'yellow')} {style.paint('Approval needed', 'yellow', 'bold')}"
    return [title, *(f"    {name:<10} {value}" for name, value in rows)]


def approval_prompt(request: Mapping[str, Any], style: Style) -> str:
    """`Approve run_command {"command": "ls"}? [y/n/reason] `"""
    return f"{style.paint('Approve', 'bold')} {request['name']} {compact_json(request['arguments'])}? [y/n/reason] "


def render_ack(ack: DecisionAck, approved: bool, style: Style) -> str:
    verb = style.paint("approved", "green") if approved else style.paint("denied", "red")
    decided = ", ".join(ack.accepted) or "nothing"
    pending = f"still pending: {', '.join(ack.pending)}" if ack.pending else "nothing else pending"
    return f"{verb} {decided}; {pending}"


# --- results and pending calls ----------------------------------------------------------


def render_result(result: AgentRunResult, style: Style) -> list[str]:
    """Finish reason, rounds, tokens, each approval, then the final text."""
    reason = result.finish_reason.value
    colour = "green" if reason == "stop" else "yellow"
    head = f"{style.paint('finished', 'bold')}: {style.paint(reason, colour, 'bold')}"
    lines = [f"{head} after {result.rounds} round(s), {result.usage.total_tokens} tokens"]
    if result.approvals:
        lines.append(style.paint("approvals:", "bold"))
        lines += [f"  {render_decision(r.model_dump(mode='json'), style)} ({r.name} {compact_json(r.arguments)})"
                  for r in result.approvals]
    lines.append(style.paint("answer:", "bold"))
    lines.append(indent(result.text or "(no text)", "  "))
    return lines


def render_pending(rows: Iterable[Mapping[str, Any]], style: Style, now: datetime | None = None) -> list[str]:
    """A table of pending calls: run, call, tool, age, arguments."""
    table = [(r["workflow_id"], r.get("call_id") or "?", r.get("name") or "?", format_age(r.get("requested_at"), now),
              compact_json(r["arguments"], 80) if "arguments" in r else r.get("note", "")) for r in rows]
    if not table:
        return ["No run is awaiting approval."]
    header = ("RUN", "CALL", "TOOL", "AGE", "ARGUMENTS")
    widths = [max(len(row[i]) for row in [header, *table]) for i in range(4)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths) + "  {}"
    return [style.paint(fmt.format(*header), "bold")] + [fmt.format(*row) for row in table]
