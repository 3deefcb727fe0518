"""What file tools never touch, under every policy: system trees, secrets, non-regular files.

Also: hard links count as outside for reads and writes, and file tools never block the worker.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from signoff.config.environment import (
    APPROVER_KEYS_ENV,
    CODEC_KEYS_ENV,
    LLM_API_KEY_FILE_ENV,
    MCP_CONFIG_ENV,
    NOTIFY_SECRET_FILE_ENV,
    S3_SECRET_ACCESS_KEY_FILE_ENV,
    STATE_KEY_FILE_ENV,
    TEMPORAL_CONFIG_FILE_ENV,
)
from signoff.config.secrets import SECRET_FILE_VARIABLES
from signoff.tools import (
    ListDir,
    ReadFile,
    RemovePath,
    ScopePolicy,
    WorkspaceScope,
    WriteFile,
)
from tests.fs_helpers import resolver

__all__ = ["resolver"]  # a fixture, used by name

HANG_GUARD = 30  # seconds: only to turn a hang into a failure, never a measurement


def scope(ws: Path, policy: ScopePolicy) -> WorkspaceScope:
    return WorkspaceScope(ws, policy)


# --- hard links ---------------------------------------------------------------------------


@pytest.fixture
def hard_link(ws: Path, outside: Path) -> Path:
    (outside / "target.txt").write_text("outside's own text")
    os.link(outside / "target.txt", ws / "hl.txt")
    return ws / "hl.txt"


async def test_hard_link_to_outside_asks_and_unapproved_write_is_refused(
    resolver: str, hard_link: Path, outside: Path
) -> None:
    write = WriteFile(scope(hard_link.parent, ScopePolicy.APPROVE_OUTSIDE))
    arguments = {"path": "hl.txt", "content": "changed"}
    assert write.requires_approval(arguments)
    result = await write.execute(arguments)
    assert result.is_error and "2 hard links" in result.content and "not approved" in result.content
    assert (outside / "target.txt").read_text() == "outside's own text"


async def test_hard_link_write_is_refused_under_deny(resolver: str, hard_link: Path, outside: Path) -> None:
    write = WriteFile(scope(hard_link.parent, ScopePolicy.DENY))
    arguments = {"path": "hl.txt", "content": "changed"}
    assert not write.requires_approval(arguments)
    result = await write.execute(arguments)
    assert result.is_error and "refuses it" in result.content
    assert (outside / "target.txt").read_text() == "outside's own text"


@pytest.mark.parametrize(("policy", "approved"), [(ScopePolicy.APPROVE_OUTSIDE, True), (ScopePolicy.ALLOW, False)])
async def test_hard_link_write_runs_when_approved_or_allowed(
    hard_link: Path, outside: Path, policy: ScopePolicy, approved: bool
) -> None:
    write = WriteFile(scope(hard_link.parent, policy))
    result = await write.execute({"path": "hl.txt", "content": "changed"}, approved=approved)
    assert not result.is_error and (outside / "target.txt").read_text() == "changed"


async def test_reading_a_hard_linked_file_is_refused_under_deny_naming_why(resolver: str, hard_link: Path) -> None:
    """A hard link inside the workspace to a file outside it reads that file: under `deny` it
    counts as outside, even approved (deny widens for nobody)."""
    read = ReadFile(scope(hard_link.parent, ScopePolicy.DENY))
    assert not read.requires_approval({"path": "hl.txt"})
    for approved in (False, True):
        result = await read.execute({"path": "hl.txt"}, approved=approved)
        assert result.is_error and "outside's own text" not in result.content
        assert "is outside the workspace" in result.content and "2 hard links" in result.content
        assert "the scope policy 'deny' refuses it" in result.content


async def test_reading_a_hard_linked_file_asks_under_approve_outside_and_runs_approved(
    resolver: str, hard_link: Path
) -> None:
    read = ReadFile(scope(hard_link.parent, ScopePolicy.APPROVE_OUTSIDE))
    assert read.requires_approval({"path": "hl.txt"})
    unapproved = await read.execute({"path": "hl.txt"})
    assert unapproved.is_error and "not approved" in unapproved.content and "2 hard links" in unapproved.content
    assert (await read.execute({"path": "hl.txt"}, approved=True)).content == "outside's own text"


async def test_a_file_linked_while_it_waited_is_refused_when_the_read_runs(ws: Path, outside: Path) -> None:
    """Judged again on the opened descriptor: a file that had one name when the model asked
    and a second one when the call ran is refused then."""
    (ws / "notes.txt").write_text("mine")
    read = ReadFile(scope(ws, ScopePolicy.DENY))
    assert not read.requires_approval({"path": "notes.txt"})
    os.link(ws / "notes.txt", outside / "elsewhere.txt")
    result = await read.execute({"path": "notes.txt"})
    assert result.is_error and "2 hard links" in result.content


async def test_removing_a_hard_link_removes_only_the_workspace_name(hard_link: Path, outside: Path) -> None:
    """Why `remove_path` needs no such check: unlinking a name changes no other name's file."""
    remove = RemovePath(scope(hard_link.parent, ScopePolicy.DENY))
    assert not remove.requires_approval({"path": "hl.txt"})
    assert not (await remove.execute({"path": "hl.txt"})).is_error
    assert not hard_link.exists() and (outside / "target.txt").read_text() == "outside's own text"


