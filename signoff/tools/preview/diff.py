"""`write_file`'s effect preview as text: a capped unified diff with every character visible.

What a person approves must be shown whole and inert, so control characters, zero-width
characters and the bidirectional overrides of "Trojan Source" are written as escapes
(`\\x1b`, `\\u202e`), and a long diff is cut, saying how much was left out. `difflib` is
quadratic in the worst case, so it only compares the changed region (common leading and
trailing lines are skipped first) and only up to `MAX_COMPARED_LINES` lines a side; a
larger region is shown as a plain replacement (every old line out, every new line in).
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections.abc import Iterable, Iterator, Sequence

from signoff.text.neutral import neutralise
from signoff.tools.preview.gather import CUT_NOTE_CHARS, MAX_PREVIEW_CHARS

MAX_COMPARED_BYTES = 1 << 20
"""A current file (or new content) larger than this is summarised, not compared."""
MAX_PREVIEW_LINES = 200
MAX_COMPARED_LINES = 2_000
"""Lines a side of the changed region that difflib compares (about 0.2 s at worst)."""
CONTEXT_LINES = 3

_HUNK = re.compile(r"^@@ -(\d+)((?:,\d+)?) \+(\d+)((?:,\d+)?) @@$")
_NO_NEWLINE = "\\ No newline at end of file"


def write_preview(
    shown: str,
    now: bytes | None,
    size: int,
    content: str,
    *,
    now_notes: Sequence[str] = (),
    new_notes: Sequence[str] = (),
    withheld: str | None = None,
) -> str:
    """`write_file`'s effect on `shown`: a capped unified diff from the file now to `content`.

    Args:
        now: the current file's first `MAX_COMPARED_BYTES + 1` bytes; None when there is
            no file yet (the diff then adds every line).
        size: the current file's size.
        now_notes, new_notes: said in the `---` and `+++` headers (e.g. where it really is).
        withheld: why the current content is not shown (only its size): the new content
            is then shown as added lines.
    """
    name, new_size = visible(shown), len(content.encode(errors="surrogatepass"))
    if now is not None and size == new_size and now == content.encode(errors="surrogatepass"):
        return f"write_file would leave {name} as it is: it already holds exactly this content ({many(size, 'byte')})."
    after = [f"{'new file' if now is None else 'after write_file'}: {many(new_size, 'byte')}, {count_lines(content)}"]
    if new_size > MAX_COMPARED_BYTES:
        after.append(f"over {MAX_COMPARED_BYTES:,} bytes: not compared")
    new_header = f"+++ {name} ({'; '.join([*after, *new_notes])})"
    if now is None:
        return capped(*_framed(["--- /dev/null", new_header], _diff("", content)))
    old = None if withheld else _text(now, size)
    if withheld:
        before = [f"now: {many(size, 'byte')}, not shown: {withheld}"]
    else:
        before = [f"now: {many(size, 'byte')}, {count_lines(old)}" if old is not None else _why_not_compared(now, size)]
    old_header = f"--- {name} ({'; '.join([*before, *now_notes])})"
    if old is None or new_size > MAX_COMPARED_BYTES:
        return capped(*_framed([old_header, new_header], _shown_parts([("+", split_lines(content))])))
    return capped(*_framed([old_header, new_header], _diff(old, content)))


def _text(data: bytes, size: int) -> str | None:
    """`data` as text, when it is all of the file and UTF-8 without NUL bytes."""
    if size > MAX_COMPARED_BYTES or len(data) > MAX_COMPARED_BYTES or b"\0" in data:
        return None
    try:
        return data.decode()
    except UnicodeDecodeError:
        return None


def _why_not_compared(data: bytes, size: int) -> str:
    if size > MAX_COMPARED_BYTES or len(data) > MAX_COMPARED_BYTES:
        return f"now: {max(size, len(data)):,} bytes, over {MAX_COMPARED_BYTES:,}: not compared"
    return f"now: {many(size, 'byte')} of binary or non-UTF-8 data: not shown"


def visible(text: str) -> str:
    """`text` with control, zero-width and bidi-override characters written as escapes, and
    its newlines too (a line or a name stays one line)."""
    return neutralise(text).replace("\n", "\\x0a")


def split_lines(text: str) -> list[str]:
    """The lines of `text`, split on `\\n` only, each keeping its `\\n` (the last may lack it)."""
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def count_lines(text: str) -> str:
    """`1 line`, `12 lines`: how many lines `text` has."""
    return many(len(split_lines(text)), "line")


def many(count: int, one: str, more: str | None = None) -> str:
    """`1 file`, `2 files`, `1,000 directories`."""
    return f"{count:,} {one if count == 1 else more or one + 's'}"


_Shown = tuple[Iterator[str], "int | None"]
"""Diff lines to show, and how many there are when that is known without making them all."""


def unified_diff(old: str, new: str) -> Iterator[str]:
    """The hunks of a unified diff from `old` to `new` (no file headers), one line each.

    Lines are shown without their ends; a last line without `\\n` is followed by git's
    `\\ No newline at end of file`.
    """
    return _diff(old, new)[0]


def _diff(old: str, new: str) -> _Shown:
    a, b = split_lines(old), split_lines(new)
    same = _common(zip(a, b, strict=False))  # the sides may differ in length: compare while both last
    tail = _common(zip(reversed(a[same:]), reversed(b[same:]), strict=False))
    start = max(same - CONTEXT_LINES, 0)  # keep the context difflib would show
    a_end, b_end = (len(side) - max(tail - CONTEXT_LINES, 0) for side in (a, b))
    if max(len(a), len(b)) - same - tail > MAX_COMPARED_LINES:
        return _replacement(a[start:a_end], b[start:b_end], start, same - start, tail)
    compared = difflib.unified_diff(a[start:a_end], b[start:b_end], n=CONTEXT_LINES, lineterm="")
    hunks = (_shifted(line, start) for line in itertools.islice(compared, 2, None))
    return (shown for line in hunks for shown in _shown(line)), None  # at most a few thousand


def _common(pairs: Iterable[tuple[str, str]]) -> int:
    return sum(1 for _ in itertools.takewhile(lambda pair: pair[0] == pair[1], pairs))


def _shifted(line: str, offset: int) -> str:
    """A hunk header of a diff of lines from `offset` on, numbered as in the whole file."""
    found = _HUNK.match(line) if line.startswith("@@") else None
    if found is None or not offset:
        return line
    old, old_count, new, new_count = found.groups()
    return f"@@ -{int(old) + offset}{old_count} +{int(new) + offset}{new_count} @@"


def _replacement(a: Sequence[str], b: Sequence[str], start: int, lead: int, tail: int) -> _Shown:
    """One hunk replacing all of a region too large to compare line by line."""
    trail = min(tail, CONTEXT_LINES)
    why = f"(over {MAX_COMPARED_LINES:,} lines changed: not compared line by line, so all shown replaced)"
    header = f"@@ -{_range(start, len(a))} +{_range(start, len(b))} @@ {why}"
    parts = [
        (" ", a[:lead]),
        ("-", a[lead : len(a) - trail]),
        ("+", b[lead : len(b) - trail]),
        (" ", a[len(a) - trail :]),
    ]
    return _framed([header], _shown_parts(parts))


def _shown_parts(parts: Sequence[tuple[str, Sequence[str]]]) -> _Shown:
    """Runs of lines, each with its prefix, and how many lines they show (the last line
    of a file may add git's no-newline note)."""
    total = sum(len(lines) + (bool(lines) and not lines[-1].endswith("\n")) for _, lines in parts)
    return (shown for prefix, lines in parts for line in lines for shown in _shown(prefix + line)), total


def _framed(headers: list[str], body: _Shown) -> _Shown:
    lines, total = body
    return itertools.chain(headers, lines), None if total is None else len(headers) + total


def _range(start: int, length: int) -> str:
    """A hunk range as difflib writes it (1-based; `start,0` for an empty one)."""
    first = start + 1 if length else start
    return str(first) if length == 1 else f"{first},{length}"


def _shown(line: str) -> Iterator[str]:
    if line.startswith("@@"):
        yield line
        return
    body = line[1:]
    yield line[0] + visible(body.removesuffix("\n"))
    if not body.endswith("\n"):
        yield _NO_NEWLINE


def capped(
    lines: Iterable[str],
    total: int | None = None,
    max_lines: int = MAX_PREVIEW_LINES,
    max_chars: int = MAX_PREVIEW_CHARS,
) -> str:
    """The first `lines`, up to `max_lines` lines and `max_chars` characters in all, and a
    note saying how many were left out (`total` of them in all; counted when not given).

    The lines kept leave `CUT_NOTE_CHARS` of `max_chars` for the notes, so a cut diff fits
    the preview limit whole and is never cut again (`signoff.tools.preview.gather`)."""
    kept: list[str] = []
    size = pulled = 0
    rest = iter(lines)
    for line in rest:
        pulled += 1
        room = max_chars - CUT_NOTE_CHARS - size
        if len(kept) == max_lines or room <= 0:
            break
        if len(line) > room:  # one long line: show its start
            kept.append(line[:room] + " [line cut]")
            break
        kept.append(line)
        size += len(line) + 1
    else:
        return "\n".join(kept)
    left = total - len(kept) if total is not None else pulled - len(kept) + sum(1 for _ in rest)
    if left:
        kept.append(f"[... {left:,} more line{'' if left == 1 else 's'} not shown, of {len(kept) + left:,}]")
    return "\n".join(kept)


__all__ = [
    "CONTEXT_LINES",
    "MAX_COMPARED_BYTES",
    "MAX_COMPARED_LINES",
    "MAX_PREVIEW_LINES",
    "capped",
    "count_lines",
    "many",
    "split_lines",
    "unified_diff",
    "visible",
    "write_preview",
]
