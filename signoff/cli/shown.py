"""What this operator was shown: the digest of each call the CLI printed whole.

`signoff approve/deny` send the digest of what the operator saw, so a call that changed
since (the model asked something else under the same id after a timeout) is refused by
the run instead of approved. `pending`, `watch`, `run --wait` and `demo` record each call
they print whole; bulk listings and the calls a refused approve/deny prints are recorded
only on a terminal, where a person reads them. Keyed by Temporal address, namespace,
workflow id and call id.

The record lives in `$XDG_STATE_HOME/signoff/shown.json` (`~/.local/state/signoff/`):
owner-only (directory 0700, file 0600), written atomically under a lock, entries older
than `MAX_AGE` dropped and at most `MAX_ENTRIES` kept. A record that cannot be read or
written is never fatal: the CLI then treats calls as not shown, and asks or refuses.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from signoff.approval.requests import ToolApprovalRequest
from signoff.cli.calls import shown_call
from signoff.config.environment import STATE_HOME_ENV, Environment

if TYPE_CHECKING:
    from signoff.cli.main import CommandContext

FILE_NAME = "shown.json"
MAX_AGE = 30 * 86400.0
MAX_ENTRIES = 5000
_VERSION = 1


def state_dir(env: Environment | None = None) -> Path:
    """`$XDG_STATE_HOME/signoff`, or `~/.local/state/signoff`."""
    return ((env or Environment()).read(STATE_HOME_ENV) or Path.home() / ".local" / "state") / "signoff"


class ShownCalls:
    """The calls shown on one Temporal server and namespace.

    Args:
        directory: where the record lives (default: `state_dir()`).
        clock: seconds since the epoch (tests pass their own).
    """

    def __init__(
        self, address: str, namespace: str, directory: Path | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self.server = (address, namespace)
        self.path = (directory or state_dir()) / FILE_NAME
        self._clock = clock
        self._warned = False

    def _key(self, workflow_id: str, call_id: str) -> str:
        return json.dumps([*self.server, workflow_id, call_id])

    def digest(self, workflow_id: str, call_id: str) -> str | None:
        """The digest of `call_id` as this operator last saw it, or None."""
        entry = self._load().get(self._key(workflow_id, call_id))
        return entry.get("digest") if isinstance(entry, dict) else None

    def digests(self, workflow_id: str) -> dict[str, str]:
        """Every call of `workflow_id` shown, by call id."""
        found = {}
        for key, entry in self._load().items():
            with contextlib.suppress(ValueError, IndexError, KeyError, TypeError):
                parts = json.loads(key)
                if parts[:3] == [*self.server, workflow_id]:
                    found[str(parts[3])] = str(entry["digest"])
        return found

    def record(self, workflow_id: str, requests: Iterable[ToolApprovalRequest]) -> None:
        """Remember that these calls of one run were shown whole, as they are now."""
        self.record_all((workflow_id, request) for request in requests)

    def record_all(self, shown: Iterable[tuple[str, ToolApprovalRequest]]) -> None:
        """Remember calls of several runs at once (one write)."""
        fresh = {self._key(run, r.call_id): r.arguments_digest for run, r in shown if r.arguments_digest}
        if not fresh:
            return
        try:
            with self._locked():
                entries = self._load()
                now = self._clock()
                entries.update({key: {"digest": digest, "at": now} for key, digest in fresh.items()})
                self._write(_pruned(entries, now))
        except OSError as exc:
            self._warn(f"cannot record what was shown in {self.path} ({exc.strerror or exc})")

    # --- the file ------------------------------------------------------------------

    def _load(self) -> dict[str, Any]:
        try:
            info = self.path.stat()
            if info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                self._warn(f"ignoring {self.path}: it must be yours and writable by you alone")
                return {}
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            self._warn(f"cannot read {self.path} ({exc})")
            return {}
        entries = data.get("shown") if isinstance(data, dict) and data.get("version") == _VERSION else None
        return entries if isinstance(entries, dict) else {}

    def _write(self, entries: dict[str, Any]) -> None:
        handle, temporary = tempfile.mkstemp(prefix=".shown-", dir=self.path.parent)  # created 0600
        try:
            with os.fdopen(handle, "w") as out:
                json.dump({"version": _VERSION, "shown": entries}, out)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.path.parent / ".shown.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _warn(self, message: str) -> None:
        if not self._warned:
            print(f"signoff: {message}; calls count as not shown to you", file=sys.stderr)
            self._warned = True


def _pruned(entries: dict[str, Any], now: float) -> dict[str, Any]:
    """Entries younger than MAX_AGE, at most MAX_ENTRIES of the newest."""
    live = [(k, v) for k, v in entries.items() if isinstance(v, dict) and now - float(v.get("at", 0)) < MAX_AGE]
    live.sort(key=lambda item: float(item[1]["at"]), reverse=True)
    return dict(live[:MAX_ENTRIES])


def show(
    ctx: CommandContext, workflow_id: str, requests: Sequence[ToolApprovalRequest], title: str = "", record: bool = True
) -> None:
    """Print calls whole and (with `record`) remember that this operator was shown them.

    Its callers (bulk listings, approve/deny refusals) record only on a terminal, where a
    person reads them: otherwise running a refused command twice from a script would
    approve what nobody looked at. (`pending`, `watch`, `run --wait` and `demo` record
    through `record_all` and the follower.)"""
    if not requests:
        return
    console = ctx.console
    console.print(*([console.style.paint(title, "bold")] if title else []))
    for request in requests:
        console.print(*shown_call(workflow_id, request, console.style, console.width))
    if record:
        ctx.shown.record(workflow_id, requests)
