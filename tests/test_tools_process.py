"""What a run_command process gets: the allow-listed environment and, optionally, another user.

Real /bin/sh processes. The user tests switch to `nobody`, so they need root (the suite
runs as root in CI); elsewhere they are skipped with that reason.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from signoff.config.environment import TOOL_ENV_ENV, Environment
from signoff.errors import ConfigError
from signoff.tools import RunCommand, WorkspaceScope
from signoff.tools.process import ALLOWED_ENV, ToolUser
from tests.processes import REPO

SECRETS = {
    "AWS_SECRET_ACCESS_KEY": "aws-secret-6b1f0e9d",
    "TEMPORAL_ADDRESS": "127.0.0.1:7233",
    "TEMPORAL_API_KEY": "temporal-key-2c8a4e1f",
    "SIGNOFF_LLM_API_KEY": "sk-llm-key-5d3e7a9b",
}
ADDED_BY_SHELL = {"PWD"}  # dash exports the working directory itself


def nobody() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("this machine has no user 'nobody'")


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="switching to another user needs root")


async def output(tool: RunCommand, command: str) -> str:
    result = await tool.execute({"command": command, "timeout_secs": 10})
    assert not result.is_error, result.content
    return result.content.removeprefix("exit code: 0\n")


def env_names(listing: str) -> set[str]:
    return {line.split("=", 1)[0] for line in listing.splitlines() if "=" in line}


@pytest.fixture
def worker_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The worker's environment holds secrets and settings a tool must not see."""
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("SIGNOFF_TOOL_ENV", raising=False)
    monkeypatch.delenv("SIGNOFF_TOOL_USER", raising=False)
    return SECRETS


@pytest.fixture
def shared_workspace() -> Iterator[Path]:
    """A workspace `nobody` owns, where every user can reach it (pytest's tmp is root-only)."""
    user = nobody()
    path = Path(tempfile.mkdtemp(prefix="signoff-tool-user-", dir="/tmp"))
    os.chown(path, user.pw_uid, user.pw_gid)
    yield path
    shutil.rmtree(path)


# --- the allow-listed environment ---------------------------------------------------------


async def test_a_command_sees_only_allow_listed_variables(worker_env: dict[str, str], tmp_path: Path) -> None:
    listing = await output(RunCommand(WorkspaceScope(tmp_path)), "env")
    names = env_names(listing)
    assert names - ADDED_BY_SHELL <= set(ALLOWED_ENV), names
    assert not [value for value in worker_env.values() if value in listing]