# --- FIFOs, sockets and the worker's threads -------------------------------------------------


@pytest.fixture
def fifo(ws: Path) -> Path:
    os.mkfifo(ws / "pipe")
    return ws / "pipe"


@pytest.mark.parametrize("tool", ["read_file", "write_file"])
async def test_a_fifo_is_refused_at_once(resolver: str, fifo: Path, tool: str) -> None:
    tools = {"read_file": ReadFile, "write_file": WriteFile}
    run = tools[tool](scope(fifo.parent, ScopePolicy.ALLOW))
    arguments = {"path": "pipe"} | ({"content": "x"} if tool == "write_file" else {})
    result = await asyncio.wait_for(run.execute(arguments), HANG_GUARD)
    assert (result.is_error, result.content) == (
        True,
        "pipe is not a regular file (a FIFO); file tools only read and write regular files",
    )


async def test_many_fifo_calls_at_once_leave_other_file_tools_working(fifo: Path) -> None:
    (fifo.parent / "notes.txt").write_text("still here")
    s = scope(fifo.parent, ScopePolicy.APPROVE_OUTSIDE)
    # 12 bad calls, more than the file-tool pool has threads: none of them may hold one.
    bad = [WriteFile(s).execute({"path": "pipe", "content": "x"}) for _ in range(6)]
    bad += [ReadFile(s).execute({"path": "pipe"}) for _ in range(6)]
    good = [ReadFile(s).execute({"path": "notes.txt"}), ListDir(s).execute({})]
    results = await asyncio.wait_for(asyncio.gather(*bad, *good), HANG_GUARD)
    assert all(r.is_error and "a FIFO" in r.content for r in results[:12])
    assert [r.content for r in results[12:]] == ["still here", "notes.txt\npipe"]


async def test_a_fifo_behind_a_symlink_is_refused_too(fifo: Path) -> None:
    (fifo.parent / "link").symlink_to("pipe")
    result = await asyncio.wait_for(
        WriteFile(scope(fifo.parent, ScopePolicy.DENY)).execute({"path": "link", "content": "x"}),
        HANG_GUARD,
    )
    assert result.is_error and "a FIFO" in result.content


async def test_a_socket_is_refused(ws: Path) -> None:
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(ws / "sock"))
        result = await ReadFile(scope(ws, ScopePolicy.ALLOW)).execute({"path": "sock"})
    assert result.is_error and "(a socket)" in result.content


async def test_file_tools_work_while_the_default_thread_pool_is_exhausted(ws: Path) -> None:
    (ws / "notes.txt").write_text("hello")
    loop, release = asyncio.get_running_loop(), threading.Event()
    hogs = [loop.run_in_executor(None, release.wait) for _ in range(64)]  # more than its threads
    try:
        result = await asyncio.wait_for(
            ReadFile(scope(ws, ScopePolicy.DENY)).execute({"path": "notes.txt"}), HANG_GUARD
        )
    finally:
        release.set()
        await asyncio.gather(*hogs)
    assert result.content == "hello"


# --- /proc, /sys, /dev under every policy ---------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        (ReadFile, {"path": "/proc/self/environ"}),
        (ReadFile, {"path": "../../../../../../../../proc/self/environ"}),
        (ListDir, {"path": "/sys"}),
        (ListDir, {"path": "/proc/self"}),
        (ReadFile, {"path": "/dev/null"}),
        (WriteFile, {"path": "/dev/null", "content": "x"}),
        (WriteFile, {"path": "/dev/shm/signoff-test", "content": "x"}),
        (RemovePath, {"path": "/dev/null"}),
    ],
)
@pytest.mark.parametrize("policy", list(ScopePolicy))
async def test_system_trees_are_refused_under_every_policy(
    ws: Path, tool: type, arguments: dict, policy: ScopePolicy
) -> None:
    run = tool(scope(ws, policy))
    assert not run.requires_approval(arguments)  # refused anyway: nobody is asked
    result = await run.execute(arguments, approved=True)
    assert result.is_error and "never touch /proc, /sys or /dev" in result.content
    assert os.path.exists("/dev/null") and not os.path.exists("/dev/shm/signoff-test")


async def test_environ_is_refused_through_a_symlink_in_the_workspace(resolver: str, ws: Path) -> None:
    (ws / "env").symlink_to("/proc/self/environ")
    result = await ReadFile(scope(ws, ScopePolicy.ALLOW)).execute({"path": "env"})
    assert result.is_error and "/proc" in result.content


