"""A file-system `StorageDriver` for Temporal's external payload storage.

Content-addressed: a payload's serialized bytes are stored once, under
`<root>/<first two hex digits>/<sha256 hex>`, and the reference in history carries only
the digest. Directories are created `0700` and files `0600`; a file appears whole or not
at all (written to a temporary name, synced, renamed). A reference is only a digest, so
it cannot point outside the store, and what is read back must hash to it. A reference
that is not a digest (crafted, in a workflow input or signal) reads as `not_a_payload`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import secrets
import stat
from collections.abc import Sequence
from pathlib import Path

from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    StorageDriver,
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
)

from signoff.contract import INVALID_REFERENCE, SAME_STORE
from signoff.errors import ConfigError

FILE_DRIVER_NAME = "signoff.file"
HASH_ALGORITHM = "sha256"
_DIGEST = re.compile(r"[0-9a-f]{64}")
_WRITE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC


class PayloadStoreError(ConfigError):
    """A stored payload cannot be read back: missing, altered, or a malformed reference."""


class UnresolvablePayload(PayloadStoreError):
    """A reference that can never be read: nothing is stored under it, or what is was altered.

    A worker reads it as `not_a_payload` (runtime/guard.py); other failures of a store
    (no permission, a network error) may pass, so they fail the workflow task instead."""


def make_private_dir(path: Path) -> None:
    """Create `path` and its missing parents owner-only (0700); existing ones stay as they are."""
    missing: list[Path] = []
    while not path.exists():
        missing.append(path)
        path = path.parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:  # another process made it first
            pass


class FileStorageDriver(StorageDriver):
    """Stores payloads as files under `root`, named by the SHA-256 of their bytes.

    Args:
        root: the store's directory (created 0700 when first written to).
        url: how the store was configured, for error messages (default: `root` as a URL).
        name: the driver name written into each reference in history.
    """

    def __init__(self, root: Path, url: str | None = None, name: str = FILE_DRIVER_NAME) -> None:
        self.root = Path(root)
        self.url = url or self.root.absolute().as_uri()
        self._name = name

    def name(self) -> str:
        return self._name

    def type(self) -> str:
        return FILE_DRIVER_NAME

    def path_for(self, digest: str) -> Path:
        """Where the payload with this SHA-256 hex digest lives."""
        return self.root / digest[:2] / digest

    async def store(self, context: StorageDriverStoreContext, payloads: Sequence[Payload]) -> list[StorageDriverClaim]:
        data = [payload.SerializeToString() for payload in payloads]
        return await asyncio.to_thread(lambda: [self._write(blob) for blob in data])

    async def retrieve(
        self, context: StorageDriverRetrieveContext, claims: Sequence[StorageDriverClaim]
    ) -> list[Payload]:
        return await asyncio.to_thread(lambda: [self._read(claim) for claim in claims])

    def _write(self, data: bytes) -> StorageDriverClaim:
        digest = hashlib.sha256(data).hexdigest()
        target = self.path_for(digest)
        if not target.exists():  # same bytes, same name: already stored
            make_private_dir(target.parent)
            temporary = target.parent / f".{digest}.{secrets.token_hex(8)}.tmp"
            try:
                with os.fdopen(os.open(temporary, _WRITE, 0o600), "wb") as file:
                    file.write(data)
                    file.flush()
                    os.fsync(file.fileno())
                os.replace(temporary, target)
            finally:
                temporary.unlink(missing_ok=True)
            _sync_directory(target.parent)  # the new name survives a crash, as history's reference will
        return StorageDriverClaim(claim_data={"hash_algorithm": HASH_ALGORITHM, "hash_value": digest})

    def _read(self, claim: StorageDriverClaim) -> Payload:
        digest = claim.claim_data.get("hash_value", "")
        if claim.claim_data.get("hash_algorithm") != HASH_ALGORITHM or not _DIGEST.fullmatch(digest):
            return not_a_payload(f"{dict(claim.claim_data)!r} is not a {HASH_ALGORITHM} digest of this store")
        path = self.path_for(digest)
        try:
            with os.fdopen(os.open(path, _READ), "rb") as file:
                if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                    raise PayloadStoreError(f"{path} in the payload store {self.url} is not a regular file")
                data = file.read()
        except FileNotFoundError:
            raise UnresolvablePayload(
                f"stored payload {HASH_ALGORITHM}:{digest} is missing: {path} does not exist in the payload "
                f"store {self.url}. {SAME_STORE} (this process uses {self.url})."
            ) from None
        except OSError as exc:  # a symlink (ELOOP), no permission...
            raise PayloadStoreError(f"cannot read {path} from the payload store {self.url}: {exc.strerror}") from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise UnresolvablePayload(
                f"{path} in the payload store {self.url} does not match its digest: the file was altered"
            )
        payload = Payload()
        payload.ParseFromString(data)
        return payload


def not_a_payload(reason: str) -> Payload:
    """What a reference that cannot be resolved reads as: a value no model accepts.

    Such references come from outside (a crafted workflow input, signal or update): read
    as this JSON object, the input fails the run as invalid, the signal is recorded as
    ignored and the update is rejected, where raising would fail the workflow task again
    on every retry, for ever.
    """
    payload = Payload(metadata={"encoding": b"json/plain"})
    payload.data = json.dumps({INVALID_REFERENCE: reason[:1_000]}).encode()
    return payload


def _sync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
