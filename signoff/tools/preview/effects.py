"""`write_file`'s effect preview: what the write would change, read as the write would open it.

`show_write` runs on the `Place` an approved call would run on, through the same checks
as `WriteFile.run` (`write_target`, the hard-link rule, the guard's `open_regular`: first
`O_PATH`, never blocking on a FIFO, then compared), only opening for reading. It reads at
most `MAX_COMPARED_BYTES + 1` bytes of the current file. `remove_path`'s preview is
`signoff.tools.preview.survey.removal_preview`.
"""

from __future__ import annotations

import os
import stat

from signoff.tools.base import ToolResult
from signoff.tools.files.filetool import (
    Place,
    dangling_link,
    read_up_to,
    refuse_hard_linked,
    write_target,
)
from signoff.tools.files.guard import PathRefused, descriptor_path, is_beneath
from signoff.tools.files.scope import WorkspaceScope
from signoff.tools.preview.diff import MAX_COMPARED_BYTES, visible, write_preview


def show_write(place: Place, content: str, scope: WorkspaceScope) -> ToolResult:
    """A unified diff of the file the call names against `content` (see `write_preview`).

    Raises:
        PathRefused, TreatedAsOutside, OSError, ValueError: as `WriteFile.run` would.
    """
    shown = place.shown
    parent, name = write_target(place)
    content.encode()  # what the write would fail on (a lone surrogate), it fails on here
    try:
        fd, found = place.open_regular(os.O_RDONLY)
    except FileNotFoundError:
        return ToolResult(content=_show_new(place, parent, name, content, scope))
    try:
        refuse_hard_linked(place, found)
        now, real = read_up_to(fd, MAX_COMPARED_BYTES + 1), descriptor_path(fd)
    finally:
        os.close(fd)
    notes = _really(shown, real, scope)
    if found.st_nlink > 1:
        notes.append(f"{found.st_nlink} hard links: the change shows under each name")
    # A preview is recorded in the run's history before anyone decides, and history may be
    # read more widely than the worker's files: a file outside the workspace keeps its content.
    withheld = None if is_beneath(real, scope.real_root) else "the file is outside the workspace"
    return ToolResult(content=write_preview(shown, now, found.st_size, content, now_notes=notes, withheld=withheld))


def _show_new(place: Place, parent: str, name: str, content: str, scope: WorkspaceScope) -> str:
    """The preview of a file that does not exist yet (or of its missing directories)."""
    try:
        dir_fd = place.open(parent, os.O_PATH | os.O_DIRECTORY)
    except FileNotFoundError:
        return write_preview(place.shown, None, 0, content, new_notes=["its missing directories are made"])
    try:
        place.guard.check_opened(place.shown, dir_fd, os.fstat(dir_fd))
        if stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            raise PathRefused(dangling_link(place.shown))
    except FileNotFoundError:
        pass  # as expected: nothing there yet
    finally:
        real = descriptor_path(dir_fd)
        os.close(dir_fd)
    notes = _really(place.shown, real and os.path.join(real, name), scope)
    return write_preview(place.shown, None, 0, content, new_notes=notes)


def _really(shown: str, real: str | None, scope: WorkspaceScope) -> list[str]:
    """Where the file really is, when that is not where its path says (a link on the way)."""
    relative = scope.relative(shown)
    said = {os.path.normpath(scope.absolute(shown))}
    if relative is not None:  # the workspace root may itself be reached through a link
        said.add(os.path.normpath(os.path.join(scope.real_root, relative)))
    return [] if real is None or real in said else [f"really {visible(real)}"]


__all__ = ["show_write"]
