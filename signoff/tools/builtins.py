"""The default agent's tools (CONTRACT.md): a shell command and four file tools.

File tools take a `path`; relative paths are relative to the workspace. Whether a
call may run is the scope's decision (`WorkspaceScope`), taken when the model asks
(`requires_approval`, which resolves the path without touching anything) and again
when the call runs, on descriptors (`FileTool`): a call that may not leave the workspace
(`WorkspaceScope.confines`) is resolved beneath the root, so nothing that changed in
between can send it outside. Whatever the policy, they never touch `/proc`, `/sys`,
`/dev` or the worker's secret files, and read and write only regular files
(`signoff.tools.files.guard`). Failures (a missing file, a
directory without `recursive`) are tool errors for the model, not exceptions.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pydantic import Field

from signoff.tools.approval import ApprovalRequiredTool
from signoff.tools.base import Tool, ToolCapabilities, ToolResult
from signoff.tools.command import RunCommand
from signoff.tools.files.filetool import (
    PATH_HELP,
    FileTool,
    PathArguments,
    Place,
    dangling_link,
    hard_linked,
    read_up_to,
    refuse_hard_linked,
    split_last,
    write_target,
)
from signoff.tools.files.fs import make_dirs_beneath, remove_tree
from signoff.tools.files.guard import Guard, PathRefused, descriptor_path, is_beneath
from signoff.tools.files.scope import WorkspaceScope
from signoff.tools.preview.effects import show_write
from signoff.tools.preview.survey import removal_preview
from signoff.tools.process import tool_owner

DEFAULT_MAX_READ_BYTES = 256 * 1024
DEFAULT_MAX_LIST_ENTRIES = 1000

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY


class ListDirArguments(PathArguments):
    path: str = Field(".", description=f"The directory. {PATH_HELP}")


class WriteFileArguments(PathArguments):
    content: str = Field(description="The file's complete new text.")


class RemovePathArguments(PathArguments):
    path: str = Field(description=f"The file or directory. {PATH_HELP}")
    recursive: bool = Field(False, description="Required to remove a directory and all it holds.")


class ReadFile(FileTool):
    """Reads a text file; past `max_bytes`, the start is returned with a note saying so.

    A file with more than one hard link counts as outside the workspace (its other names
    may be anywhere on the same filesystem, `/etc/shadow`'s included), as for a write: judged
    when the model asks, and again on the opened descriptor when the call runs."""

    name = "read_file"
    description = "Read a text file"

    def __init__(self, scope: WorkspaceScope, *, max_bytes: int = DEFAULT_MAX_READ_BYTES) -> None:
        super().__init__(scope)
        self.max_bytes = max_bytes

    def leaves(self, args: Any) -> bool:
        probe = self.scope.probe(args.path)
        return probe.leaves or hard_linked(probe.stat)

    def run(self, place: Place, args: PathArguments) -> ToolResult:
        try:
            fd, found = place.open_regular(os.O_RDONLY)
        except IsADirectoryError:
            return ToolResult.error(f"{args.path} is a directory; use list_dir to see its entries")
        try:
            refuse_hard_linked(place, found)
            data = read_up_to(fd, self.max_bytes)
        finally:
            os.close(fd)
        text = data.decode(errors="replace")
        if found.st_size > len(data):
            text += f"\n[file truncated: showing the first {len(data)} of {found.st_size} bytes]"
        return ToolResult(content=text)


class WriteFile(FileTool):
    """Writes a text file (UTF-8), replacing it, creating missing parent directories.

    An existing file is opened without truncating, checked (a regular file, one hard link
    unless the call may leave the workspace), then truncated and written. A new one is
    created with `O_EXCL | O_NOFOLLOW`, so never through a symlink.
    """

    name = "write_file"
    description = "Write a text file, replacing it if it exists and creating missing parent directories"
    arguments_model = WriteFileArguments

    def __init__(self, scope: WorkspaceScope) -> None:
        super().__init__(scope)
        self.owner = tool_owner()  # SIGNOFF_TOOL_USER owns what a root worker creates

    def leaves(self, args: Any) -> bool:
        probe = self.scope.probe(args.path)
        return probe.leaves or hard_linked(probe.stat)

    @property
    def capabilities(self) -> ToolCapabilities:
        return replace(super().capabilities, preview=self.preview)

    def preview(self, arguments: dict[str, Any]) -> str | None:
        """A unified diff of the file now against `content`, as an approved call would
        write it (blocking I/O; `signoff.tools.preview.gather.previews` runs it off the event loop)."""
        return self.preview_of(arguments, self.show)

    def show(self, place: Place, args: WriteFileArguments) -> ToolResult:
        """What `run` would change, found by the same checks and guarded opens (for reading)."""
        return show_write(place, args.content, self.scope)

    def run(self, place: Place, args: WriteFileArguments) -> ToolResult:
        parent, name = write_target(place)
        data = args.content.encode()
        fd = self._open(place, parent, name)
        try:
            refuse_hard_linked(place, os.fstat(fd))
            os.ftruncate(fd, 0)
            _write_all(fd, data)
        finally:
            os.close(fd)
        return ToolResult(content=f"wrote {len(data)} bytes to {args.path}")

    def _open(self, place: Place, parent: str, name: str) -> int:
        """The file to write, opened (an existing one) or created (a new one)."""
        dir_fd = make_dirs_beneath(place.root_fd, parent, in_root=place.in_root, owner=self.owner)
        try:
            place.guard.check_opened(place.shown, dir_fd, os.fstat(dir_fd))
            for _ in range(3):  # a file that comes and goes while we look: give up after 3
                try:
                    return place.open_regular(os.O_WRONLY)[0]
                except FileNotFoundError:
                    pass
                try:
                    fd = os.open(name, _CREATE, 0o666, dir_fd=dir_fd)
                    if self.owner is not None:
                        os.fchown(fd, *self.owner)
                    return fd
                except FileExistsError:
                    if stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
                        raise PathRefused(dangling_link(place.shown)) from None
        finally:
            os.close(dir_fd)
        raise PathRefused(f"{place.shown} kept changing while it was being opened; nothing was written")


class RemovePath(FileTool):
    """Removes a file or symlink, or a directory tree when `recursive` is true.

    A symlink is removed itself, never what it points to; a tree is removed through
    descriptors (`fs.remove_tree`), without following links; a tree holding one of the
    worker's secret files or a system filesystem is refused before anything in it is
    removed. The workspace root itself is never removed: every later call would fail.
    """

    name = "remove_path"
    description = "Remove a file, or a directory and everything in it with recursive=true"
    arguments_model = RemovePathArguments

    def leaves(self, args: Any) -> bool:
        parent, name = split_last(args.path)  # the entry itself is never followed
        return self.scope.probe(args.path if name is None else parent).leaves

    @property
    def capabilities(self) -> ToolCapabilities:
        return replace(super().capabilities, preview=self.preview)

    def preview(self, arguments: dict[str, Any]) -> str | None:
        """What would be removed: a file's size, a link (itself), a tree's counts and first
        entries (blocking I/O; `signoff.tools.preview.gather.previews` runs it off the event loop)."""
        return self.preview_of(arguments, self.show)

    def run(self, place: Place, args: RemovePathArguments) -> ToolResult:
        return self._at_target(place, args, functools.partial(_remove, place.guard))

    def show(self, place: Place, args: RemovePathArguments) -> ToolResult:
        """What `run` would remove, found by the same checks, reading only entries' metadata."""
        return self._at_target(place, args, functools.partial(_describe, place.guard, self.scope))

    def _at_target(self, place: Place, args: RemovePathArguments, act: _Act) -> ToolResult:
        """`act` on the entry to remove, once its directory and itself have been checked."""
        parent, name = split_last(place.path)
        if name is None:
            return self._not_a_name(place)
        dir_fd = place.open(parent, os.O_PATH | os.O_DIRECTORY)
        try:
            place.guard.check_opened(place.shown, dir_fd, os.fstat(dir_fd))
            found = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            place.guard.check_secret(place.shown, found)
            if (found.st_dev, found.st_ino) == place.workspace:
                return _root_refusal(args.path)
            return act(dir_fd, name, found, args)
        finally:
            os.close(dir_fd)

    def _not_a_name(self, place: Place) -> ToolResult:
        fd = place.open(place.path, os.O_PATH | os.O_DIRECTORY)
        try:
            found = os.fstat(fd)
        finally:
            os.close(fd)
        if (found.st_dev, found.st_ino) == place.workspace:
            return _root_refusal(place.shown)
        return ToolResult.error(f"{place.shown} ends in '.' or '..'; name the directory itself to remove it")


class ListDir(FileTool):
    """Lists a directory's entries, sorted; subdirectories end with `/`.

    Entries are read from the directory's descriptor and not followed: a symlink to a
    directory is listed as a plain name.
    """

    name = "list_dir"
    description = "List a directory's entries; subdirectories end with /"
    arguments_model = ListDirArguments

    def __init__(self, scope: WorkspaceScope, *, max_entries: int = DEFAULT_MAX_LIST_ENTRIES) -> None:
        super().__init__(scope)
        self.max_entries = max_entries

    def run(self, place: Place, args: ListDirArguments) -> ToolResult:
        fd = place.open(place.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NONBLOCK)
        try:
            place.guard.check_opened(place.shown, fd, os.fstat(fd))
            with os.scandir(fd) as found:
                entries = sorted(f"{e.name}/" if e.is_dir(follow_symlinks=False) else e.name for e in found)
        finally:
            os.close(fd)
        if not entries:
            return ToolResult(content="(empty directory)")
        shown = entries[: self.max_entries]
        if len(entries) > len(shown):
            shown.append(f"[{len(entries) - len(shown)} more entries not shown]")
        return ToolResult(content="\n".join(shown))


_Act = Callable[[int, str, os.stat_result, RemovePathArguments], ToolResult]


def _remove(guard: Guard, dir_fd: int, name: str, found: os.stat_result, args: RemovePathArguments) -> ToolResult:
    if not stat.S_ISDIR(found.st_mode):
        os.unlink(name, dir_fd=dir_fd)
        return ToolResult(content=f"removed {args.path}")
    if not args.recursive:
        return _needs_recursive(args.path)
    above = os.path.dirname(args.path)
    remove_tree(dir_fd, name, lambda path, entry: guard.check_entry(os.path.join(above, path), entry))
    return ToolResult(content=f"removed directory {args.path} and everything in it")


def _describe(
    guard: Guard, scope: WorkspaceScope, dir_fd: int, name: str, found: os.stat_result, args: RemovePathArguments
) -> ToolResult:
    if stat.S_ISDIR(found.st_mode) and not args.recursive:
        return _needs_recursive(args.path)
    inside = is_beneath(descriptor_path(dir_fd), scope.real_root)
    return ToolResult(content=removal_preview(dir_fd, name, found, guard, args.path, list_entries=inside))


def _needs_recursive(path: str) -> ToolResult:
    return ToolResult.error(f"{path} is a directory; pass recursive=true to remove it and everything in it")


def _root_refusal(path: str) -> ToolResult:
    return ToolResult.error(f"{path} is the workspace root itself; it cannot be removed")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def default_tools(scope: WorkspaceScope) -> list[Tool]:
    """The default agent's tools, in CONTRACT order; `run_command` always needs approval."""
    return [
        ApprovalRequiredTool(RunCommand(scope)),
        ReadFile(scope),
        ListDir(scope),
        WriteFile(scope),
        RemovePath(scope),
    ]


__all__ = [
    "DEFAULT_MAX_LIST_ENTRIES",
    "DEFAULT_MAX_READ_BYTES",
    "FileTool",
    "ListDir",
    "ListDirArguments",
    "ReadFile",
    "RemovePath",
    "RemovePathArguments",
    "RunCommand",
    "WriteFile",
    "WriteFileArguments",
    "default_tools",
]
