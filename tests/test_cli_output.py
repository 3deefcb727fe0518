"""The CLI's pure parts: answers, formatting, event rendering, links, the parser."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from signoff.approval.digest import arguments_digest
from signoff.approval.requests import ApprovalRecord, ToolApprovalRequest
from signoff.cli.args import build_parser
from signoff.cli.calls import PendingRow, approval_block, render_pending
from signoff.cli.demo import SCRIPTED_MODEL, demo_model, demo_workspace
from signoff.cli.input import Answer, LineReader, parse_answer
from signoff.cli.main import main
from signoff.cli.render import (
    final_text_seqs,
    gated_call_seqs,
    painted_event,
    render_result,
)
from signoff.cli.style import Console, Style
from signoff.config.environment import Environment
from signoff.contract import AgentRunResult
from signoff.messages import ApprovalRequestEvent, ChatMessage, FinishReason, Usage
from signoff.operator.run_client import parse_event
from signoff.views.howto import decide_commands
from signoff.views.links import ui_link
from signoff.views.text import format_age, shorten

PLAIN = Style()
NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
REQUEST = {
    "call_id": "call_1",
    "name": "run_command",
    "arguments": {"command": "ls"},
    "arguments_digest": arguments_digest({"command": "ls"}),
    "description": "Run a shell command",
}
CALL = ToolApprovalRequest.model_validate(REQUEST)


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("y", Answer(True)),
        (" YES \n", Answer(True)),
        ("n", Answer(False)),
        ("No", Answer(False)),
        ("back up first", Answer(False, "back up first")),
        ("   ", None),
    ],
)
def test_answers_approve_deny_or_give_a_reason(text: str, answer: Answer | None) -> None:
    assert parse_answer(text) == answer


async def test_line_reader_gives_lines_then_none_at_the_end() -> None:
    reader = LineReader(io.StringIO("y\r\nnot now\n"))
    assert [await reader.readline() for _ in range(4)] == ["y", "not now", None, None]
    assert reader.at_eof


@pytest.mark.parametrize(
    ("ago", "shown"),
    [
        (timedelta(seconds=5), "5s"),
        (timedelta(minutes=3, seconds=9), "3m"),
        (timedelta(hours=5), "5h"),
        (timedelta(days=2, hours=1), "2d"),
        (timedelta(seconds=-3), "0s"),
    ],
)
def test_age_is_short_and_coarse(ago: timedelta, shown: str) -> None:
    assert format_age((NOW - ago).isoformat().replace("+00:00", "Z"), NOW) == shown


def test_age_of_an_unknown_time_is_a_question_mark() -> None:
    assert format_age(None, NOW) == "?"


def test_ui_link_for_a_local_server_uses_the_dev_server_ui() -> None:
    assert ui_link("run 1", "default", "localhost:7233", env=Environment({})) == (
        "http://localhost:8233/namespaces/default/workflows/run%201"
    )


def test_ui_link_env_overrides_and_remote_servers_have_none_by_default() -> None:
    env = {"SIGNOFF_UI_URL": "https://temporal.example.com/"}
    assert ui_link("r", "prod", "temporal.example.com:7233", env=Environment(env)) == (
        "https://temporal.example.com/namespaces/prod/workflows/r"
    )
    assert ui_link("r", "prod", "temporal.example.com:7233", env=Environment({})) is None


def test_colours_only_on_a_terminal_without_no_color() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert Style.for_stream(Tty(), env=Environment({})).paint("x", "red") == "\033[31mx\033[0m"
    assert Style.for_stream(Tty(), env=Environment({"NO_COLOR": "1"})).paint("x", "red") == "x"
    assert Style.for_stream(io.StringIO(), env=Environment({})).paint("x", "red") == "x"
    assert not Console(io.StringIO()).spinner.enabled


def test_symbols_fall_back_to_ascii_when_the_stream_cannot_encode_them() -> None:
    ascii_stream = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    assert Style.for_stream(ascii_stream, env=Environment({})).symbols["yes"] == "+"


@pytest.mark.parametrize(
    ("event", "shown"),
    [
        ({"type": "text", "text": "Let me look."}, "assistant: Let me look."),
        (
            {"type": "tool_call", "call": {"id": "c1", "name": "read_file", "arguments": '{"path": "a"}'}},
            '-> read_file {"path": "a"}  (c1)',
        ),
        (
            {"type": "tool_result", "call_id": "c1", "name": "read_file", "content": "hello\n"},
            "<- read_file (c1)\n    hello",
        ),
        (
            {"type": "approval_request", "request": REQUEST},
            'approval required: run_command {"command": "ls"}  (call_1)',
        ),
        (
            {
                "type": "approval_decision",
                "record": {
                    "call_id": "call_1",
                    "name": "run_command",
                    "approved": False,
                    "reason": "no",
                    "approver": "bob",
                    "timed_out": False,
                },
            },
            "x call_1 denied by bob: no",
        ),
        (
            {
                "type": "approval_decision",
                "record": {
                    "call_id": "call_1",
                    "name": "run_command",
                    "approved": True,
                    "approver": "alice",
                    "verified": True,
                },
            },
            "+ call_1 approved by alice (verified)",
        ),
        (
            {
                "type": "approval_decision",
                "record": {
                    "call_id": "call_1",
                    "name": "run_command",
                    "approved": True,
                    "approver": None,
                    "edited_arguments": {"command": "pwd"},
                },
            },
            '+ call_1 approved with arguments {"command": "pwd"}',
        ),
        (
            {
                "type": "approval_decision",
                "record": {
                    "call_id": "call_1",
                    "name": "run_command",
                    "approved": False,
                    "timed_out": True,
                    "reason": "No decision within 5s",
                },
            },
            "x call_1 timed out: No decision within 5s",
        ),
        (
            {"type": "decision_ignored", "reason": "no pending call with id 'x'"},
            "! decision ignored: no pending call with id 'x'",
        ),
        (
            {"type": "deadline_extended", "call_id": "call_1", "expires_at": "2026-11-29T12:00:00Z", "by": "alice"},
            "- deadline extended: by alice: now 2026-11-29T12:00:00+00:00  (call_1)",
        ),
        (
            {"type": "notification_failed", "event": "approval_requested", "message": "HTTP 500"},
            "! notification failed: approval_requested: HTTP 500",
        ),
        ({"type": "finish", "reason": "stop", "usage": {"total_tokens": 42}}, "# finish: stop (42 tokens)"),
        ({"type": "error", "message": "boom"}, "x error: boom"),
    ],
)
def test_each_event_type_renders_readably(event: dict[str, Any], shown: str) -> None:
    seen = parse_event({"seq": 3, **event})
    assert seen.seq == 3 and seen.event is not None
    assert painted_event(seen.event, PLAIN).endswith(shown)


def test_unknown_event_types_are_not_read() -> None:
    assert parse_event({"seq": 1, "type": "something_new"}).event is None


def test_an_event_the_run_cut_short_is_still_read() -> None:
    """The feed elides very large values; the request's preview (a string) then reads as a note."""
    elided = {"elided": "9,000 characters of JSON", "start": '"--- a/x'}
    seen = parse_event({"seq": 0, "type": "approval_request", "request": {**REQUEST, "preview": elided}})
    assert isinstance(seen.event, ApprovalRequestEvent)
    assert "elided from the event feed" in str(seen.event.request.preview)


