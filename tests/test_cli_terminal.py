"""The terminal cannot mislead the approver (issue 7, item 5), through real runs and real CLI processes.

What the CLI asks a person to approve is shown whole; whatever a model, a tool or a decision
wrote reaches the screen inert: no escape sequence clears it, sets its title, moves its
cursor or writes the clipboard (OSC 52), and no bidi override reorders what is read.
"""

# ruff: noqa: F811 - the harness's fixtures are imported by name and taken as parameters

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowUpdateFailedError

from tests.cli_harness import Cli, cli, cli_environ, finish, served, spawn  # noqa: F401
from tests.helpers import Reply, ScriptedRequest, call, start_run, wait_pending

LONG = "echo " + "a" * 431 + "; rm -rf data2"
RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\u2066", "\u200b")
"""Characters a terminal obeys or hides: none may reach it."""

TOOL_OUTPUT = r"printf '\033[2J\033[H\033]0;pwned-title\007\033]52;c;cm0gLXJmIH4=\007\033[3A\033[2K'; echo done"
MODEL_TEXT = "Looking.\x1b[2J\x1b]0;model-title\x07\x1b[5;1H"
FINAL_TEXT = "All done.\x1b[1A\x1b[2K\x9b2J see \u202etxt.exe"
ARGUMENT_TRICKS = {"command": TOOL_OUTPUT + " # \u202egnp.exe\u2066x\u2069 \x9b31m red \u200b"}


def hostile(request: ScriptedRequest) -> Reply:
    if request.round == 1:
        calls = [call("run_command", "call_1", **ARGUMENT_TRICKS), call("evil\x1b]0;tool-title\x07", "call_2")]
        return Reply.tool_calls(calls, text=MODEL_TEXT)
    return Reply.text(FINAL_TEXT)


def assert_inert(text: str, what: str) -> None:
    found = [repr(c) for c in RAW if c in text]
    assert not found, f"{what} wrote {found} to the terminal:\n{text!r}"


async def test_a_450_character_command_is_shown_whole_in_the_prompt(
    client: Client, task_queue: str, tmp_path: Path, cli: Cli
) -> None:
    (tmp_path / "data2").mkdir()

    def long_command(request: ScriptedRequest) -> Reply:
        if request.round == 1:
            return Reply.tool_calls([call("run_command", "call_1", command=LONG)])
        return Reply.text(f"saw: {request.last.content}")

    async with served(client, task_queue, tmp_path, long_command):
        done = await cli("run", "go", "--wait", stdin="n\n")
        narrow = await cli("run", "go", "--wait", stdin="n\n", COLUMNS="60")
    assert len(LONG) == 450 and done.code == 0, done.err
    prompt = done.out[done.out.index("Approve run_command") : done.out.index("[y/n/reason]")]
    assert f'"command": "{LONG}"' in prompt
    assert f'"command": "{LONG}"' in done.out[: done.out.index("Approve run_command")]  # and in the block
    assert (tmp_path / "data2").is_dir()
    lines = narrow.out[narrow.out.index("Approve run_command") : narrow.out.index("[y/n/reason]")].splitlines()
    assert all(len(line) <= 60 for line in lines)
    assert LONG in "".join(line.strip().removeprefix("~ ") for line in lines)  # wrapped, nothing cut


async def test_escape_sequences_from_model_tools_and_decisions_arrive_inert(
    client: Client, task_queue: str, tmp_path: Path, cli: Cli, cli_environ: dict[str, str]
) -> None:
    async with served(client, task_queue, tmp_path, hostile):
        handle = await start_run(client, task_queue)
        await wait_pending(handle)
        watcher = await spawn(cli_environ, "watch", handle.id)
        pending = await cli("pending", handle.id)
        escaped = {"call_id": "call_1", "approved": True, "approver": "mallory\x1b]0;approver-title\x07"}
        with pytest.raises(WorkflowUpdateFailedError) as refused:  # a name may hold no control characters
            await handle.execute_update("submit_tool_approval", escaped)
        await handle.execute_update(
            "submit_tool_approval",
            {
                "call_id": "call_1",
                "approved": True,
                "approver": "mallory",
                "reason": "fine\x1b]52;c;Y2F0IH4vLnNzaC9pZF9yc2E=\x07\u202e",
            },
        )
        await asyncio.wait_for(handle.result(), 60)
        watched = await finish(watcher)
        result = await cli("result", handle.id)
        audit = await cli("audit", handle.id)
    for what, done in {"pending": pending, "watch": watched, "result": result, "audit": audit}.items():
        assert done.code == 0, (what, done)
        assert_inert(done.out + done.err, what)
    assert "# \\u202egnp.exe\\u2066x\\u2069 \\x9b31m red \\u200b" in pending.out  # arguments, as escapes
    seen = watched.out
    for shown in (
        "Looking.\\x1b[2J\\x1b]0;model-title\\x07\\x1b[5;1H",  # model text
        "\\x1b[2J\\x1b[H\\x1b]0;pwned-title\\x07\\x1b]52;c;cm0gLXJmIH4=\\x07\\x1b[3A\\x1b[2K",  # tool output
        "evil\\x1b]0;tool-title\\x07",  # a tool name from the model
        "by mallory: fine\\x1b]52;c;Y2F0IH4vLnNzaC9pZF9yc2E=\\x07\\u202e",
        "All done.\\x1b[1A\\x1b[2K\\x9b2J see \\u202etxt.exe",
    ):
        assert shown in seen, (shown, seen)
    assert "All done.\\x1b[1A" in result.out and "fine\\x1b]52;c;Y2F0IH4vLnNzaC9pZF9yc2E=\\x07" in audit.out
    assert "U+001B" in str(refused.value.cause)
