"""`signoff.tools.preview.gather.previews`: off the event loop, bounded in time and size, never in the way."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import pytest

from signoff.approval.policy import ApprovalPolicy
from signoff.messages import ToolCall
from signoff.tools import ToolRegistry, WorkspaceScope, WriteFile, tool
from signoff.tools.preview import gather

ASK = ApprovalPolicy()


def call(name: str, call_id: str, **arguments: object) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=json.dumps(arguments))


async def test_only_gated_calls_with_a_preview_get_one(tmp_path: Path) -> None:
    @tool(approval=ASK, preview=lambda text: f"would shout {text.upper()}")
    def shout(text: str) -> str:
        """Shout."""
        return text.upper()

    registry = ToolRegistry([shout, WriteFile(WorkspaceScope(tmp_path))])
    calls = [
        call("shout", "a", text="hi"),
        call("shout", "b", text="no"),
        call("write_file", "c", path="x", content=""),
    ]
    assert await gather.previews(registry, calls, ["a", "c"]) == {
        "a": "would shout HI",
        "c": "--- /dev/null\n+++ x (new file: 0 bytes, 0 lines)",
    }


async def test_file_previews_run_on_the_file_tool_pool_not_the_event_loop(tmp_path: Path) -> None:
    seen: list[str] = []

    class Spy(WriteFile):
        def preview(self, arguments: dict[str, object]) -> str | None:
            seen.append(threading.current_thread().name)
            return super().preview(arguments)

    registry = ToolRegistry([Spy(WorkspaceScope(tmp_path))])
    shown = await gather.previews(registry, [call("write_file", "c", path="x", content="hi\n")], ["c"])
    assert shown["c"].endswith("+hi") and seen[0].startswith("signoff-file-tool")


async def test_a_preview_that_hangs_says_so_and_the_request_goes_on() -> None:
    release = threading.Event()

    @tool(approval=ASK, preview=lambda n: "never" if release.wait(30) else None)
    def slow(n: int) -> int:
        """Slow."""
        return n

    @tool(approval=ASK, preview=lambda n: f"fast {n}")
    def fast(n: int) -> int:
        """Fast."""
        return n

    try:
        shown = await gather.previews(
            ToolRegistry([slow, fast]), [call("slow", "a", n=1), call("fast", "b", n=2)], ["a", "b"], seconds=2
        )
    finally:
        release.set()
    assert shown == {"a": "(no preview: not ready within 2 s)", "b": "fast 2"}


async def test_a_failing_preview_says_why_instead_of_failing_the_turn() -> None:
    def broken(n: int) -> str:
        raise RuntimeError(f"cannot preview {n}")

    @tool(approval=ASK, preview=broken)
    def risky(n: int) -> int:
        """Risky."""
        return n

    shown = await gather.previews(ToolRegistry([risky]), [call("risky", "a", n=7)], ["a"])
    assert shown == {"a": "(no preview: RuntimeError: cannot preview 7)"}


async def test_an_async_preview_function_is_awaited() -> None:
    async def describe(n: int) -> str:
        await asyncio.sleep(0)
        return f"async {n}"

    @tool(approval=ASK, preview=describe)
    def counted(n: int) -> int:
        """Counted."""
        return n

    assert await gather.previews(ToolRegistry([counted]), [call("counted", "a", n=3)], ["a"]) == {"a": "async 3"}


async def test_previews_are_cut_one_by_one_and_together(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gather, "MAX_TURN_PREVIEW_CHARS", 40_000)

    @tool(approval=ASK, preview=lambda n: str(n) * 20_000)
    def wide(n: int) -> int:
        """Wide."""
        return n

    calls = [call("wide", f"c{i}", n=i) for i in range(4)]
    shown = await gather.previews(ToolRegistry([wide]), calls, [c.id for c in calls])
    assert [len(shown[c.id]) <= gather.MAX_PREVIEW_CHARS for c in calls] == [True] * 4
    assert shown["c0"].startswith("0" * 1000) and shown["c0"].endswith("[preview cut: 4,100 more characters]")
    assert shown["c2"].startswith("2" * 1000) and "[preview cut:" in shown["c2"]
    assert shown["c3"] == "(no preview: this turn's previews reached their 40,000-character budget)"
    assert sum(map(len, shown.values())) <= 40_000 + 200


async def test_a_diff_cut_to_the_preview_limit_is_shown_whole_with_its_own_note(tmp_path: Path) -> None:
    content = "".join(f"{i:03} {'x' * 195}\n" for i in range(150))  # 30,000 characters in 150 lines
    registry = ToolRegistry([WriteFile(WorkspaceScope(tmp_path))])
    shown = await gather.previews(registry, [call("write_file", "c", path="wide.txt", content=content)], ["c"])
    assert len(shown["c"]) <= gather.MAX_PREVIEW_CHARS and "[preview cut:" not in shown["c"]
    assert shown["c"].endswith(" more lines not shown, of 153]")
