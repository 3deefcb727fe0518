""" "Approve similar": the pattern a call stands for, derived from the call alone (pure).

A pending request shows `similar_pattern` before anyone decides, and an approval carrying
`"grant": {"match": "similar"}` approves later calls of the run that the pattern covers
(`covers`). Patterns are derived deterministically, and only for tools whose arguments have
an obvious shape:

- `run_command`: the program and the class of each argument: `run_command: git log -n <number>
  <path>` (numbers become `<number>`, paths (with `/` or `.`) `<path>`; flags and other words,
  such as a subcommand, are kept as they are, so `git log` never covers `git push`). A command
  with shell syntax (`;`, `|`, `&`, `$`, redirections, quotes that do not parse...) has no
  pattern: what it runs cannot be told from its words.
- the file tools (`read_file`, `list_dir`, `write_file`, `remove_path`): the directory of the
  path: `write_file: under src/app/` covers any path beneath it (never one with `..`);
  `remove_path` keeps its `recursive` flag.

Any other tool has no pattern, and its calls cannot be granted as "similar".
"""

from __future__ import annotations

import posixpath
import re
import shlex
from typing import Any

COMMAND_TOOL = "run_command"
FILE_TOOLS = frozenset({"read_file", "list_dir", "write_file", "remove_path"})
_SHELL = re.compile(r"[;|&$`<>(){}*?!\[\]~#\n\r\\'\"=]")
_FLAG = re.compile(r"^--?[A-Za-z0-9][A-Za-z0-9_-]*$")
_NUMBER = re.compile(r"^[0-9]+(\.[0-9]+)?$")
_PROGRAM = re.compile(r"^[A-Za-z0-9_./+-]+$")
UNDER = " under "


def similar_pattern(tool: str, arguments: Any) -> str | None:
    """The pattern this call stands for (None: the tool or these arguments have none)."""
    if not isinstance(arguments, dict):
        return None
    if tool == COMMAND_TOOL:
        return _command_pattern(arguments.get("command"))
    if tool in FILE_TOOLS:
        folder = _folder(arguments.get("path", "." if tool == "list_dir" else None))
        if folder is None:
            return None
        flag = f" (recursive={str(bool(arguments.get('recursive', False))).lower()})" if tool == "remove_path" else ""
        return f"{tool}:{UNDER}{folder}{flag}"
    return None


def covers(pattern: str, tool: str, arguments: Any) -> bool:
    """Whether a grant's `pattern` covers this call."""
    mine = similar_pattern(tool, arguments)
    if mine is None:
        return False
    if tool == COMMAND_TOOL:
        return mine == pattern
    granted, ours = _split(pattern), _split(mine)
    if granted is None or ours is None or granted[0] != ours[0] or granted[2] != ours[2]:
        return False
    if granted[1].startswith("/") != ours[1].startswith("/"):
        return False
    return _relative(ours[1]).startswith(_relative(granted[1]))


def _relative(folder: str) -> str:
    return "" if folder == "./" else folder


def _command_pattern(command: Any) -> str | None:
    if not isinstance(command, str) or not command.strip() or _SHELL.search(command):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if not words or not _PROGRAM.match(words[0]):
        return None
    return " ".join([f"{COMMAND_TOOL}:", words[0], *map(_word_class, words[1:])])


def _word_class(word: str) -> str:
    if _FLAG.match(word):
        return word
    if _NUMBER.match(word):
        return "<number>"
    if "/" in word or "." in word:
        return "<path>"
    return word


def _folder(path: Any) -> str | None:
    """The directory a path lies in, lexically normalised and ending `/`; None for a path that
    climbs (`..`) or is not a plain string."""
    if not isinstance(path, str) or not path or "\x00" in path or "\\" in path:
        return None
    if ".." in path.split("/"):
        return None
    normal = posixpath.normpath(path)
    folder = posixpath.dirname(normal) or "."
    return folder if folder.endswith("/") else f"{folder}/"


def _split(pattern: str) -> tuple[str, str, str] | None:
    """(tool, folder, flag) of a file tool's pattern."""
    tool, sep, rest = pattern.partition(f":{UNDER}")
    if not sep:
        return None
    folder, _, flag = rest.partition(" (")
    return tool, folder, flag
