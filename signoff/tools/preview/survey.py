"""A bounded look at a directory tree before it is removed (`remove_path`'s effect preview).

Walked through descriptors as `fs.remove_tree` removes it: each level is opened
`O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK` relative to its parent's descriptor, so a link is
counted, never followed, and an entry swapped for something else is skipped, not entered.
Nothing is read but directory entries and their `lstat`. The walk stops after
`max_entries` entries, `seconds`, or `MAX_SURVEY_DEPTH` levels, and does not enter a system
filesystem mounted inside the tree; the survey then says its counts are a lower bound.
"""

from __future__ import annotations

import itertools
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from signoff.tools.files.guard import Guard, kind_of
from signoff.tools.preview.diff import many, visible

SURVEY_ENTRIES = 10_000
SURVEY_SECONDS = 2.0
MAX_SURVEY_DEPTH = 100
"""Levels entered (each holds a descriptor open while its subdirectories are walked)."""
SHOWN_ENTRIES = 20

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@dataclass
class TreeSurvey:
    """What a directory tree holds, as far as the walk got.

    Attributes:
        files: entries that are neither directories nor symbolic links.
        directories: directories beneath the top one.
        links: symbolic links (removed themselves; what they point to stays).
        bytes: the sizes of the files.
        shown: the first entries, relative to the top's parent (directories end in `/`).
        stopped: why the counts are a lower bound (empty when they are exact).
        secrets: the worker's secret files found in the tree.
    """

    files: int = 0
    directories: int = 0
    links: int = 0
    bytes: int = 0
    shown: list[str] = field(default_factory=list)
    stopped: list[str] = field(default_factory=list)
    secrets: list[str] = field(default_factory=list)

    @property
    def entries(self) -> int:
        return self.files + self.directories + self.links


class _Walk:
    def __init__(self, guard: Guard, max_entries: int, deadline: float, clock: Callable[[], float]) -> None:
        self.guard, self.max_entries, self.deadline, self.clock = guard, max_entries, deadline, clock
        self.survey = TreeSurvey()
        self.spent = False
        self.unreadable = 0

    def over(self) -> bool:
        """Whether the budget is spent (and, the first time, why)."""
        if not self.spent and self.survey.entries >= self.max_entries:
            self.spent = self.note(f"counting stopped after {self.max_entries:,} entries")
        elif not self.spent and self.clock() > self.deadline:
            self.spent = self.note("counting stopped when its time ran out")
        return self.spent

    def note(self, why: str) -> bool:
        if why not in self.survey.stopped:
            self.survey.stopped.append(why)
        return True

    def visit(self, fd: int, label: str, depth: int) -> None:
        with os.scandir(fd) as found:  # read no more than the budget can count
            batch = sorted(itertools.islice(found, self.max_entries - self.survey.entries + 1), key=lambda e: e.name)
        for entry in batch:
            if self.over():
                return
            try:
                found_stat = entry.stat(follow_symlinks=False)
            except OSError:
                continue  # gone meanwhile: nothing to remove
            self.count(fd, entry.name, f"{label}/{visible(entry.name)}", found_stat, depth)

    def count(self, fd: int, name: str, label: str, found: os.stat_result, depth: int) -> None:
        secret = self.guard.secrets.get((found.st_dev, found.st_ino))
        if secret is not None:
            self.survey.secrets.append(f"{label} ({secret})")
        if stat.S_ISLNK(found.st_mode):
            self.survey.links += 1
            self.show(f"{label} (symbolic link)")
        elif not stat.S_ISDIR(found.st_mode):
            self.survey.files += 1
            self.survey.bytes += found.st_size if stat.S_ISREG(found.st_mode) else 0
            self.show(f"{label} ({many(found.st_size, 'byte')})" if stat.S_ISREG(found.st_mode) else label)
        else:
            self.survey.directories += 1
            self.show(f"{label}/")
            self.enter(fd, name, label, found, depth + 1)

    def enter(self, fd: int, name: str, label: str, found: os.stat_result, depth: int) -> None:
        if found.st_dev in self.guard.devices:
            self.note(f"a system filesystem is mounted at {label}: not counted")
            return
        if depth > MAX_SURVEY_DEPTH:
            self.note(f"directories deeper than {MAX_SURVEY_DEPTH} levels were not counted")
            return
        try:
            child = os.open(name, _DIRECTORY, dir_fd=fd)
        except OSError:  # unreadable, or no longer a directory
            self.unreadable += 1
            return
        try:
            opened = os.fstat(child)
            if (opened.st_dev, opened.st_ino) != (found.st_dev, found.st_ino):
                raise OSError("swapped while it was being opened")
            self.visit(child, label, depth)
        except OSError:
            self.unreadable += 1
        finally:
            os.close(child)

    def show(self, line: str) -> None:
        if len(self.survey.shown) < SHOWN_ENTRIES:
            self.survey.shown.append(line)


