"""What the `signoff` CLI reads: a person's answer to `Approve ...? [y/n/reason]`.

Lines come from a daemon thread, so the CLI can wait for a line *or* for the call
to be decided elsewhere (the Web UI, another terminal) without blocking its event
loop, and so a prompt left unanswered never keeps the process from exiting.
Standard input need not be a terminal: `echo n | signoff run ... --wait` works.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO


@dataclass(frozen=True)
class Answer:
    """A decision typed at the prompt."""

    approved: bool
    reason: str | None = None


def parse_answer(text: str) -> Answer | None:
    """`y`/`yes` approves, `n`/`no` denies, other text denies with it as the reason.

    Returns:
        None for a blank line (ask again).
    """
    answer = text.strip()
    if not answer:
        return None
    if answer.lower() in ("y", "yes"):
        return Answer(approved=True)
    if answer.lower() in ("n", "no"):
        return Answer(approved=False)
    return Answer(approved=False, reason=answer)


class LineReader:
    """Lines of a text stream (standard input by default), awaited one at a time."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream or sys.stdin
        self._queue: asyncio.Queue[str | None] | None = None
        self.at_eof = False

    async def readline(self) -> str | None:
        """The next line without its newline; None once the stream has ended."""
        if self.at_eof:
            return None
        if self._queue is None:
            self._queue = asyncio.Queue()
            loop = asyncio.get_running_loop()
            threading.Thread(target=self._pump, args=(loop, self._queue), daemon=True, name="stdin").start()
        line = await self._queue.get()
        self.at_eof = line is None
        return None if line is None else line.rstrip("\r\n")

    def _pump(self, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[str | None]) -> None:
        while True:
            try:
                line = self._stream.readline()
            except (OSError, ValueError):  # closed or unreadable: same as the end
                line = ""
            try:
                loop.call_soon_threadsafe(queue.put_nowait, line or None)
            except RuntimeError:  # the loop is closed: nobody is listening any more
                return
            if not line:
                return


Asker = Callable[[str], bool]
"""Asks a yes/no question (`... [y/N] `) and says whether the answer was yes."""


def terminal_asker(write: Callable[[str], None], stdin: TextIO | None = None) -> Asker | None:
    """An asker reading the answer from standard input when it is a terminal; else None
    (nobody is there to confirm, so the caller must not assume a yes)."""
    stream = stdin or sys.stdin
    try:
        interactive = stream.isatty()
    except (AttributeError, ValueError):
        interactive = False
    if not interactive:
        return None

    def ask(question: str) -> bool:
        write(f"{question} [y/N] ")
        return stream.readline().strip().lower() in ("y", "yes")

    return ask