async def test_locale_timezone_and_terminal_reach_a_command(
    worker_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {"LANG": "C.UTF-8", "LC_TIME": "C", "TZ": "UTC", "TERM": "dumb"}.items():
        monkeypatch.setenv(name, value)
    listing = await output(RunCommand(WorkspaceScope(tmp_path)), "env")
    assert {"LANG=C.UTF-8", "LC_TIME=C", "TZ=UTC", "TERM=dumb"} <= set(listing.splitlines())


async def test_signoff_tool_env_adds_the_names_an_operator_lists(
    worker_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOPATH", "/opt/go")
    monkeypatch.setenv("SIGNOFF_TOOL_ENV", " GOPATH , NOT_SET_ANYWHERE")
    listing = await output(RunCommand(WorkspaceScope(tmp_path)), "env")
    assert "GOPATH=/opt/go" in listing.splitlines()
    assert "NOT_SET_ANYWHERE" not in listing and "AWS_SECRET_ACCESS_KEY" not in listing


async def test_listing_a_secret_in_signoff_tool_env_is_the_operators_choice(
    worker_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SIGNOFF_TOOL_ENV", "AWS_SECRET_ACCESS_KEY")
    listing = await output(RunCommand(WorkspaceScope(tmp_path)), "env")
    assert f"AWS_SECRET_ACCESS_KEY={SECRETS['AWS_SECRET_ACCESS_KEY']}" in listing.splitlines()


@pytest.mark.parametrize("value", ["GOPATH=sk-not-a-name-123", "GO PATH", "1GOPATH", "GOPATH,,PROXY", "GOPATH;id"])
def test_a_malformed_signoff_tool_env_fails_when_the_tool_is_built(
    value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SIGNOFF_TOOL_ENV", value)
    with pytest.raises(ConfigError, match=r"SIGNOFF_TOOL_ENV has .* not a variable name: give names only") as caught:
        RunCommand(WorkspaceScope(tmp_path))
    assert "sk-not-a-name" not in str(caught.value)  # a value written by mistake is not echoed


def test_an_empty_signoff_tool_env_adds_nothing() -> None:
    assert Environment({"SIGNOFF_TOOL_ENV": "  "}).read(TOOL_ENV_ENV) == ()


async def test_the_environment_is_read_when_the_tool_is_built(
    worker_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = RunCommand(WorkspaceScope(tmp_path))
    monkeypatch.setenv("SIGNOFF_TOOL_ENV", "LATE")
    monkeypatch.setenv("LATE", "too-late")
    assert "LATE" not in await output(tool, "env")


async def test_an_explicit_env_is_the_whole_environment(worker_env: dict[str, str], tmp_path: Path) -> None:
    tool = RunCommand(WorkspaceScope(tmp_path), env={"ONLY": "this", "PATH": os.defpath})
    assert env_names(await output(tool, "env")) - ADDED_BY_SHELL == {"ONLY", "PATH"}


# --- another OS user ------------------------------------------------------------------------


@needs_root
async def test_a_command_runs_as_the_tool_user_in_its_group_only(
    worker_env: dict[str, str], shared_workspace: Path
) -> None:
    user = nobody()
    tool = RunCommand(WorkspaceScope(shared_workspace), user="nobody")
    lines = (await output(tool, 'id -u; id -G; echo "$HOME $USER $LOGNAME $SHELL"; pwd -P')).splitlines()
    assert lines == [
        str(user.pw_uid),
        str(user.pw_gid),
        f"{user.pw_dir} nobody nobody {user.pw_shell}",
        os.path.realpath(shared_workspace),
    ]


@needs_root
async def test_the_tool_user_cannot_read_the_workers_private_files(
    worker_env: dict[str, str], shared_workspace: Path
) -> None:
    private, public = shared_workspace / "llm_key", shared_workspace / "notes.txt"
    private.write_text("sk-private-0a1b2c3d\n")
    private.chmod(0o600)
    public.write_text("public\n")
    public.chmod(0o644)
    tool = RunCommand(WorkspaceScope(shared_workspace), user="nobody")
    result = await tool.execute({"command": "cat notes.txt; cat llm_key"})
    assert result.content == "exit code: 1\npublic\ncat: llm_key: Permission denied\n"


@needs_root
async def test_signoff_tool_user_takes_a_uid(
    worker_env: dict[str, str], shared_workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SIGNOFF_TOOL_USER", str(nobody().pw_uid))
    tool = RunCommand(WorkspaceScope(shared_workspace))
    assert await output(tool, "id -un") == "nobody\n"


@needs_root
async def test_a_timed_out_command_of_the_tool_user_is_killed(shared_workspace: Path) -> None:
    tool = RunCommand(WorkspaceScope(shared_workspace), user="nobody")
    result = await tool.execute({"command": "echo started; sleep 30", "timeout_secs": 1})
    assert result.is_error and "timed out after 1s" in result.content


@pytest.mark.parametrize(
    ("spec", "message"),
    [("no-such-user-7f3a", "no user with name 'no-such-user-7f3a'"), ("4000000000", "no user with uid 4000000000")],
)
def test_an_unknown_tool_user_fails_when_the_tool_is_built(spec: str, message: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=f"SIGNOFF_TOOL_USER: there is {message} on this machine"):
        RunCommand(WorkspaceScope(tmp_path), user=spec)


@needs_root
def test_a_workspace_the_tool_user_cannot_reach_fails_when_the_tool_is_built(tmp_path: Path) -> None:
    nobody()
    # pytest's tmp_path lies below a directory only root may enter.
    with pytest.raises(ConfigError, match=r"is not reachable by user 'nobody'.*searchable"):
        RunCommand(WorkspaceScope(tmp_path), user="nobody")


@needs_root
def test_a_workspace_the_tool_user_cannot_read_fails_when_the_tool_is_built(shared_workspace: Path) -> None:
    os.chown(shared_workspace, 0, 0)
    shared_workspace.chmod(0o711)  # enterable, not listable
    with pytest.raises(ConfigError, match=r"is not readable by user 'nobody'.*chown nobody"):
        RunCommand(WorkspaceScope(shared_workspace), user="nobody")


@needs_root
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv (util-linux) to drop capabilities")
def test_a_worker_that_cannot_switch_users_fails_with_what_to_do(shared_workspace: Path) -> None:
    nobody()
    build = (
        "from signoff.tools import RunCommand, WorkspaceScope; "
        f"RunCommand(WorkspaceScope({str(shared_workspace)!r}), user='nobody')"
    )
    # Root without CAP_SETUID/CAP_SETGID: as a worker that is neither root nor capable.
    drop = ["setpriv", "--inh-caps=-all", "--bounding-set=-setuid,-setgid"]
    done = subprocess.run([*drop, sys.executable, "-c", build], cwd=REPO, capture_output=True, text=True, check=False)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert "cannot run tools as 'nobody'" in last, last
    assert "Run the worker as root, or give it the capabilities" in last, last


@needs_root
def test_the_worker_user_itself_needs_no_switch(tmp_path: Path) -> None:
    user = ToolUser.lookup(os.geteuid())
    assert (user.is_current, user.popen_options()) == (True, {})
