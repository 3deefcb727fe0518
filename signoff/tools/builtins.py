"""The default agent's tools (CONTRACT.md): a shell command and four file tools.

File tools take a `path`; relative paths are relative to the workspace. Whether a
call may run is the scope's decision on the path's real location: inside runs,
outside is refused, asked about, or run, per `ScopePolicy`. Failures (a missing
file, a directory without `recursive`) are tool errors for the model, not exceptions.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from signoff.tools._arguments import Arguments, json_schema, validate_arguments
from signoff.tools.approval import ApprovalRequiredTool
from signoff.tools.base import Tool, ToolResult
from signoff.tools.command import RunCommand
from signoff.tools.scope import ScopeDecision, WorkspaceScope

DEFAULT_MAX_READ_BYTES = 256 * 1024
DEFAULT_MAX_LIST_ENTRIES = 1000

_PATH_HELP = "Relative paths are relative to the workspace."


class PathArguments(Arguments):
    path: str = Field(description=f"The file. {_PATH_HELP}")


class ListDirArguments(PathArguments):
    path: str = Field(".", description=f"The directory. {_PATH_HELP}")


class WriteFileArguments(PathArguments):
    content: str = Field(description="The file's complete new text.")


class RemovePathArguments(PathArguments):
    path: str = Field(description=f"The file or directory. {_PATH_HELP}")
    recursive: bool = Field(False, description="Required to remove a directory and all it holds.")


class FileTool:
    """What the file tools share: argument checks, the scope, errors as results.

    Subclasses set `name`, `description`, `arguments_model` and implement `run`,
    which does blocking I/O (in a worker thread) on the path as given, joined to
    the root: the OS then resolves it exactly as the scope did.
    """

    kind = "file"
    idempotent = True
    name: str
    description: str
    arguments_model: ClassVar[type[PathArguments]] = PathArguments

    def __init__(self, scope: WorkspaceScope) -> None:
        self.scope = scope
        self.parameters: dict[str, Any] = json_schema(self.arguments_model)

    def requires_approval(self, arguments: dict[str, Any]) -> bool:
        """True when the path is outside the workspace and the policy asks a human."""
        args = validate_arguments(self.arguments_model, self.name, arguments)
        # Invalid arguments run nowhere: `execute` answers them with an error.
        return not isinstance(args, ToolResult) and self.scope.check(args.path) is ScopeDecision.ASK

    async def execute(self, arguments: dict[str, Any]) -> ToolResult:
        args = validate_arguments(self.arguments_model, self.name, arguments)
        if isinstance(args, ToolResult):
            return args
        if self.scope.check(args.path) is ScopeDecision.REFUSE:
            return ToolResult.error(self.scope.refusal(args.path))
        try:
            return await asyncio.to_thread(self.run, self.scope.root / args.path, args)
        except OSError as exc:
            return ToolResult.error(f"{args.path}: {exc.strerror or exc}")
        except ValueError as exc:  # e.g. a NUL byte in the path
            return ToolResult.error(f"{args.path!r}: {exc}")

    def run(self, target: Path, args: Any) -> ToolResult:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.scope!r})"


class ReadFile(FileTool):
    """Reads a text file; past `max_bytes`, the start is returned with a note saying so."""

    name = "read_file"
    description = "Read a text file"

    def __init__(self, scope: WorkspaceScope, *, max_bytes: int = DEFAULT_MAX_READ_BYTES) -> None:
        super().__init__(scope)
        self.max_bytes = max_bytes

    def run(self, target: Path, args: PathArguments) -> ToolResult:
        if target.is_dir():
            return ToolResult.error(f"{args.path} is a directory; use list_dir to see its entries")
        if target.exists() and not target.is_file():
            # A FIFO or device could block the read forever.
            return ToolResult.error(f"{args.path} is not a regular file")
        with open(target, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            data = file.read(self.max_bytes)
        text = data.decode(errors="replace")
        if size > len(data):
            text += f"\n[file truncated: showing the first {len(data)} of {size} bytes]"
        return ToolResult(content=text)


class WriteFile(FileTool):
    """Writes a text file (UTF-8), replacing it, creating missing parent directories."""

    name = "write_file"
    description = (
        "Write a text file, replacing it if it exists and creating missing parent directories"
    )
    arguments_model = WriteFileArguments

    def run(self, target: Path, args: WriteFileArguments) -> ToolResult:
        data = args.content.encode()
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        return ToolResult(content=f"wrote {len(data)} bytes to {args.path}")


class RemovePath(FileTool):
    """Removes a file or symlink, or a directory tree when `recursive` is true.

    A symlink is removed itself, never what it points to. The workspace root
    itself is never removed: every later call would fail.
    """

    name = "remove_path"
    description = "Remove a file, or a directory and everything in it with recursive=true"
    arguments_model = RemovePathArguments

    def run(self, target: Path, args: RemovePathArguments) -> ToolResult:
        if self._is_root(target):
            return ToolResult.error(
                f"{args.path} is the workspace root itself; it cannot be removed"
            )
        if target.is_symlink() or not target.is_dir():
            target.unlink()
            return ToolResult(content=f"removed {args.path}")
        if not args.recursive:
            return ToolResult.error(
                f"{args.path} is a directory; pass recursive=true to remove it and everything in it"
            )
        shutil.rmtree(target)
        return ToolResult(content=f"removed directory {args.path} and everything in it")

    def _is_root(self, target: Path) -> bool:
        # The configured root may itself be a symlink, hence both comparisons.
        if Path(os.path.normpath(target)) == self.scope.root:
            return True
        return not target.is_symlink() and self.scope.resolve(target) == self.scope.real_root


class ListDir(FileTool):
    """Lists a directory's entries, sorted; subdirectories end with `/`."""

    name = "list_dir"
    description = "List a directory's entries; subdirectories end with /"
    arguments_model = ListDirArguments

    def __init__(
        self, scope: WorkspaceScope, *, max_entries: int = DEFAULT_MAX_LIST_ENTRIES
    ) -> None:
        super().__init__(scope)
        self.max_entries = max_entries

    def run(self, target: Path, args: ListDirArguments) -> ToolResult:
        with os.scandir(target) as found:
            entries = sorted(f"{e.name}/" if e.is_dir() else e.name for e in found)
        if not entries:
            return ToolResult(content="(empty directory)")
        shown = entries[: self.max_entries]
        if len(entries) > len(shown):
            shown.append(f"[{len(entries) - len(shown)} more entries not shown]")
        return ToolResult(content="\n".join(shown))


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
    "FileTool",
    "ListDir",
    "ReadFile",
    "RemovePath",
    "RunCommand",
    "WriteFile",
    "default_tools",
]
