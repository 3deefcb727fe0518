"""WorkspaceScope: what is inside (after `..` and symlinks), and each policy."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from signoff.config.environment import Environment
from signoff.errors import ConfigError
from signoff.tools import ScopeDecision, ScopePolicy, WorkspaceScope, WriteFile


def test_relative_path_resolves_under_root(ws: Path) -> None:
    assert WorkspaceScope(ws).resolve("a/b.txt") == Path(os.path.realpath(ws)) / "a" / "b.txt"


def test_root_itself_is_inside(ws: Path) -> None:
    assert WorkspaceScope(ws).is_inside(".")


def test_dotdot_that_escapes_root_is_outside(ws: Path) -> None:
    assert not WorkspaceScope(ws).is_inside("../outside/x")


def test_dotdot_that_stays_under_root_is_inside(ws: Path) -> None:
    assert WorkspaceScope(ws).is_inside("not-yet/../still-inside.txt")


def test_absolute_path_under_root_is_inside(ws: Path) -> None:
    assert WorkspaceScope(ws).is_inside(ws / "notes.txt")


def test_absolute_path_elsewhere_is_outside(ws: Path) -> None:
    assert not WorkspaceScope(ws).is_inside("/etc/passwd")


def test_sibling_sharing_root_prefix_is_outside(tmp_path: Path, ws: Path) -> None:
    (tmp_path / "ws-other").mkdir()
    assert not WorkspaceScope(ws).is_inside(tmp_path / "ws-other" / "x")


def test_symlink_inside_pointing_outside_is_outside(ws: Path, outside: Path) -> None:
    (outside / "secret").write_text("s")
    (ws / "link").symlink_to(outside / "secret")
    assert not WorkspaceScope(ws).is_inside("link")


def test_new_file_under_symlinked_dir_pointing_outside_is_outside(ws: Path, outside: Path) -> None:
    (ws / "linked-dir").symlink_to(outside, target_is_directory=True)
    assert not WorkspaceScope(ws).is_inside("linked-dir/new/file.txt")


def test_dangling_symlink_pointing_outside_is_outside(ws: Path, outside: Path) -> None:
    (ws / "dangling").symlink_to(outside / "does-not-exist-yet")
    assert not WorkspaceScope(ws).is_inside("dangling")


def test_root_given_through_a_symlink_is_compared_by_its_real_path(tmp_path: Path, ws: Path) -> None:
    (tmp_path / "ws-link").symlink_to(ws, target_is_directory=True)
    scope = WorkspaceScope(tmp_path / "ws-link")
    assert scope.is_inside(ws / "a.txt") and scope.is_inside("b.txt")


def test_path_with_nul_byte_is_not_inside(ws: Path) -> None:
    assert not WorkspaceScope(ws).is_inside("a\0b")


def test_check_follows_each_policy(ws: Path) -> None:
    decisions = {p: WorkspaceScope(ws, p).check("/etc/passwd") for p in ScopePolicy}
    assert decisions == {
        ScopePolicy.DENY: ScopeDecision.REFUSE,
        ScopePolicy.APPROVE_OUTSIDE: ScopeDecision.ASK,
        ScopePolicy.ALLOW: ScopeDecision.RUN,
    }


def test_check_runs_inside_paths_under_every_policy(ws: Path) -> None:
    assert {WorkspaceScope(ws, p).check("in.txt") for p in ScopePolicy} == {ScopeDecision.RUN}


async def test_deny_policy_returns_error_and_asks_nobody(ws: Path, outside: Path) -> None:
    write = WriteFile(WorkspaceScope(ws, ScopePolicy.DENY))
    arguments = {"path": str(outside / "x.txt"), "content": "hi"}
    result = await write.execute(arguments)
    assert not write.requires_approval(arguments)
    assert result.is_error and "outside the workspace" in result.content
    assert not (outside / "x.txt").exists()


def test_approve_outside_asks_only_for_paths_outside(ws: Path, outside: Path) -> None:
    write = WriteFile(WorkspaceScope(ws, ScopePolicy.APPROVE_OUTSIDE))
    asks_outside = write.requires_approval({"path": str(outside / "x"), "content": ""})
    asks_inside = write.requires_approval({"path": "x", "content": ""})
    assert (asks_outside, asks_inside) == (True, False)


async def test_approve_outside_runs_an_approved_outside_call(ws: Path, outside: Path) -> None:
    write = WriteFile(WorkspaceScope(ws, ScopePolicy.APPROVE_OUTSIDE))
    arguments = {"path": str(outside / "x.txt"), "content": "hi"}
    result = await write.execute(arguments, approved=True)
    assert not result.is_error and (outside / "x.txt").read_text() == "hi"


async def test_approve_outside_refuses_an_unapproved_outside_call(ws: Path, outside: Path) -> None:
    write = WriteFile(WorkspaceScope(ws, ScopePolicy.APPROVE_OUTSIDE))
    result = await write.execute({"path": str(outside / "x.txt"), "content": "hi"})
    assert result.is_error and "was not approved" in result.content
    assert not (outside / "x.txt").exists()


async def test_deny_refuses_outside_even_when_the_call_was_approved(ws: Path, outside: Path) -> None:
    write = WriteFile(WorkspaceScope(ws, ScopePolicy.DENY))
    result = await write.execute({"path": str(outside / "x.txt"), "content": "hi"}, approved=True)
    assert result.is_error and "refuses it" in result.content
    assert not (outside / "x.txt").exists()


async def test_allow_policy_runs_outside_without_asking(ws: Path, outside: Path) -> None:
    write = WriteFile(WorkspaceScope(ws, ScopePolicy.ALLOW))
    arguments = {"path": str(outside / "x.txt"), "content": "hi"}
    assert not write.requires_approval(arguments)
    assert not (await write.execute(arguments)).is_error
    assert (outside / "x.txt").read_text() == "hi"


def test_from_env_reads_workspace_and_policy(ws: Path) -> None:
    scope = WorkspaceScope.from_env(Environment({"SIGNOFF_WORKSPACE": str(ws), "SIGNOFF_SCOPE_POLICY": "deny"}))
    assert (scope.root, scope.policy) == (ws, ScopePolicy.DENY)


def test_from_env_defaults_to_cwd_and_approve_outside(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ws)
    scope = WorkspaceScope.from_env(Environment({}))
    assert (scope.real_root, scope.policy) == (ws.resolve(), ScopePolicy.APPROVE_OUTSIDE)


def test_from_env_rejects_unknown_policy_naming_allowed_values(ws: Path) -> None:
    env = {"SIGNOFF_WORKSPACE": str(ws), "SIGNOFF_SCOPE_POLICY": "sometimes"}
    with pytest.raises(ConfigError, match=r"SIGNOFF_SCOPE_POLICY.*deny, approve_outside, allow"):
        WorkspaceScope.from_env(Environment(env))


def test_missing_workspace_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not an existing directory"):
        WorkspaceScope(tmp_path / "nope")
