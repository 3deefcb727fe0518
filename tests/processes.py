"""Real processes for the durability tests: `worker.py`, a Temporal dev server, cleanup.

Every process starts in a session of its own (so one signal reaches its children),
writes stdout and stderr to files, and is killed by id when the test ends.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from signoff.contract import SEARCH_ATTRIBUTES
from signoff.runtime.devserver import find_temporal_binary, is_listening
from tests.waiting import wait_until

REPO = Path(__file__).resolve().parent.parent
READY = "signoff: worker on task queue"
# Configuration the test process may have inherited; a child sees only what a test gives it.
_OWN_VARS = ("TEMPORAL_", "SIGNOFF_")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def package_copy(root: Path, old: str, new: str) -> Path:
    """A copy of the installed package under `root` whose workflow code has `old` (in one module of
    signoff/workflows/) replaced by `new`: other code, run with PYTHONPATH and cwd `root`."""
    shutil.copytree(REPO / "signoff", root / "signoff", ignore=shutil.ignore_patterns("__pycache__"))
    (target,) = [p for p in (root / "signoff" / "workflows").glob("*.py") if old in p.read_text()]
    target.write_text(target.read_text().replace(old, new))
    return root


def clean_env(**variables: str | Path) -> dict[str, str]:
    """The test's environment without Temporal/signoff settings, plus `variables`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_OWN_VARS)}
    env.update({k: str(v) for k, v in variables.items()})
    env["PYTHONUNBUFFERED"] = "1"
    return env


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def pids_with_cwd(directory: Path) -> list[int]:
    """Live processes whose working directory is `directory` (a dev server a worker left)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if Path(os.readlink(entry / "cwd")) == directory and (entry / "stat").read_text().split()[2] != "Z":
                found.append(int(entry.name))
        except OSError:
            continue
    return found


class Proc:
    """A child process in its own session, its output in `<log_dir>/<name>.out|.err`."""

    def __init__(self, name: str, args: Sequence[str], cwd: Path, env: Mapping[str, str], log_dir: Path) -> None:
        self.name = name
        self.stdout_path = log_dir / f"{name}.out"
        self.stderr_path = log_dir / f"{name}.err"
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.started_at = time.monotonic()
            self.popen = subprocess.Popen(
                list(args), cwd=cwd, env=dict(env), stdout=out, stderr=err, start_new_session=True
            )

    @property
    def pid(self) -> int:
        return self.popen.pid

    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace")

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    async def wait_for_output(self, text: str, timeout: float = 30.0) -> None:
        """Wait until stdout contains `text`; fail at once if the process exits first."""

        def printed() -> bool:
            code = self.popen.poll()
            assert code is None or text in self.stdout(), f"{self.name} exited with {code} before printing {text!r}"
            return text in self.stdout()

        await wait_until(printed, timeout, f"{self.name} did not print {text!r} in {timeout}s")

    async def wait_exit(self, timeout: float) -> int:
        await wait_until(lambda: self.popen.poll() is not None, timeout, f"{self.name} did not exit in {timeout}s")
        return self.popen.returncode

    def kill(self) -> None:
        """SIGKILL the process alone, as a crash would (its children are not told)."""
        if self.popen.poll() is None:
            os.kill(self.pid, signal.SIGKILL)
        self.popen.wait()

    async def terminate(self, timeout: float = 15.0) -> int:
        """SIGTERM and wait for the exit code."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
        return await self.wait_exit(timeout)

    def report(self) -> str:
        code = self.popen.poll()
        return f"--- {self.name} (pid {self.pid}, exit {code}) stdout:\n{self.stdout()}--- stderr:\n{self.stderr()}"


class Processes:
    """Starts the test's processes and, at teardown, kills whatever is left of them."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.started: list[Proc] = []
        self.cleanups: list[Callable[[], None]] = []

    def start(self, name: str, args: Sequence[str], env: Mapping[str, str], cwd: Path = REPO) -> Proc:
        proc = Proc(name, args, cwd, env, self.log_dir)
        self.started.append(proc)
        return proc

    def worker(self, name: str, env: Mapping[str, str], *args: str, cwd: Path = REPO) -> Proc:
        """`python worker.py ARGS` (the repository's worker script, whatever `cwd` is)."""
        return self.start(name, [sys.executable, str(REPO / "worker.py"), *args], env, cwd)

    async def dev_server(
        self, name: str, db: Path, port: int, ui_port: int, timeout: float = 30.0, ui_codec_endpoint: str | None = None
    ) -> Proc:
        """`temporal server start-dev` persisting to `db`, listening on 127.0.0.1:`port`; its Web UI
        only with `ui_codec_endpoint` (the codec server it asks to decode)."""
        ui = ["--ui-codec-endpoint", ui_codec_endpoint] if ui_codec_endpoint else ["--headless"]
        args = [
            str(find_temporal_binary()),
            "server",
            "start-dev",
            "--db-filename",
            str(db),
            "--ip",
            "127.0.0.1",
            "--port",
            str(port),
            "--ui-port",
            str(ui_port),
            *ui,
            "--log-level",
            "error",
        ]
        for attribute, kind in SEARCH_ATTRIBUTES.items():
            args += ["--search-attribute", f"{attribute}={kind}"]
        proc = self.start(name, args, clean_env(), cwd=db.parent)

        def listening() -> bool:
            assert proc.popen.poll() is None, f"dev server exited:\n{proc.report()}"
            return is_listening(f"127.0.0.1:{port}")

        await wait_until(listening, timeout, f"dev server not listening on {port} in {timeout}s")
        return proc

    def cleanup(self) -> None:
        for cleanup in self.cleanups:
            cleanup()
        for proc in self.started:
            kill_group(proc.pid)  # the process and any child left in its group
            proc.popen.wait()

    def report(self) -> str:
        return "\n".join(proc.report() for proc in self.started)
