"""However `signoff demo` ends, its run does not stay open; a closed pipe ends any command quietly
(issue 16, finding 6).

The demo serves its run with an in-process worker on a task queue of its own: once the
demo is gone nobody serves it, so a run left open would wait for ever (and slow every
`signoff pending`). Each test ends a real demo subprocess one way (SIGTERM, SIGHUP,
Ctrl-C, the end of input at its prompt, the reader of its output gone) and checks that
its run finished `cancelled`.
"""

# ruff: noqa: F811 - the harness's fixtures are imported by name and taken as parameters

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from temporalio.client import Client

from signoff.contract import AgentRunResult
from signoff.messages import FinishReason
from tests.cli_harness import CLIENT, cli_environ, read_until, served, spawn  # noqa: F401
from tests.helpers import Reply, call, start_run, wait_pending
from tests.test_cli_tty import Terminal

QUESTION = "? [y/n/reason]"


def run_id_in(text: str) -> str:
    found = re.search(r"started run (signoff-demo-[0-9a-f]+)", text)
    assert found, text
    return found.group(1)


async def assert_cancelled(client: Client, run_id: str) -> None:
    result: AgentRunResult = await asyncio.wait_for(
        client.get_workflow_handle(run_id, result_type=AgentRunResult).result(), 30
    )
    assert result.finish_reason is FinishReason.CANCELLED
    assert [a.reason for a in result.approvals] == ["Run cancelled"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=["SIGTERM", "SIGHUP", "SIGINT"])
async def test_a_signal_ending_the_demo_cancels_its_run_first(
    client: Client, cli_environ: dict[str, str], tmp_path: Path, sig: signal.Signals
) -> None:
    demo = await spawn(cli_environ, "demo", cwd=tmp_path)  # no terminal: it waits for a decision made elsewhere
    seen = await read_until(demo, "waiting for a decision made elsewhere")
    demo.send_signal(sig)
    out, err = await asyncio.wait_for(demo.communicate(), 60)
    await assert_cancelled(client, run_id_in(seen))
    assert "Cancelling the demo run" in out.decode() and "Traceback" not in err.decode()
    assert demo.returncode == (130 if sig == signal.SIGINT else 128 + sig)


async def test_the_end_of_input_at_the_demo_prompt_cancels_its_run(
    client: Client, cli_environ: dict[str, str], tmp_path: Path
) -> None:
    def ctrl_d() -> tuple[int, str, str]:
        terminal = Terminal(cli_environ, "demo", cwd=tmp_path)
        terminal.read_until(QUESTION)
        os.write(terminal.master, b"\x04")  # Ctrl-D on an empty line: the end of input
        code, err = terminal.close()
        return code, terminal.seen, err

    code, seen, err = await asyncio.to_thread(ctrl_d)
    await assert_cancelled(client, run_id_in(seen))
    assert code == 1 and "Traceback" not in err


async def test_a_reader_gone_ends_the_demo_quietly_and_cancels_its_run(
    client: Client, cli_environ: dict[str, str], tmp_path: Path
) -> None:
    read, write = os.pipe()
    demo = subprocess.Popen(
        [sys.executable, str(CLIENT), "demo"],
        cwd=tmp_path,
        env=cli_environ,
        stdin=subprocess.DEVNULL,
        stdout=write,
        stderr=subprocess.PIPE,
    )
    os.close(write)
    seen = b""
    while b"waiting for a decision made elsewhere" not in seen:
        chunk = await asyncio.to_thread(os.read, read, 4096)
        assert chunk, seen
        seen += chunk
    os.close(read)  # as `| head` does once it has its lines
    # The demo notices when it next writes: its spinner is off (no terminal), so make it write.
    run_id = run_id_in(seen.decode())
    await client.get_workflow_handle(run_id).signal("tool_approval", {"call_id": "nope", "approved": True})
    code = await asyncio.to_thread(demo.wait, 60)
    assert demo.stderr is not None
    err = demo.stderr.read().decode()
    await assert_cancelled(client, run_id)
    assert code == 128 + signal.SIGPIPE and "Traceback" not in err and "BrokenPipe" not in err


async def test_output_cut_short_by_head_ends_a_command_quietly(
    client: Client, task_queue: str, tmp_path: Path, cli_environ: dict[str, str]
) -> None:
    big = [call("run_command", f"call_{n}", command="echo " + "x" * 4_000) for n in range(40)]
    async with served(client, task_queue, tmp_path, lambda request: Reply.tool_calls(big)):
        handle = await start_run(client, task_queue)
        await wait_pending(handle, 40)
        shell = await asyncio.create_subprocess_shell(
            f"{sys.executable} {CLIENT} pending {handle.id} | head -1",
            env=cli_environ,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(shell.communicate(), 60)
        await handle.terminate()
    assert handle.id in out.decode() and err.decode() == ""
