"""The scope holds at execution: swaps and flips between the decision and the open never escape.

Each test runs with the kernel's openat2 and with the fallback walk (`resolver`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from signoff.agent.gate import gated_call_ids, snapshot_of
from signoff.loop.limits import Limits
from signoff.messages import ToolCall
from signoff.tools import (
    ScopePolicy,
    ToolRegistry,
    WorkspaceScope,
    WriteFile,
    default_tools,
)
from signoff.tools.dispatch import execute_call
from tests.fs_helpers import Racer, flipper, racers, resolver, swapper
from tests.waiting import wait_until

__all__ = ["racers", "resolver"]  # fixtures, used by name

ATTEMPTS = 300
MAX_ATTEMPTS = 5000  # a race that never showed both outcomes by then did not race


def write_call(i: int, path: str) -> ToolCall:
    arguments = json.dumps({"path": path, "content": "x"})
    return ToolCall(id=f"call_{i}", name="write_file", arguments=arguments)


@pytest.mark.parametrize("link_to", ["absolute", "relative"])
async def test_directory_swapped_for_a_symlink_after_the_decision_writes_nothing_outside(
    resolver: str, ws: Path, outside: Path, link_to: str
) -> None:
    registry = ToolRegistry(default_tools(WorkspaceScope(ws, ScopePolicy.APPROVE_OUTSIDE)))
    snapshot = snapshot_of("default", "", registry, Limits())
    target = outside if link_to == "absolute" else Path("..") / outside.name
    answers = []
    for i in range(ATTEMPTS):
        (ws / "d").mkdir()
        call = write_call(i, f"d/f{i}.txt")
        assert gated_call_ids(snapshot, registry, [call]) == []  # inside when the model asked: runs unasked
        (ws / "d").rmdir()
        (ws / "d").symlink_to(target, target_is_directory=True)  # swapped before it runs
        answers.append(await execute_call(registry, call))  # not approved
        (ws / "d").unlink()
    assert list(outside.iterdir()) == []
    assert all("was not approved" in answer for answer in answers)


async def run_until_both(write: WriteFile, racer: Racer, path: str) -> tuple[int, int]:
    """Write `path` (with a counter) until both outcomes were seen and ATTEMPTS were made."""
    await wait_until(racer.running, 30, "the racing process never got going")
    written = refused = 0
    for i in range(MAX_ATTEMPTS):
        result = await write.execute({"path": path.format(i=i), "content": "x"})
        written += not result.is_error
        refused += result.is_error
        if i + 1 >= ATTEMPTS and written and refused:
            break
    return written, refused


async def test_symlink_flipping_between_inside_and_outside_never_lands_a_write_outside(
    resolver: str, ws: Path, outside: Path, tmp_path: Path, racers: list[Racer]
) -> None:
    (ws / "sub").mkdir()
    (ws / "link").symlink_to("sub")
    racers.append(flipper(tmp_path, ws / "link", "sub", outside))
    write = WriteFile(WorkspaceScope(ws, ScopePolicy.DENY))
    written, refused = await run_until_both(write, racers[0], "link/f{i}.txt")
    assert list(outside.iterdir()) == []
    assert written and refused and len(list((ws / "sub").iterdir())) == written


async def test_flipping_while_missing_parents_are_made_creates_nothing_outside(
    resolver: str, ws: Path, outside: Path, tmp_path: Path, racers: list[Racer]
) -> None:
    (ws / "sub").mkdir()
    (ws / "link").symlink_to("sub")
    racers.append(flipper(tmp_path, ws / "link", "sub", outside))
    write = WriteFile(WorkspaceScope(ws, ScopePolicy.DENY))
    written, refused = await run_until_both(write, racers[0], "link/new{i}/deeper/f.txt")
    assert list(outside.iterdir()) == []
    assert written and refused


async def test_directory_swapped_back_and_forth_under_approve_outside_never_escapes(
    resolver: str, ws: Path, outside: Path, tmp_path: Path, racers: list[Racer]
) -> None:
    (ws / "d").mkdir()
    racers.append(swapper(tmp_path, ws / "d", outside))
    write = WriteFile(WorkspaceScope(ws, ScopePolicy.APPROVE_OUTSIDE))
    written, refused = await run_until_both(write, racers[0], "d/f{i}.txt")
    assert list(outside.iterdir()) == []
    assert written and refused
