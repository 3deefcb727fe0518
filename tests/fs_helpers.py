"""Fixtures for the file-tool confinement tests: each resolver, and a racing process."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from signoff.tools.files import fs


def _unused(*args: Any, **kwargs: Any) -> int:
    raise AssertionError("this resolver must not be used in this test")


@pytest.fixture(params=["openat2", "walk"])
def resolver(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test once with the kernel's openat2 and once with the fallback walk only."""
    if request.param == "openat2":
        if not fs.openat2_available():
            pytest.skip("this kernel has no usable openat2")
        monkeypatch.setattr(fs, "walk_beneath", _unused)
    else:
        monkeypatch.setattr(fs, "_openat2_works", False)
        monkeypatch.setattr(fs, "_raw_openat2", _unused)
    return str(request.param)


def refuse_openat2_with(code: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the kernel's openat2 fail with `code` (as seccomp or an old kernel would)."""

    def refuse(*args: Any, **kwargs: Any) -> int:
        raise OSError(code, "refused", "")

    monkeypatch.setattr(fs, "_raw_openat2", refuse)


# A process that flips `link` between two targets until `stop` exists; `ready` once it runs.
_FLIPPER = """
import os, sys
link, first, second, ready, stop = sys.argv[1:]
spare = link + ".next"
flips = 0
while not os.path.exists(stop):
    for target in (first, second):
        try:
            os.unlink(spare)
        except FileNotFoundError:
            pass
        os.symlink(target, spare)
        os.replace(spare, link)
    flips += 1
    if flips == 100:
        open(ready, "w").close()
"""

# A process that swaps `path` between a real directory and a symlink to `outside`, atomically
# (renameat2 RENAME_EXCHANGE), so `path` always exists and nobody else can recreate it.
_SWAPPER = """
import ctypes, os, sys
path, outside, ready, stop = sys.argv[1:]
libc = ctypes.CDLL(None, use_errno=True)
os.symlink(outside, path + ".link")
swaps = 0
while not os.path.exists(stop):
    if libc.renameat2(-100, path.encode(), -100, (path + ".link").encode(), 2) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")
    swaps += 1
    if swaps == 200:
        open(ready, "w").close()
"""


class Racer:
    """A real process changing the workspace while the test runs file tools."""

    def __init__(self, script: str, work: Path, *args: str | Path) -> None:
        self.ready, self.stop = work / "racer-ready", work / "racer-stop"
        argv = [sys.executable, "-c", script, *map(str, args), str(self.ready), str(self.stop)]
        self.process = subprocess.Popen(argv)

    def running(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"the racing process exited with {self.process.returncode}")
        return self.ready.exists()

    def finish(self) -> None:
        self.stop.touch()
        try:
            self.process.wait(timeout=30)
        finally:
            if self.process.poll() is None:
                self.process.kill()


@pytest.fixture
def racers() -> Iterator[list[Racer]]:
    started: list[Racer] = []
    yield started
    for racer in started:
        racer.finish()


def flipper(work: Path, link: Path, first: str | Path, second: str | Path) -> Racer:
    return Racer(_FLIPPER, work, link, first, second)


def swapper(work: Path, path: Path, outside: Path) -> Racer:
    return Racer(_SWAPPER, work, path, outside)


__all__ = ["Racer", "flipper", "racers", "refuse_openat2_with", "resolver", "swapper"]