BIND_MOUNTED = """
import asyncio, sys
from signoff.tools import ListDir, ReadFile, ScopePolicy, WorkspaceScope
scope = WorkspaceScope(sys.argv[1], ScopePolicy.DENY)
async def main():
    for result in [
        await ReadFile(scope).execute({"path": "p/self/environ"}),
        await ListDir(scope).execute({"path": "p"}),
    ]:
        print(result.is_error, result.content)
asyncio.run(main())
"""


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare(1)")
def test_proc_bind_mounted_inside_the_workspace_is_refused_by_device(ws: Path) -> None:
    (ws / "p").mkdir()
    script = f'mount --bind /proc "$1/p" && exec "{sys.executable}" -c "$2" "$1"'
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", str(ws), BIND_MOUNTED],
        capture_output=True,
        text=True,
        check=False,
        timeout=HANG_GUARD,
        cwd=Path(__file__).resolve().parent.parent,
    )
    if "mount" in done.stderr and done.returncode:
        pytest.skip(f"cannot bind-mount here: {done.stderr.strip()}")
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and all(line.startswith("True 'p") for line in lines), done
    assert all("a system filesystem" in line for line in lines)


# --- the worker's own secret files ------------------------------------------------------------


@pytest.fixture
def key_file(outside: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (outside / "api-key").write_text("sk-very-secret")
    monkeypatch.setenv("SIGNOFF_LLM_API_KEY_FILE", str(outside / "api-key"))
    return outside / "api-key"


@pytest.mark.parametrize("name", ["direct", "symlink", "hard link"])
async def test_a_configured_secret_file_is_refused_under_allow(ws: Path, key_file: Path, name: str) -> None:
    path = {"direct": str(key_file), "symlink": "key-link", "hard link": "key-copy"}[name]
    (ws / "key-link").symlink_to(key_file)
    os.link(key_file, ws / "key-copy")
    s = scope(ws, ScopePolicy.ALLOW)
    results = [
        await ReadFile(s).execute({"path": path}),
        await WriteFile(s).execute({"path": path, "content": "stolen"}),
    ]
    assert all(r.is_error and "SIGNOFF_LLM_API_KEY_FILE" in r.content for r in results)
    assert key_file.read_text() == "sk-very-secret"


async def test_a_configured_secret_file_is_not_removed(ws: Path, key_file: Path) -> None:
    result = await RemovePath(scope(ws, ScopePolicy.ALLOW)).execute({"path": str(key_file)})
    assert result.is_error and key_file.exists()


@pytest.mark.parametrize("how", ["the file itself", "a hard link to it"])
async def test_a_tree_holding_a_secret_file_is_not_removed_at_all(
    resolver: str, ws: Path, outside: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """Inside the workspace nobody is asked; the guard, not the scope, keeps the key."""
    (ws / "cfg" / "deep").mkdir(parents=True)
    for name in ("a.txt", "z.txt", "deep/b.txt"):
        (ws / "cfg" / name).write_text("ordinary")
    if how == "the file itself":
        (ws / "cfg" / "deep" / "llm.key").write_text("sk-very-secret")
        monkeypatch.setenv("SIGNOFF_LLM_API_KEY_FILE", str(ws / "cfg" / "deep" / "llm.key"))
    else:
        (outside / "llm.key").write_text("sk-very-secret")
        os.link(outside / "llm.key", ws / "cfg" / "deep" / "llm.key")
        monkeypatch.setenv("SIGNOFF_LLM_API_KEY_FILE", str(outside / "llm.key"))
    remove = RemovePath(scope(ws, ScopePolicy.DENY))
    arguments = {"path": "cfg", "recursive": True}
    assert not remove.requires_approval(arguments)
    result = await remove.execute(arguments)
    assert result.is_error and "'cfg/deep/llm.key' is the worker's own secret file" in result.content, result
    kept = sorted(str(p.relative_to(ws)) for p in (ws / "cfg").rglob("*"))
    assert kept == ["cfg/a.txt", "cfg/deep", "cfg/deep/b.txt", "cfg/deep/llm.key", "cfg/z.txt"]


def test_every_secret_file_the_worker_reads_is_guarded() -> None:
    read = {
        LLM_API_KEY_FILE_ENV,
        NOTIFY_SECRET_FILE_ENV,
        APPROVER_KEYS_ENV,
        TEMPORAL_CONFIG_FILE_ENV,
        S3_SECRET_ACCESS_KEY_FILE_ENV,
        CODEC_KEYS_ENV,
        MCP_CONFIG_ENV,
        STATE_KEY_FILE_ENV,
    }
    assert read <= set(SECRET_FILE_VARIABLES)


@pytest.mark.parametrize("variable", SECRET_FILE_VARIABLES)
async def test_every_secret_file_variable_is_honoured(
    ws: Path, outside: Path, variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (outside / "secret").write_text("s")
    monkeypatch.setenv(variable, str(outside / "secret"))
    result = await ReadFile(scope(ws, ScopePolicy.ALLOW)).execute({"path": str(outside / "secret")})
    assert result.is_error and variable in result.content
