"""With SIGNOFF_TOOL_USER, what the file tools create belongs to that user, so the commands
it runs can change it (a root worker would otherwise leave root's files behind)."""

from __future__ import annotations

import os
import pwd
import shutil
import tempfile
from pathlib import Path

import pytest

from signoff.tools import RunCommand, WorkspaceScope, WriteFile

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs root")


async def test_files_and_directories_the_file_tools_make_belong_to_the_tool_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nobody = pwd.getpwnam("nobody")
    workspace = Path(tempfile.mkdtemp(prefix="signoff-tool-user-"))  # reachable by nobody, unlike tmp_path
    os.chown(workspace, nobody.pw_uid, nobody.pw_gid)
    monkeypatch.setenv("SIGNOFF_TOOL_USER", "nobody")
    scope = WorkspaceScope(workspace)
    wrote = await WriteFile(scope).execute({"path": "notes/todo.txt", "content": "one\n"})
    assert not wrote.is_error, wrote.content
    for made in (workspace / "notes", workspace / "notes" / "todo.txt"):
        assert (made.stat().st_uid, made.stat().st_gid) == (nobody.pw_uid, nobody.pw_gid)
    appended = await RunCommand(scope, user="nobody").execute({"command": "echo two >> notes/todo.txt && id -u"})
    assert appended.content.endswith(f"{nobody.pw_uid}\n"), appended.content
    assert (workspace / "notes" / "todo.txt").read_text() == "one\ntwo\n"
    shutil.rmtree(workspace)