def survey_tree(
    dir_fd: int,
    name: str,
    found: os.stat_result,
    guard: Guard,
    *,
    max_entries: int | None = None,
    seconds: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> TreeSurvey:
    """Count what directory `name` of `dir_fd` (whose `lstat` is `found`) holds, following
    no link; a directory that cannot be read, or is swapped meanwhile, is not counted.

    Args:
        max_entries, seconds: the walk's budget (`SURVEY_ENTRIES`, `SURVEY_SECONDS` when None).
    """
    deadline = clock() + (SURVEY_SECONDS if seconds is None else seconds)
    walk = _Walk(guard, SURVEY_ENTRIES if max_entries is None else max_entries, deadline, clock)
    walk.enter(dir_fd, name, visible(name), found, 0)
    if walk.unreadable:
        walk.survey.stopped.append(f"{many(walk.unreadable, 'directory', 'directories')} could not be read")
    return walk.survey


def removal_preview(
    dir_fd: int, name: str, found: os.stat_result, guard: Guard, shown: str, *, list_entries: bool = True
) -> str:
    """What removing entry `name` of `dir_fd` (whose `lstat` is `found`) would delete.

    Args:
        list_entries: name the first entries of a directory (else counts only: the
            preview is recorded in history, which may be read more widely than the files).
    """
    what = visible(shown)
    if stat.S_ISLNK(found.st_mode):
        target = visible(os.readlink(name, dir_fd=dir_fd))
        return f"remove_path would delete the symbolic link {what} itself; what it points to ({target}) stays."
    if stat.S_ISREG(found.st_mode):
        text = f"remove_path would delete the file {what} ({many(found.st_size, 'byte')})."
        if found.st_nlink > 1:
            text += f" Its data stays under its {many(found.st_nlink - 1, 'other name')} (hard links)."
        return text
    if not stat.S_ISDIR(found.st_mode):
        return f"remove_path would delete {what}, {kind_of(found)} (its name only: nothing is read from it)."
    return describe_tree(shown, survey_tree(dir_fd, name, found, guard), listed=list_entries)


def describe_tree(shown: str, survey: TreeSurvey, *, listed: bool = True) -> str:
    """The removal of a directory tree in words, with its first entries."""
    bound = "at least " if survey.stopped else ""
    counts = (
        f"{bound}{many(survey.files, 'file')}, {many(survey.directories, 'directory', 'directories')}"
        f", {many(survey.links, 'symbolic link')}; {bound}{many(survey.bytes, 'byte')} in all"
    )
    lines = [f"remove_path would delete the directory {visible(shown)} and everything in it: {counts}."]
    lines += [f"Counts are a lower bound: {why}." for why in survey.stopped]
    lines += [
        f"Among them, the worker's own secret file {secret}. File tools never remove it: the removal would be refused."
        for secret in survey.secrets
    ]
    if not listed:
        return "\n".join([*lines, "  (entries not listed: the directory is outside the workspace)"])
    lines += ["  " + entry for entry in survey.shown]
    if survey.entries > len(survey.shown):
        lines.append(f"  [... and {bound}{survey.entries - len(survey.shown):,} more]")
    return "\n".join(lines)


__all__ = [
    "MAX_SURVEY_DEPTH",
    "SHOWN_ENTRIES",
    "SURVEY_ENTRIES",
    "SURVEY_SECONDS",
    "TreeSurvey",
    "describe_tree",
    "removal_preview",
    "survey_tree",
]
