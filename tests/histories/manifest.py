"""The manifest of committed histories (`manifest.json`) and of the workflow code they were
checked against: which shapes exist, which must resume on today's code (and, for those that
need not, why), and the log of every change to workflow code with how it was made safe.
"""

from __future__ import annotations

import functools
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from signoff.runtime.fingerprint import WorkflowCode

HERE = Path(__file__).parent
PATH = HERE / "manifest.json"
KINDS = ("recorded", "patched", "new-version", "no-command-change")
"""How a change of workflow code was made safe (the log's `kind`): the first record; a new
`workflow.patched` id; a new version (runs of the old one resume only on its workers);
a change that cannot alter any command (a reviewer's call, with its reason)."""


@functools.cache
def private_copy(path: Path) -> Path:
    """A copy of a committed key file (the test key `codec.keys`) that is its owner's alone, as
    every reader of a secret file requires: git keeps no such mode, so a checkout's is 0644."""
    copy = Path(tempfile.mkdtemp(prefix="signoff-history-keys-")) / path.name
    copy.write_bytes(path.read_bytes())
    copy.chmod(0o600)
    return copy


@dataclass(frozen=True)
class Entry:
    """One committed history, as the manifest describes it."""

    name: str
    shape: str
    version: int
    resumes: bool
    frozen: bool = False
    """A recording of a past version, kept as it is (no recorder): `v1/...`, `v2/...`."""
    why_not: str | None = None
    codec_keys: str | None = None
    payload_store: str | None = None

    @property
    def path(self) -> Path:
        return HERE / f"{self.name}.json"

    def replay_settings(self) -> dict[str, Any]:
        """`replay_histories` keywords: the key file and store it was written with."""
        settings: dict[str, Any] = {}
        if self.codec_keys:
            settings["codec_keys"] = private_copy(HERE / self.codec_keys)
        if self.payload_store:
            settings["payload_store"] = (HERE / self.payload_store).absolute().as_uri()
        return settings


class Manifest:
    """`manifest.json`, read and written."""

    def __init__(self, data: dict[str, Any], path: Path = PATH) -> None:
        self.data = data
        self.path = path

    @classmethod
    def load(cls, path: Path = PATH) -> Manifest:
        return cls(json.loads(path.read_text()), path)

    def save(self) -> None:
        self.path.write_text(json.dumps(self.data, indent=2) + "\n")

    @property
    def version(self) -> int:
        return int(self.data["version"])

    @property
    def changes(self) -> list[dict[str, Any]]:
        return list(self.data["changes"])

    @property
    def code(self) -> dict[str, Any]:
        return dict(self.data["workflow_code"])

    def entries(self) -> list[Entry]:
        return [self.entry(name) for name in self.data["histories"]]

    def entry(self, name: str) -> Entry:
        fields = self.data["histories"][name]
        optional = {k: fields[k] for k in ("frozen", "why_not", "codec_keys", "payload_store") if k in fields}
        return Entry(name=name, shape=fields["shape"], version=fields["version"], resumes=fields["resumes"], **optional)

    def recorded(self, name: str, events: int, code: str, commit: str) -> None:
        """Note that `name` was just recorded by this code (version, fingerprint, commit)."""
        entry = self.data["histories"][name]
        entry["version"] = self.version
        entry["recorded"] = {"commit": commit, "code": code[:12], "events": events}

    def accept(self, code: WorkflowCode, kind: str, why: str) -> None:
        """Record the installed workflow code as the code the histories are checked against."""
        self.data["version"] = self.version + (kind == "new-version")
        self.data["workflow_code"] = {
            "fingerprint": code.fingerprint,
            "patches": list(code.patches),
            "modules": dict(code.modules),
            "activities": dict(code.activities),
        }
        self.data["changes"].append(
            {
                "version": self.version,
                "fingerprint": code.fingerprint,
                "patches": list(code.patches),
                "kind": kind,
                "why": why,
            }
        )


def rule_broken(previous: dict[str, Any], change: dict[str, Any]) -> str | None:
    """Why `change` (an entry of the log) is not made safe against `previous`, or None."""
    kind, before, after = change["kind"], set(previous["patches"]), set(change["patches"])
    same_version = change["version"] == previous["version"]
    if kind == "patched" and not (same_version and after > before):
        return "a `patched` change adds workflow.patched ids and keeps the version"
    if kind == "new-version" and change["version"] != previous["version"] + 1:
        return "a `new-version` change raises the version by one"
    if kind == "no-command-change" and not (same_version and after == before and change["why"].strip()):
        return "a `no-command-change` keeps the patches and the version and says why no command can change"
    if kind not in KINDS[1:]:
        return f"kind {kind!r} is not one of {', '.join(KINDS[1:])}"
    if after < before and kind != "new-version":
        return "removing a workflow.patched id needs a new version (runs recorded with it no longer replay)"
    return None
