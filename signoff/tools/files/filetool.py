"""`FileTool`: what the file tools share.

Argument checks, the scope decision (twice: when the model asks, and again, on
descriptors, when the call runs), the off-limits guard, errors as results, and the
threads their blocking I/O runs on: a small pool of their own, never asyncio's
default one, so no file call can starve the worker's other work.
"""

from __future__ import annotations

import asyncio
import os
import stat
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import Field

from signoff.tools._arguments import Arguments, json_schema, validate_arguments
from signoff.tools.base import ToolCapabilities, ToolResult
from signoff.tools.files.fs import EscapeError, Probe, open_beneath, probe_beneath
from signoff.tools.files.guard import Guard, PathRefused, check_path, require_regular
from signoff.tools.files.scope import ScopePolicy, WorkspaceScope
from signoff.tools.preview.diff import visible

FILE_TOOL_THREADS = 4
"""Threads of the pool file tools run on; fixed, since no file call can block for long."""

PATH_HELP = "Relative paths are relative to the workspace."
_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def file_tool_executor() -> ThreadPoolExecutor:
    """The pool file tools do their I/O on (threads named `signoff-file-tool`), made once."""
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(FILE_TOOL_THREADS, thread_name_prefix="signoff-file-tool")
        return _executor


class PathArguments(Arguments):
    path: str = Field(description=f"The file. {PATH_HELP}")


class TreatedAsOutside(Exception):
    """Inside by location, but treated as outside (e.g. a file with several hard links)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def split_last(path: str) -> tuple[str, str | None]:
    """`(parent, name)` of `path`; name is None when the path ends in `.` or `..`."""
    head, _, name = path.rstrip("/").rpartition("/")
    parent = head or ("/" if path.startswith("/") else ".")
    return parent, (None if name in ("", ".", "..") else name)


@dataclass(frozen=True)
class Place:
    """Where one running call resolves its path.

    Attributes:
        root_fd: the workspace root (confined) or `/` (`in_root`: the call may go anywhere).
        path: the call's path, relative to `root_fd` (absolute when `in_root`).
        in_root: whether the call may leave the workspace.
        shown: the path as the model wrote it, for messages.
        guard: what is off limits.
        workspace: device and inode of the workspace root, which is never removed.
    """

    root_fd: int
    path: str
    in_root: bool
    shown: str
    guard: Guard
    workspace: tuple[int, int]

    @property
    def confined(self) -> bool:
        return not self.in_root

    def open(self, path: str, flags: int, mode: int = 0o666) -> int:
        """`open_beneath` from this place's root (the caller closes the descriptor)."""
        return open_beneath(self.root_fd, path, flags, mode, in_root=self.in_root)

    def probe(self, path: str) -> Probe:
        return probe_beneath(self.root_fd, path, in_root=self.in_root)

    def open_regular(self, flags: int) -> tuple[int, os.stat_result]:
        """Open the call's path, which must be a regular file and not off limits.

        It is first opened `O_PATH` (which never blocks and has no effect on a device),
        checked, then opened with `flags | O_NONBLOCK` and compared: a swap in between
        is refused, never acted on.

        Raises:
            PathRefused: off limits, not a regular file, or swapped while opening.
            IsADirectoryError: it is a directory.
            OSError: it cannot be opened (EscapeError when confined and it leads out).
        """
        probe_fd = self.open(self.path, os.O_PATH)
        try:
            found = os.fstat(probe_fd)
            self.guard.check_opened(self.shown, probe_fd, found)
        finally:
            os.close(probe_fd)
        require_regular(self.shown, found)
        fd = self.open(self.path, flags | os.O_NONBLOCK | os.O_NOCTTY)
        try:
            opened = os.fstat(fd)
            if (opened.st_dev, opened.st_ino) != (found.st_dev, found.st_ino):
                raise PathRefused(f"{self.shown} changed while it was being opened; nothing was done")
        except BaseException:
            os.close(fd)
            raise
        return fd, opened


