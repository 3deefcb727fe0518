"""Where the CLI writes: colours (or none), symbols, a spinner, and an inert console.

Colours and the spinner appear only on a terminal, colours never when `NO_COLOR` is set
(https://no-color.org). The console is the last edge before the screen: everything it
writes is neutralised (`signoff.text.neutral`) except the colour codes `Style` itself emits,
so a value that reached it unescaped still cannot move the cursor, clear the screen,
set the title or write the clipboard.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from typing import Any, TextIO

from signoff.config.environment import COLUMNS_ENV, NO_COLOR_ENV, Environment
from signoff.text.neutral import neutralise

_CODES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "blue": "34", "cyan": "36"}
_FANCY = {"call": "→", "result": "←", "wait": "⏸", "yes": "✔", "no": "✘", "end": "■", "warn": "!", "info": "·"}
_PLAIN = {"call": "->", "result": "<-", "wait": "||", "yes": "+", "no": "x", "end": "#", "warn": "!", "info": "-"}
_FANCY_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_PLAIN_FRAMES = "|/-\\"
DEFAULT_WIDTH = 80  # for a terminal that does not say how wide it is
# Exactly the sequences `Style.paint` writes: bold, dim and six colours, or the reset.
_OWN_CODES = re.compile(r"\x1b\[(?:(?:[12]|3[1-6])(?:;(?:[12]|3[1-6]))*|0)m")


def is_tty(stream: TextIO) -> bool:
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


def terminal_width(stream: TextIO, env: Environment | None = None) -> int | None:
    """Columns to wrap at: `COLUMNS`, else the terminal's (80 when it reports none, as a pty
    without a window size does); None (no wrapping) off a terminal."""
    if (columns := (env or Environment()).read(COLUMNS_ENV)) is not None:
        return columns
    if not is_tty(stream):
        return None
    try:
        width = os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return None
    return max(20, width) if width else DEFAULT_WIDTH


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
    def for_stream(cls, stream: TextIO, env: Environment | None = None) -> Style:
        """Colours on a terminal unless `NO_COLOR` is set; Unicode where the encoding allows."""
        colour = is_tty(stream) and not (env or Environment()).read(NO_COLOR_ENV)
        return cls(colour=colour, fancy=_encodes(stream, "".join(_FANCY.values())))

    def paint(self, text: str, *names: str) -> str:
        """`text` in the named styles (`bold`, `dim`, `red`, `green`, `yellow`, `blue`, `cyan`)."""
        if not self.colour or not names:
            return text
        return f"\033[{';'.join(_CODES[n] for n in names)}m{text}\033[0m"

    def sym(self, name: str, *names: str) -> str:
        """The symbol `name`, painted."""
        return self.paint(self.symbols[name], *names)


def inert_keeping_colours(text: str, colour: bool) -> str:
    """`text` neutralised, keeping the colour codes `Style` writes when colours are on."""
    if not colour:
        return neutralise(text)
    parts, last = [], 0
    for match in _OWN_CODES.finditer(text):
        parts += [neutralise(text[last : match.start()]), match.group()]
        last = match.end()
    return "".join(parts) + neutralise(text[last:])


def print_json(data: Any) -> None:
    """A command's answer as JSON on standard output (ASCII escapes only, so inert as it is)."""
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=True) + "\n")
    sys.stdout.flush()


class Console:
    """Where the CLI writes: a stream with its style, width and spinner; inert output."""

    def __init__(self, stream: TextIO | None = None, env: Environment | None = None) -> None:
        self.stream = stream or sys.stdout
        self.style = Style.for_stream(self.stream, env)
        self.width = terminal_width(self.stream, env)
        self.tty = is_tty(self.stream)
        """Whether a person reads this output as it comes (a terminal)."""
        self.spinner = Spinner(self.stream, self.tty, self.style.frames)

    def print(self, *lines: str) -> None:
        for line in lines:
            self.stream.write(inert_keeping_colours(line, self.style.colour) + "\n")
        self.stream.flush()

    def write(self, text: str) -> None:
        """Text without a newline (a prompt)."""
        self.stream.write(inert_keeping_colours(text, self.style.colour))
        self.stream.flush()

    def note(self, text: str) -> None:
        """A line about the command itself, on standard error: the output stays what was asked for."""
        print(inert_keeping_colours(text, False), file=sys.stderr, flush=True)


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
        label = neutralise(label)  # it may name calls, whose ids come from the model
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
