"""The CLI's pure parts: answers, formatting, event rendering, links, the parser."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from signoff.cli.main import main
from signoff.approvals import ApprovalRecord
from signoff.cli.args import build_parser
from signoff.cli.demo import SCRIPTED_MODEL, demo_model, demo_workspace
from signoff.cli.input import Answer, LineReader, parse_answer
from signoff.cli.output import (
    Console,
    Style,
    approval_block,
    decide_commands,
    final_text_seqs,
    format_age,
    gated_call_seqs,
    render_event,
    render_pending,
    render_result,
    shorten,
    ui_link,
)
from signoff.contract import AgentRunResult
from signoff.messages import ChatMessage, FinishReason, Usage

PLAIN = Style()
NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
REQUEST = {
    "call_id": "call_1",
    "name": "run_command",
    "arguments": {"command": "ls"},
    "description": "Run a shell command",
}


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
    [(timedelta(seconds=5), "5s"), (timedelta(minutes=3, seconds=9), "3m"), (timedelta(hours=5), "5h"),
     (timedelta(days=2, hours=1), "2d"), (timedelta(seconds=-3), "0s")],
)
def test_age_is_short_and_coarse(ago: timedelta, shown: str) -> None:
    assert format_age((NOW - ago).isoformat().replace("+00:00", "Z"), NOW) == shown


def test_age_of_an_unknown_time_is_a_question_mark() -> None:
    assert format_age(None, NOW) == "?"


def test_ui_link_for_a_local_server_uses_the_dev_server_ui() -> None:
    assert ui_link("run 1", "default", "localhost:7233", environ={}) == (
        "http://localhost:8233/namespaces/default/workflows/run%201"
    )


def test_ui_link_env_overrides_and_remote_servers_have_none_by_default() -> None:
    env = {"SIGNOFF_UI_URL": "https://temporal.example.com/"}
    assert ui_link("r", "prod", "temporal.example.com:7233", environ=env) == (
        "https://temporal.example.com/namespaces/prod/workflows/r"
    )
    assert ui_link("r", "prod", "temporal.example.com:7233", environ={}) is None


def test_colours_only_on_a_terminal_without_no_color() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert Style.for_stream(Tty(), environ={}).paint("x", "red") == "\033[31mx\033[0m"
    assert Style.for_stream(Tty(), environ={"NO_COLOR": "1"}).paint("x", "red") == "x"
    assert Style.for_stream(io.StringIO(), environ={}).paint("x", "red") == "x"
    assert not Console(io.StringIO()).spinner.enabled


def test_symbols_fall_back_to_ascii_when_the_stream_cannot_encode_them() -> None:
    ascii_stream = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    assert Style.for_stream(ascii_stream, environ={}).symbols["yes"] == "+"


@pytest.mark.parametrize(
    ("event", "shown"),
    [
        ({"type": "text", "text": "Let me look."}, "assistant: Let me look."),
        ({"type": "tool_call", "call": {"id": "c1", "name": "read_file", "arguments": '{"path": "a"}'}},
         '-> read_file {"path": "a"}  (c1)'),
        ({"type": "tool_result", "call_id": "c1", "name": "read_file", "content": "hello\n"},
         "<- read_file (c1)\n    hello"),
        ({"type": "approval_request", "request": REQUEST},
         'approval needed: run_command {"command": "ls"}  (call_1)'),
        ({"type": "approval_decision", "record": {"call_id": "call_1", "approved": False, "reason": "no",
                                                  "approver": "bob", "timed_out": False}},
         "x call_1 denied by bob: no"),
        ({"type": "approval_decision", "record": {"call_id": "call_1", "approved": True, "approver": None,
                                                  "edited_arguments": {"command": "pwd"}}},
         '+ call_1 approved with arguments {"command": "pwd"}'),
        ({"type": "approval_decision", "record": {"call_id": "call_1", "approved": False, "timed_out": True,
                                                  "reason": "No decision within 5s"}},
         "x call_1 timed out: No decision within 5s"),
        ({"type": "decision_ignored", "reason": "no pending call with id 'x'"},
         "! decision ignored: no pending call with id 'x'"),
        ({"type": "finish", "reason": "stop", "usage": {"total_tokens": 42}}, "# finished: stop (42 tokens)"),
        ({"type": "error", "message": "boom"}, "! error: boom"),
    ],
)
def test_each_event_type_renders_readably(event: dict[str, Any], shown: str) -> None:
    assert (render_event(event, PLAIN) or "").endswith(shown)


def test_unknown_event_types_are_skipped() -> None:
    assert render_event({"type": "something_new"}, PLAIN) is None


def test_long_tool_output_is_shortened_saying_how_much() -> None:
    text = "\n".join(f"line {i}" for i in range(100))
    shown = shorten(text, max_lines=3)
    assert shown.startswith("line 0\nline 1\nline 2\n… (")
    assert shown.endswith("more characters)")


def test_the_final_text_and_gated_calls_are_shown_once_elsewhere() -> None:
    events = [
        {"seq": 0, "type": "text", "text": "Let me run it."},
        {"seq": 1, "type": "tool_call", "call": {"id": "c1", "name": "run_command", "arguments": "{}"}},
        {"seq": 2, "type": "tool_call", "call": {"id": "c2", "name": "read_file", "arguments": "{}"}},
        {"seq": 3, "type": "approval_request", "request": {**REQUEST, "call_id": "c1"}},
        {"seq": 4, "type": "text", "text": "Done."},
        {"seq": 5, "type": "finish", "reason": "stop"},
    ]
    assert final_text_seqs(events) == {4}
    assert gated_call_seqs(events) == {1}


def test_approval_block_has_everything_needed_to_decide() -> None:
    block = "\n".join(approval_block(REQUEST, "run-1", "http://ui/x", PLAIN, " --address h:1"))
    for text in ("run_command  Run a shell command", '{"command": "ls"}', "run-1", "call_1", "http://ui/x",
                 "signoff approve run-1 call_1 --address h:1", "signoff deny run-1 call_1 --reason 'why not'"):
        assert text in block


def test_decide_commands_quote_for_the_shell() -> None:
    assert decide_commands("my run", "c;1")[0] == "signoff approve 'my run' 'c;1'"


def test_pending_table_aligns_columns() -> None:
    rows: list[dict[str, Any]] = [
        {"workflow_id": "run-1", "call_id": "call_1", "name": "run_command", "arguments": {"command": "ls"},
         "requested_at": (NOW - timedelta(seconds=42)).isoformat()},
        {"workflow_id": "run-22", "name": "write_file", "note": "(no worker answered)"},
    ]
    assert render_pending(rows, PLAIN, NOW) == [
        "RUN     CALL    TOOL         AGE  ARGUMENTS",
        'run-1   call_1  run_command  42s  {"command": "ls"}',
        "run-22  ?       write_file   ?    (no worker answered)",
    ]
    assert render_pending([], PLAIN) == ["No run is awaiting approval."]


def test_result_shows_reason_rounds_approvals_and_text() -> None:
    result = AgentRunResult(
        finish_reason=FinishReason.STOP, text="All done.", messages=[ChatMessage.user("hi")], rounds=2,
        usage=Usage(total_tokens=7),
        approvals=[ApprovalRecord(call_id="c1", name="run_command", arguments={"command": "ls"}, approved=True,
                                  approver="alice")],
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


def test_main_returns_2_for_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["frobnicate"]) == 2
    assert main(["approve", "r", "c", "--all"]) == 2
    assert "CALL id or --all, not both" in capsys.readouterr().err
