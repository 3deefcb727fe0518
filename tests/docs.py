"""The manual as the tests read it: README.md and the pages of docs/ (the MkDocs site), their
sections, headings, tables and code blocks.

Tests that run or check what the manual says read it through here, so a page that moves
is moved in one place. Headings, tables and blocks are read outside code fences only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"

_FENCE = re.compile(r"^\s*```(\S*)\s*$")
_HEADING = re.compile(r"^(#{1,6}) (.*)$")


def page(name: str) -> str:
    """The text of `docs/<name>` (or of README.md)."""
    return (README if name == "README.md" else DOCS / name).read_text()


def pages() -> dict[str, str]:
    """Every page of the site, by file name (`getting-started.md`, ...)."""
    return {path.name: path.read_text() for path in sorted(DOCS.glob("*.md"))}


def manual() -> dict[str, str]:
    """The site's pages and README.md."""
    return {"README.md": README.read_text(), **pages()}


@dataclass(frozen=True)
class Block:
    """A fenced code block: its language (the word after the fence), its text, where it is."""

    lang: str
    text: str
    page: str
    line: int

    def __str__(self) -> str:
        return f"{self.page}:{self.line} ({self.lang or 'plain'})"


def blocks(text: str, page: str = "") -> list[Block]:
    """The fenced code blocks of `text`, in order (also those indented in a list item)."""
    found: list[Block] = []
    lang: str | None = None
    start, indent, body = 0, 0, list[str]()
    for number, line in enumerate(text.split("\n"), 1):
        fence = _FENCE.match(line)
        if lang is None and fence:
            lang, start, body = fence.group(1), number, []
            indent = len(line) - len(line.lstrip())
        elif lang is not None and line.strip() == "```":
            found.append(Block(lang, "\n".join(body) + "\n", page, start))
            lang = None
        elif lang is not None:
            body.append(line[indent:] if not line[:indent].strip() else line.lstrip())
    return found


def all_blocks(*langs: str) -> list[Block]:
    """The code blocks of the whole manual in these languages (every block if none is given)."""
    return [b for name, text in manual().items() for b in blocks(text, name) if not langs or b.lang in langs]


def prose_lines(text: str) -> list[str]:
    """The lines of `text` outside code fences."""
    lines, fenced = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def headings(text: str) -> list[tuple[int, str]]:
    """(level, title) of each heading outside code fences."""
    return [(len(m.group(1)), m.group(2).strip()) for m in map(_HEADING.match, prose_lines(text)) if m]


def section(text: str, heading: str) -> str:
    """From the heading that starts with `heading` (`## Grants`) to the next heading of its level
    or above."""
    lines = text.split("\n")
    level = len(heading) - len(heading.lstrip("#"))
    fenced, start = False, None
    for number, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if fenced:
            continue
        match = _HEADING.match(line)
        if start is None and line.startswith(heading):
            start = number
        elif start is not None and match and len(match.group(1)) <= level:
            return "\n".join(lines[start:number])
    if start is None:
        raise KeyError(f"no heading {heading!r}")
    return "\n".join(lines[start:])


def table_rows(text: str) -> list[list[str]]:
    """The body rows of every markdown table outside code fences, as cells (header rows and
    separators left out)."""
    rows: list[list[str]] = []
    lines = prose_lines(text)
    for number, line in enumerate(lines):
        if not line.startswith("|") or re.fullmatch(r"\|[\s:|-]+\|", line.strip()):
            continue
        following = lines[number + 1] if number + 1 < len(lines) else ""
        if re.fullmatch(r"\|[\s:|-]+\|", following.strip()):
            continue  # a header row
        rows.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
    return rows


def code_spans(text: str) -> list[str]:
    """The `code spans` of a line of prose."""
    return re.findall(r"`([^`]+)`", text)