def test_long_tool_output_is_shortened_saying_how_much() -> None:
    text = "\n".join(f"line {i}" for i in range(100))
    shown = shorten(text, max_lines=3)
    assert shown.startswith("line 0\nline 1\nline 2\n… (")
    assert shown.endswith("more characters)")


def test_the_final_text_and_gated_calls_are_shown_once_elsewhere() -> None:
    events = [
        parse_event(e)
        for e in [
            {"seq": 0, "type": "text", "text": "Let me run it."},
            {"seq": 1, "type": "tool_call", "call": {"id": "c1", "name": "run_command", "arguments": "{}"}},
            {"seq": 2, "type": "tool_call", "call": {"id": "c2", "name": "read_file", "arguments": "{}"}},
            {"seq": 3, "type": "approval_request", "request": {**REQUEST, "call_id": "c1"}},
            {"seq": 4, "type": "text", "text": "Done."},
            {"seq": 5, "type": "finish", "reason": "stop"},
        ]
    ]
    assert final_text_seqs(events) == {4}
    assert gated_call_seqs(events) == {1}


def test_approval_block_has_everything_needed_to_decide() -> None:
    block = "\n".join(approval_block(CALL, "run-1", "http://ui/x", PLAIN, " --address h:1"))
    digest = CALL.arguments_digest
    for text in (
        "run_command  Run a shell command",
        '{"command": "ls"}',
        "run-1",
        "call_1",
        "http://ui/x",
        f"digest     {digest}",
        "policy     anyone may decide",
        "deadline   none (waits until decided)",
        f"signoff approve run-1 call_1 --digest {digest} --address h:1",
        f"signoff deny run-1 call_1 --digest {digest} --reason 'why not'",
    ):
        assert text in block


