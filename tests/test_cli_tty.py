"""At a terminal (a real pseudo-terminal): a call not shown before is shown, then confirmed or not."""

# ruff: noqa: F811 - the harness's fixtures are imported by name and taken as parameters

from __future__ import annotations

import asyncio
import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

from temporalio.client import Client

from tests.cli_harness import CLIENT, ROOT, cli_environ, served  # noqa: F401
from tests.helpers import start_run, wait_pending


class Terminal:
    """`python client.py ARGS` with a pseudo-terminal (120 columns) as its stdin and stdout."""

    def __init__(self, env: dict[str, str], *args: str, cwd: Path = ROOT) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.proc = subprocess.Popen(
            [sys.executable, str(CLIENT), *args], cwd=cwd, env=env, stdin=slave, stdout=slave, stderr=subprocess.PIPE
        )
        os.close(slave)
        self.seen = ""

    def read_until(self, text: str, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while text not in self.seen:
            assert time.monotonic() < deadline, f"no {text!r} in:\n{self.seen}"
            try:
                chunk = os.read(self.master, 4096)
            except OSError:  # the process closed the terminal
                raise AssertionError(f"ended before {text!r}:\n{self.seen}") from None
            self.seen += chunk.decode(errors="replace")
        return self.seen

    def type(self, line: str) -> None:
        os.write(self.master, line.encode() + b"\n")

    def close(self) -> tuple[int, str]:
        code = self.proc.wait(timeout=60)
        try:
            while chunk := os.read(self.master, 4096):
                self.seen += chunk.decode(errors="replace")
        except OSError:
            pass
        os.close(self.master)
        assert self.proc.stderr is not None
        return code, self.proc.stderr.read().decode()


async def at_terminal(env: dict[str, str], args: list[str], question: str, answer: str) -> tuple[int, str, str]:
    def talk() -> tuple[int, str, str]:
        terminal = Terminal(env, *args)
        terminal.read_until(question)
        terminal.type(answer)
        code, err = terminal.close()
        return code, terminal.seen, err

    return await asyncio.to_thread(talk)


async def test_a_person_confirms_a_call_shown_for_the_first_time(
    client: Client, task_queue: str, tmp_path: Path, cli_environ: dict[str, str]
) -> None:
    async with served(client, task_queue, tmp_path):
        declined_run = await start_run(client, task_queue)
        confirmed_run = await start_run(client, task_queue)
        for handle in (declined_run, confirmed_run):
            await wait_pending(handle)
        declined = await at_terminal(cli_environ, ["approve", declined_run.id, "--yes"], "[y/N]", "n")
        confirmed = await at_terminal(cli_environ, ["approve", confirmed_run.id], "[y/N]", "y")
        still = await declined_run.query("pending_approvals")
        await declined_run.signal("tool_approval", {"call_id": "call_1", "approved": False})
        for handle in (declined_run, confirmed_run):
            await asyncio.wait_for(handle.result(), 60)
    code, out, err = declined
    assert code == 1 and "nothing decided" in err, (out, err)
    assert "Not shown to you before:" in out and '{"command": "echo hi"}' in out  # --yes does not skip this
    assert [r["call_id"] for r in still] == ["call_1"]
    code, out, err = confirmed
    assert code == 0, (out, err)
    assert "Approve call_1 as shown above? [y/N]" in out
    assert 'approved call_1: run_command {"command": "echo hi"}' in out
