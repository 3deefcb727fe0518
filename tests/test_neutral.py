"""Text from models, tools and decisions cannot act on a terminal: the one neutralising function."""

from __future__ import annotations

import pytest

from signoff import AgentEvent
from signoff.approval.requests import ApprovalRecord, ToolApprovalRequest
from signoff.messages import (
    ApprovalDecisionEvent,
    ApprovalRequestEvent,
    TextEvent,
    ToolResultEvent,
)
from signoff.text.neutral import neutralise
from signoff.views.render import AgentResponseConverter, render_event

ATTACKS = {
    "clear screen": ("\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H"),
    "title (OSC 0)": ("\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07"),
    "clipboard (OSC 52)": ("\x1b]52;c;cm0gLXJmIH4=\x07", "\\x1b]52;c;cm0gLXJmIH4=\\x07"),
    "cursor up and erase line": ("\x1b[1A\x1b[2K", "\\x1b[1A\\x1b[2K"),
    "carriage return overwrite": ("rm -rf /\recho hi", "rm -rf /\\x0decho hi"),
    "8-bit CSI": ("\x9b2J", "\\x9b2J"),
    "DEL": ("a\x7fb", "a\\x7fb"),
    "bidi override": ("echo \u202eatad fr- mr", "echo \\u202eatad fr- mr"),
    "bidi isolate": ("\u2066x\u2069", "\\u2066x\\u2069"),
    "zero width": ("r\u200bm", "r\\u200bm"),
    "line separator": ("a\u2028b", "a\\u2028b"),
    "byte order mark": ("\ufeffls", "\\ufeffls"),
    "lone surrogate": ("\ud800", "\\ud800"),
    "tag characters": ("ok\U000e0041", "ok\\U000e0041"),
}


@pytest.mark.parametrize(("raw", "shown"), ATTACKS.values(), ids=ATTACKS.keys())
def test_characters_a_terminal_obeys_or_hides_are_shown_as_escapes(raw: str, shown: str) -> None:
    assert neutralise(raw) == shown


def test_newlines_tabs_and_ordinary_text_are_kept() -> None:
    text = "line 1\n\tindented — ünïcödé 日本 ✔\n"
    assert neutralise(text) == text


def test_neutralising_twice_changes_nothing() -> None:
    once = neutralise("".join(raw for raw, _ in ATTACKS.values()))
    assert neutralise(once) == once
    assert once.isprintable()


def test_plain_text_of_events_is_inert() -> None:
    """The in-process API's text (`AgentResponseConverter`) is neutralised too."""
    request = ToolApprovalRequest(call_id="c\x1b]0;t\x07", name="run_command", arguments={"command": "ls\x1b[2J"})
    record = ApprovalRecord(call_id="c1", name="run_command", approved=False, reason="no\x1b]52;c;eA==\x07")
    events: list[AgentEvent] = [
        TextEvent(text="hi\x1b[2J"),
        ApprovalRequestEvent(request=request),
        ToolResultEvent(call_id="c1", name="run_command", content="\x1b[1Aout"),
        ApprovalDecisionEvent(record=record),
    ]
    text = AgentResponseConverter.to_text(events)
    assert "\x1b" not in text and "\x07" not in text
    assert render_event(ApprovalRequestEvent(request=request)) == (
        '[Approval required: run_command({"command": "ls\\u001b[2J"})]'  # JSON escapes it first
    )
    assert "\\x1b[1Aout" in text and "no\\x1b]52;c;eA==\\x07" in text