def test_with_an_inbox_the_block_and_the_pending_list_link_to_the_calls_page() -> None:
    page = "https://inbox.example.com/call?run=run+1&id=call_1"
    block = approval_block(CALL, "run 1", None, PLAIN, inbox="https://inbox.example.com")
    assert f"    inbox      {page}" in block
    assert f"    inbox      {page}" in render_pending(
        [PendingRow("run 1", CALL)], PLAIN, inbox="https://inbox.example.com"
    )
    assert not any("inbox" in line for line in approval_block(CALL, "run 1", None, PLAIN))


def test_decide_commands_quote_for_the_shell() -> None:
    assert decide_commands("my run", "c;1")[0] == "signoff approve 'my run' 'c;1'"


def test_pending_shows_each_call_whole_under_its_run() -> None:
    request = CALL.model_copy(update={"requested_at": NOW - timedelta(seconds=42)})
    rows = [PendingRow("run-1", request), PendingRow("run-22", note="(no worker answered)", tools=["write_file"])]
    assert render_pending(rows, PLAIN, None, NOW) == [
        "run-1  call_1  run_command  waiting 42s",
        "    about      Run a shell command",
        '    arguments  {"command": "ls"}',
        f"    digest     {CALL.arguments_digest}",
        "    policy     anyone may decide",
        "    deadline   none (waits until decided)",
        "",
        "run-22  ?  write_file  (no worker answered)",
    ]
    assert render_pending([], PLAIN) == ["No run is awaiting approval."]


def test_result_shows_reason_rounds_approvals_and_text() -> None:
    result = AgentRunResult(
        finish_reason=FinishReason.STOP,
        text="All done.",
        messages=[ChatMessage.user("hi")],
        rounds=2,
        usage=Usage(total_tokens=7),
        approvals=[
            ApprovalRecord(
                call_id="c1", name="run_command", arguments={"command": "ls"}, approved=True, approver="alice"
            )
        ],
    )
    assert render_result(result, PLAIN) == [
        "finished: stop after 2 round(s), 7 tokens",
        "approvals:",
        '  + c1 approved by alice (run_command {"command": "ls"})',
        "answer:",
        "  All done.",
    ]


async def test_demo_model_without_config_is_the_offline_scripted_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SIGNOFF_LLM_BASE_URL", raising=False)
    with demo_model(None) as (label, factory):
        async with factory() as chat:  # type: ignore[attr-defined]
            response = await chat.complete([ChatMessage.user("list /tmp")], [], None)
    assert label == SCRIPTED_MODEL
    assert response.message.content == "Hello from the scripted model."


def test_demo_workspace_is_fresh_each_time(tmp_path: Path) -> None:
    first, second = demo_workspace(tmp_path), demo_workspace(tmp_path)
    assert first != second and first.parent == second.parent == tmp_path
    assert [p.name for p in first.iterdir()] == ["README.txt"]


def test_parser_reads_each_command() -> None:
    parser = build_parser()
    args = parser.parse_args(["run", "hi", "--max-rounds", "3", "--wait", "--address", "h:1"])
    assert (args.command, args.prompt, args.max_rounds, args.wait, args.address) == ("run", "hi", 3, True, "h:1")
    args = parser.parse_args(["deny", "r", "c", "--reason", "why"])
    assert (args.command, args.run, args.call, args.reason, args.all) == ("deny", "r", "c", "why", False)
    args = parser.parse_args(
        [
            "approve",
            "--query",
            "SignoffAgent='ops'",
            "--tool",
            "run_command",
            "--older-than",
            "2h",
            "--yes",
            "--digest",
            "ABCDEF0123456789",
        ]
    )
    assert (args.run, args.query, args.tool, args.older_than, args.yes, args.digest) == (
        None,
        "SignoffAgent='ops'",
        "run_command",
        timedelta(hours=2),
        True,
        "abcdef0123456789",
    )
    args = parser.parse_args(["audit", "r", "--verify", "--file", "t.json"])
    assert (args.command, args.verify, args.file, args.json) == ("audit", True, "t.json", False)
    args = parser.parse_args(["extend", "r", "c", "--seconds", "90", "--token", "T"])
    assert (args.seconds, args.token, args.approver) == (90.0, "T", None)


def test_main_returns_2_for_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["frobnicate"]) == 2
    assert main(["approve", "r", "c", "--all"]) == 2
    assert "CALL id or --all, not both" in capsys.readouterr().err
