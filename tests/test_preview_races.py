"""Previews of confined calls hold against a concurrent swap: they never read outside.

Each test runs with the kernel's openat2 and with the fallback walk (`resolver`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from signoff.tools import (
    ApprovalRequiredTool,
    RemovePath,
    ScopePolicy,
    WorkspaceScope,
    WriteFile,
)
from tests.fs_helpers import Racer, flipper, racers, resolver
from tests.waiting import wait_until

__all__ = ["racers", "resolver"]  # fixtures, used by name

ATTEMPTS = 300
MAX_ATTEMPTS = 5000  # a race that never showed both outcomes by then did not race
FAILED = ("write_file would fail", "remove_path would fail")


async def previews_until_both(
    preview: Callable[[dict[str, object]], str | None], racer: Racer, arguments: dict[str, object]
) -> list[str]:
    """Preview the same call until both a refusal and a preview were seen, ATTEMPTS at least."""
    await wait_until(racer.running, 30, "the racing process never got going")
    seen: list[str] = []
    refused = shown = 0
    for i in range(MAX_ATTEMPTS):
        seen.append(preview(arguments) or "")
        refused += seen[-1].startswith(FAILED)
        shown += not seen[-1].startswith(FAILED)
        if i + 1 >= ATTEMPTS and refused and shown:
            break
    return seen


async def test_a_flipping_link_never_shows_an_outside_file_in_a_confined_diff(
    resolver: str, ws: Path, outside: Path, tmp_path: Path, racers: list[Racer]
) -> None:
    (ws / "sub").mkdir()
    (ws / "sub" / "f.txt").write_text("inside\n")
    (outside / "f.txt").write_text("OUTSIDE SECRET\n")
    (ws / "link").symlink_to("sub")
    racers.append(flipper(tmp_path, ws / "link", "sub", outside))
    tool = ApprovalRequiredTool(WriteFile(WorkspaceScope(ws, ScopePolicy.DENY)))  # asked, and still confined
    seen = await previews_until_both(tool.preview, racers[0], {"path": "link/f.txt", "content": "new\n"})
    assert not [text for text in seen if "OUTSIDE" in text]
    assert any("-inside" in text for text in seen) and any("refuses it" in text for text in seen)


async def test_a_flipping_link_never_counts_an_outside_tree(
    resolver: str, ws: Path, outside: Path, tmp_path: Path, racers: list[Racer]
) -> None:
    (ws / "sub" / "tree").mkdir(parents=True)
    (outside / "tree").mkdir()
    (outside / "tree" / "outside-only.txt").write_text("x")
    (ws / "link").symlink_to("sub")
    racers.append(flipper(tmp_path, ws / "link", "sub", outside))
    tool = ApprovalRequiredTool(RemovePath(WorkspaceScope(ws, ScopePolicy.DENY)))
    seen = await previews_until_both(tool.preview, racers[0], {"path": "link/tree", "recursive": True})
    assert not [text for text in seen if "outside-only" in text]
    assert any("0 files, 0 directories" in text for text in seen) and any("refuses it" in text for text in seen)