class FileTool:
    """The base of the file tools.

    Subclasses set `name`, `description`, `arguments_model` and implement `run`, which
    does blocking I/O on a `Place` (on the file-tool pool). `execute` takes `approved`
    (the tools are `approval_aware`): only an approved call under `approve_outside`, or
    any call under `allow`, may leave the workspace when it runs.
    """

    kind = "file"
    idempotent = True
    name: str
    description: str
    arguments_model: ClassVar[type[PathArguments]] = PathArguments

    def __init__(self, scope: WorkspaceScope) -> None:
        self.scope = scope
        self.parameters: dict[str, Any] = json_schema(self.arguments_model)

    @property
    def capabilities(self) -> ToolCapabilities:
        """Told whether a call was approved; a preview (a subclass's) runs on the file-tool pool."""
        return ToolCapabilities(approval_aware=self.execute, preview_executor=file_tool_executor())

    def requires_approval(self, arguments: dict[str, Any]) -> bool:
        """True when the policy is `approve_outside` and the call would leave the workspace.

        Resolved as the call will be (`leaves`), without touching anything. Invalid
        arguments and off-limits paths are refused when run, so nobody is asked.
        """
        args = validate_arguments(self.arguments_model, self.name, arguments)
        if isinstance(args, ToolResult) or self.scope.policy is not ScopePolicy.APPROVE_OUTSIDE:
            return False
        try:
            check_path(args.path, self.scope.absolute(args.path))
            return self.leaves(args)
        except (PathRefused, OSError, ValueError):
            return False  # refused or failing when run: unapproved runs stay confined

    def leaves(self, args: Any) -> bool:
        """Whether this call would leave the workspace (subclasses add their own cases)."""
        return self.scope.probe(args.path).leaves

    async def execute(self, arguments: dict[str, Any], *, approved: bool = False) -> ToolResult:
        """Run the call; `approved`: a person approved this very call."""
        args = validate_arguments(self.arguments_model, self.name, arguments)
        if isinstance(args, ToolResult):
            return args
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(file_tool_executor(), self._execute, args, approved)

    def preview_of(self, arguments: dict[str, Any], show: Callable[[Place, Any], ToolResult]) -> str:
        """What `show` says of this call, run on the place an approved call would run on.

        The same argument checks, scope, guard and descriptor-based opens as running it,
        so a preview reads nothing the call could not touch. Blocking I/O: call it off the
        event loop. A call that would fail says so, with the tool's own error.
        """
        args = validate_arguments(self.arguments_model, self.name, arguments)
        if not isinstance(args, ToolResult):
            args = self._on_place(args, self.scope.confines(approved=True), show)
        if args.is_error:  # the model wrote the path: shown inert
            return f"{self.name} would fail, even if approved: {visible(args.content)}"
        return args.content

    def _execute(self, args: Any, approved: bool) -> ToolResult:
        return self._on_place(args, self.scope.confines(approved), self.run)

    def _on_place(self, args: Any, confined: bool, act: Callable[[Place, Any], ToolResult]) -> ToolResult:
        """`act` on the call's place; refusals and failures as the tool errors the model reads."""
        shown = args.path
        try:
            check_path(shown, self.scope.absolute(shown))
            with self._place(shown, confined=confined) as place:
                return act(place, args)
        except EscapeError:
            return ToolResult.error(self.scope.unapproved_refusal(shown))
        except TreatedAsOutside as exc:
            return ToolResult.error(self.scope.unapproved_refusal(shown, exc.why))
        except PathRefused as exc:
            return ToolResult.error(str(exc))
        except OSError as exc:
            return ToolResult.error(f"{shown}: {exc.strerror or exc}")
        except ValueError as exc:  # e.g. a NUL byte in the path
            return ToolResult.error(f"{shown!r}: {exc}")

    @contextmanager
    def _place(self, path: str, *, confined: bool) -> Iterator[Place]:
        relative = self.scope.relative(path) if confined else self.scope.absolute(path)
        if relative is None:
            raise EscapeError(path)
        root = str(self.scope.root) if confined else "/"
        root_fd = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            workspace = os.stat(self.scope.root)
            yield Place(
                root_fd=root_fd,
                path=relative,
                in_root=not confined,
                shown=path,
                guard=Guard.now(),
                workspace=(workspace.st_dev, workspace.st_ino),
            )
        finally:
            os.close(root_fd)

    def run(self, place: Place, args: Any) -> ToolResult:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.scope!r})"


def hard_linked(found: os.stat_result | None) -> bool:
    """A regular file with more than one name: writing it changes every one of them."""
    return found is not None and stat.S_ISREG(found.st_mode) and found.st_nlink > 1


def write_target(place: Place) -> tuple[str, str]:
    """The parent and name of the file a write names, once it is sure to stay where it may.

    Raises:
        PathRefused: the path ends in `.` or `..`.
        TreatedAsOutside: a confined call's path leads out of the workspace.
    """
    parent, name = split_last(place.path)
    if name is None:
        raise PathRefused(f"{place.shown} does not name a file")
    if place.confined and place.probe(place.path).leaves:
        raise TreatedAsOutside("it leads out through '..', an absolute path or a symlink")
    return parent, name


def refuse_hard_linked(place: Place, found: os.stat_result) -> None:
    """Refuse, for a confined call, a file whose other names may be outside the workspace.

    Raises:
        TreatedAsOutside: it is confined and the file has several hard links.
    """
    if place.confined and hard_linked(found):
        raise TreatedAsOutside(f"it has {found.st_nlink} hard links, so the same file is also elsewhere")


def dangling_link(shown: str) -> str:
    """The refusal of a write through a symbolic link to nothing."""
    return f"{shown} is a symbolic link to a file that does not exist; write to the file's own path instead"


def read_up_to(fd: int, limit: int) -> bytes:
    """At most `limit` bytes from `fd`."""
    chunks, left = [], limit
    while left > 0 and (chunk := os.read(fd, min(left, 1 << 16))):
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


__all__ = [
    "FILE_TOOL_THREADS",
    "PATH_HELP",
    "FileTool",
    "PathArguments",
    "Place",
    "TreatedAsOutside",
    "dangling_link",
    "file_tool_executor",
    "hard_linked",
    "read_up_to",
    "refuse_hard_linked",
    "split_last",
    "write_target",
]
