"""The diff text of write_file's preview: it applies, and its counts are exact, on either path."""

from __future__ import annotations

import random
import re

import pytest

from signoff.tools.preview import diff as diffs

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@( \(over \S+ lines changed: .*\))?$")


def apply(old: str, diff: list[str]) -> str:
    """`old` patched with the hunks of `diff`, checking every context and removed line."""
    a, out, at, i = diffs.split_lines(old), [], 0, 0
    while i < len(diff):
        found = _HUNK.match(diff[i])
        assert found, diff[i]
        count = 1 if found.group(2) is None else int(found.group(2))
        start = int(found.group(1)) - (1 if count else 0)
        out += a[at:start]
        at, i = start, i + 1
        while i < len(diff) and not diff[i].startswith("@@"):
            ends = "" if i + 1 < len(diff) and diff[i + 1] == "\\ No newline at end of file" else "\n"
            tag, body = diff[i][0], diff[i][1:] + ends
            if tag in " -":
                assert a[at] == body, (a[at], body)
                at += 1
            if tag in " +":
                out.append(body)
            i += 2 if ends == "" else 1
    return "".join(out + a[at:])


def edits(rng: random.Random) -> tuple[str, str]:
    a = [rng.choice("abcde") for _ in range(rng.randint(0, 30))]
    b = list(a)
    for _ in range(rng.randint(1, 6)):
        at, kind = rng.randint(0, len(b)), rng.choice(["insert", "change", "delete"])
        if kind == "insert" or not b:
            b.insert(at, rng.choice("abxyz"))
        elif kind == "change":
            b[min(at, len(b) - 1)] = "q"
        else:
            del b[min(at, len(b) - 1)]
    return "\n".join(a) + rng.choice(["", "\n"]), "\n".join(b) + rng.choice(["", "\n"])


@pytest.mark.parametrize("compared", [2000, 2, 0], ids=["difflib", "mixed", "replacement"])
def test_every_diff_applies_to_the_old_text_giving_the_new(compared: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(diffs, "MAX_COMPARED_LINES", compared)
    rng = random.Random(compared)
    checked = 0
    for _ in range(2000):
        old, new = edits(rng)
        if old != new:
            assert apply(old, list(diffs.unified_diff(old, new))) == new, (old, new)
            checked += 1
    assert checked > 1000


@pytest.mark.parametrize("compared", [2000, 0], ids=["counted", "known"])
def test_the_note_says_exactly_how_many_lines_were_left_out(compared: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(diffs, "MAX_COMPARED_LINES", compared)
    old, new = "".join(f"{i}\n" for i in range(300)), "".join(f"{i}\n" for i in range(0, 600, 2)) + "end"
    whole = list(diffs.unified_diff(old, new))
    preview = diffs.write_preview("f", old.encode(), len(old), new)
    assert preview.splitlines()[-1] == f"[... {len(whole) + 2 - 200:,} more lines not shown, of {len(whole) + 2:,}]"
    assert preview.splitlines()[2:200] == whole[:198]
