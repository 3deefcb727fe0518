"""What a person approves is shown whole and inert: wrapping, pretty JSON, the console's backstop."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import struct
import termios

from signoff.approval.digest import arguments_digest
from signoff.approval.requests import ToolApprovalRequest
from signoff.cli.calls import approval_block, approval_prompt, render_ack
from signoff.cli.style import DEFAULT_WIDTH, Console, Style, inert_keeping_colours, terminal_width
from signoff.config.environment import Environment
from signoff.contract import DecidedCall, DecisionAck
from signoff.views.text import CONTINUED, value_lines, wrap

PLAIN = Style()
LONG = "echo " + "a" * 431 + "; rm -rf data2"  # 450 characters, the dangerous part at the end


def request(arguments: object, **extra: object) -> ToolApprovalRequest:
    return ToolApprovalRequest(
        call_id="call_1", name="run_command", arguments=arguments, arguments_digest=arguments_digest(arguments), **extra
    )


def unwrapped(lines: list[str], indent: str) -> str:
    """The text again, as a reader does: continuation lines joined to the line before."""
    joined: list[str] = []
    for line in lines:
        if line.startswith(indent + CONTINUED):
            joined[-1] += line[len(indent + CONTINUED) :]
        else:
            joined.append(line)
    return "\n".join(joined)


def test_a_long_command_is_shown_whole_in_the_prompt_without_a_width() -> None:
    assert len(LONG) == 450
    prompt = approval_prompt(request({"command": LONG}), PLAIN)
    assert f'"command": "{LONG}"' in prompt
    assert prompt.endswith("}? [y/n/reason] ")


def test_wrapping_to_a_narrow_terminal_cuts_nothing() -> None:
    lines = value_lines({"command": LONG, "timeout_secs": 5}, width=40, used=15, indent=" " * 15)
    assert all(len(line) <= 40 for line in lines)
    assert len(lines) > 10
    assert f'"command": "{LONG}",' in unwrapped(lines, " " * 15).replace("\n" + " " * 15, "\n")


def test_wrap_keeps_every_character() -> None:
    line = "x" * 95
    pieces = wrap(line, 30, "  ")
    assert pieces[0] == "x" * 30 and all(p.startswith("  " + CONTINUED) for p in pieces[1:])
    assert "".join([pieces[0], *(p[len("  " + CONTINUED) :] for p in pieces[1:])]) == line


def test_short_arguments_stay_on_one_line() -> None:
    assert value_lines({"command": "ls"}, width=80) == ['{"command": "ls"}']
    assert value_lines("not json {", width=None) == ["not json {"]


def test_the_block_and_prompt_show_arguments_and_preview_inert() -> None:
    call = request(
        {"command": "ls\x1b]52;c;cm0gLXJm\x07", "note": "\u202eatad"},
        preview="--- a\n+++ b\n+\x1b[2Jnew line",
        description="Run\x1b[1A",
    )
    text = "\n".join(approval_block(call, "run-1", None, PLAIN)) + approval_prompt(call, PLAIN)
    assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text
    assert "\\u202eatad" in text and "+\\x1b[2Jnew line" in text and "Run\\x1b[1A" in text


def test_the_ack_names_each_call_whole_with_its_outcome() -> None:
    ack = DecisionAck(
        accepted=["c1", "c2"],
        pending=["c3"],
        decided=[
            DecidedCall(call_id="c1", name="run_command", arguments={"command": LONG}, outcome="approved"),
            DecidedCall(call_id="c2", name="write_file", arguments={"path": "x"}, outcome="vote"),
        ],
    )
    lines = render_ack(ack, PLAIN)
    assert LONG in "\n".join(lines)
    assert lines[-2] == 'vote counted (quorum not reached yet) on c2: write_file {"path": "x"}'
    assert lines[-1] == "still pending: c3"


def test_the_console_writes_nothing_a_terminal_obeys() -> None:
    out = io.StringIO()
    Console(out, env=Environment({})).print("a\x1b[2Jb", "c\x9b2Jd\u202e")
    assert out.getvalue() == "a\\x1b[2Jb\nc\\x9b2Jd\\u202e\n"


def test_with_colours_only_the_styles_own_codes_pass() -> None:
    style = Style(colour=True)
    painted = style.paint("ok", "green", "bold") + " then \x1b]0;title\x07 and \x1b[8mhidden"
    assert (
        inert_keeping_colours(painted, colour=True) == "\x1b[32;1mok\x1b[0m then \\x1b]0;title\\x07 and \\x1b[8mhidden"
    )


def _pty_of(columns: int) -> tuple[int, int]:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    return master, slave


def test_the_width_is_the_terminals_and_a_terminal_without_one_gets_the_default() -> None:
    """A pty that reports 0 columns (`script`, some consoles and containers) wraps at 80,
    not at the 20-column minimum; COLUMNS still wins, and off a terminal nothing wraps."""
    for columns, expected in ((132, 132), (0, DEFAULT_WIDTH), (8, 20)):
        master, slave = _pty_of(columns)
        try:
            with os.fdopen(os.dup(slave), "w") as stream:
                assert terminal_width(stream, env=Environment({})) == expected
                assert terminal_width(stream, env=Environment({"COLUMNS": "60"})) == 60
        finally:
            os.close(master)
            os.close(slave)
    assert terminal_width(io.StringIO(), env=Environment({})) is None
