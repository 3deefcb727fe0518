"""Where payloads too large for workflow history live: Temporal's external storage.

`SIGNOFF_PAYLOAD_STORE` names the store, `SIGNOFF_PAYLOAD_THRESHOLD` the size (bytes) from
which a payload goes there; history then keeps a small reference instead (encoding
`json/protobuf`, message type `temporal.api.sdk.v1.ExternalStorageReference`).

- `file:///absolute/path`: `FileStorageDriver`, for the embedded dev server (its default,
  `.signoff/payloads`) and single hosts.
- `s3://bucket/prefix`: the SDK's `S3StorageDriver` with its aioboto3 client (extra
  `signoff[s3]`); endpoint, region and credentials come from the standard AWS settings
  (`AWS_ENDPOINT_URL`, `AWS_DEFAULT_REGION`, `AWS_ACCESS_KEY_ID`, ...), so MinIO works.

Every worker and client of a namespace must use the same store: whoever reads a
reference needs the driver that wrote it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from pydantic_core import to_json
from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import PydanticJSONPlainPayloadConverter, pydantic_data_converter
from temporalio.converter import (
    CompositePayloadConverter,
    DataConverter,
    DefaultFailureConverterWithEncodedAttributes,
    DefaultPayloadConverter,
    ExternalStorage,
    JSONPlainPayloadConverter,
    PayloadCodec,
    StorageDriver,
)

from signoff.config.environment import DEFAULT_PAYLOAD_THRESHOLD, PAYLOAD_STORE_ENV, PAYLOAD_THRESHOLD_ENV, Environment
from signoff.contract import SAME_STORE
from signoff.errors import ConfigError
from signoff.runtime.codec import PayloadDecryptError
from signoff.runtime.filestore import (
    FileStorageDriver,
    PayloadStoreError,
    make_private_dir,
)
from signoff.text.wire import WIRE_CONTEXT

# Temporal refuses blobs of 2 MB; a threshold above that would never keep a payload out.
_MAX_THRESHOLD = 2 * 1024 * 1024
_S3_EXTRA = "signoff[s3]"
# S3's bucket naming rules (3-63 characters; lowercase letters, digits, dots and hyphens).
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_SHAPES = "file:///absolute/path or s3://bucket/prefix"

__all__ = [
    "FileStorageDriver",
    "PayloadStore",
    "PayloadStoreError",
    "check_store",
    "close_storage",
    "data_converter",
    "storage_problem",
]


@dataclass(frozen=True)
class PayloadStore:
    """Where payloads of `threshold` bytes or more are stored; validated when built.

    Attributes:
        url: `file:///absolute/path` or `s3://bucket/prefix` (prefix optional).
        threshold: payloads of this many serialized bytes or more go to the store.
    """

    url: str
    threshold: int = DEFAULT_PAYLOAD_THRESHOLD

    def __post_init__(self) -> None:
        if not 0 <= self.threshold <= _MAX_THRESHOLD:
            raise ConfigError(
                f"{PAYLOAD_THRESHOLD_ENV} must be between 0 and {_MAX_THRESHOLD} bytes, got {self.threshold}"
            )
        self._parts()  # raises ConfigError for a URL of the wrong shape

    @classmethod
    def from_env(cls, env: Environment, default: Path | None = None) -> PayloadStore | None:
        """The store `env` names, else one in the directory `default`, else None (inline)."""
        threshold = env.read(PAYLOAD_THRESHOLD_ENV)
        url = env.read(PAYLOAD_STORE_ENV)
        if not url and default is not None:
            url = default.absolute().as_uri()
        return cls(url, threshold) if url else None

    @property
    def kind(self) -> str:
        """`file` or `s3`."""
        return self._parts()[0]

    @property
    def path(self) -> Path:
        """The directory of a `file:` store."""
        return Path(self._parts()[1])

    @property
    def bucket(self) -> str:
        """The bucket of an `s3:` store."""
        return self._parts()[1]

    @property
    def prefix(self) -> str:
        """The key prefix of an `s3:` store, without slashes at either end ('' for none)."""
        return self._parts()[2]

    def _parts(self) -> tuple[str, str, str]:
        url = urlsplit(self.url)
        if url.query or url.fragment or url.username or url.password:
            raise ConfigError(
                f"{PAYLOAD_STORE_ENV} takes no query, fragment or credentials: use {_SHAPES}, got {self.url!r}"
            )
        if url.scheme == "file":
            path = unquote(url.path)
            if url.netloc not in ("", "localhost") or not path.startswith("/"):
                raise ConfigError(
                    f"{PAYLOAD_STORE_ENV} needs an absolute path with three slashes, "
                    f"e.g. file:///var/lib/signoff/payloads; got {self.url!r}"
                )
            return "file", os.path.normpath(path), ""
        if url.scheme == "s3":
            if not _BUCKET.fullmatch(url.netloc):
                raise ConfigError(
                    f"{PAYLOAD_STORE_ENV}: {url.netloc!r} is not a valid S3 bucket name "
                    f"(3-63 lowercase letters, digits, dots, hyphens); got {self.url!r}"
                )
            prefix = url.path.strip("/")
            if prefix and any(part in ("", ".", "..") for part in prefix.split("/")):
                raise ConfigError(f"{PAYLOAD_STORE_ENV}: the prefix {prefix!r} has an empty, '.' or '..' segment")
            return "s3", url.netloc, prefix
        raise ConfigError(f"{PAYLOAD_STORE_ENV} must be {_SHAPES}, got {self.url!r}")


def _storage_driver(store: PayloadStore) -> StorageDriver:
    """The driver for `store` (ConfigError naming the extra when S3 support is missing)."""
    if store.kind == "file":
        return FileStorageDriver(store.path, store.url)
    from signoff.runtime.s3store import scoped_s3_driver  # needs the optional aioboto3

    return scoped_s3_driver(store.bucket, store.prefix)


class _WireJSON(PydanticJSONPlainPayloadConverter):
    """Pydantic's JSON, written in the wire context: `Compact` models leave their defaults out."""

    def to_payload(self, value: object) -> Payload | None:
        return Payload(metadata={"encoding": self.encoding.encode()}, data=to_json(value, context=WIRE_CONTEXT))


class _WirePayloadConverter(CompositePayloadConverter):
    """The SDK's pydantic payload converter, with JSON written by `_WireJSON`."""

    def __init__(self) -> None:
        converters = DefaultPayloadConverter.default_encoding_payload_converters
        super().__init__(*(_WireJSON() if isinstance(c, JSONPlainPayloadConverter) else c for c in converters))


def data_converter(store: PayloadStore | None, codec: PayloadCodec | None = None) -> DataConverter:
    """The data converter of every signoff worker and client: pydantic JSON, `codec`, `store`.

    Payloads leave out the defaults of `signoff.text.wire.Compact` models (activity inputs
    and results, the snapshot, the start input); anything that reads them with pydantic,
    as every signoff process does, fills them in again.

    Worker and CLI build it from the same settings, so what one stores the other reads.
    The SDK encodes with the codec first and then stores what is large, so the store keeps
    what the codec made (ciphertext, with `SIGNOFF_CODEC_KEYS`). With a codec, failure
    messages and stack traces are encoded too (Temporal's encoded failure attributes).
    """
    converter = dataclasses.replace(pydantic_data_converter, payload_converter_class=_WirePayloadConverter)
    if codec is not None:
        converter = dataclasses.replace(
            converter, payload_codec=codec, failure_converter_class=DefaultFailureConverterWithEncodedAttributes
        )
    if store is None:
        return converter
    storage = ExternalStorage(drivers=[_storage_driver(store)], payload_size_threshold=store.threshold)
    return dataclasses.replace(converter, external_storage=storage)


async def check_store(store: PayloadStore | None) -> None:
    """Fail now, not at the first large payload: the directory is writable, the bucket reachable."""
    if store is None:
        return
    if store.kind == "file":
        await asyncio.to_thread(_check_directory, store.path)
        return
    from signoff.runtime.s3store import check_bucket

    await check_bucket(store.bucket, store.url)


def _check_directory(path: Path) -> None:
    try:
        make_private_dir(path)
    except OSError as exc:
        raise ConfigError(f"cannot create the payload store directory {path}: {exc.strerror}") from None
    if not path.is_dir() or not os.access(path, os.W_OK | os.X_OK):
        raise ConfigError(f"the payload store {path} is not a directory this user can write to")


async def close_storage(converter: DataConverter) -> None:
    """Close what `converter`'s store holds open (the S3 connection pool); idempotent."""
    storage = converter.external_storage
    for driver in storage.drivers if storage else ():
        close = getattr(driver, "aclose", None)
        if close is not None:
            await close()


_SAME_STORE = SAME_STORE[0].lower() + SAME_STORE[1:]
_PROBLEMS = {
    "TMPRL1105": "this run's data is kept in an external payload store, but this process has none configured: "
    f"set SIGNOFF_PAYLOAD_STORE as the workers have it ({_SAME_STORE})",
    "No driver found with name": "this run's data was stored by another kind of payload store than this "
    f"process's SIGNOFF_PAYLOAD_STORE ({_SAME_STORE})",
    "S3StorageDriver retrieve failed": f"a stored payload could not be read from S3 ({_SAME_STORE})",
    "Unknown payload encoding binary/encrypted": "this run's data is encrypted, but this process has no keys to "
    "read it: set SIGNOFF_CODEC_KEYS as the workers have it",
}


def storage_problem(exc: BaseException) -> str | None:
    """What to tell a person when `exc` (or its cause) is a stored payload this process cannot read.

    None when it is something else.
    """
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, (PayloadStoreError, PayloadDecryptError)):
            return str(seen)
        for marker, advice in _PROBLEMS.items():
            if marker in str(seen):
                return f"{advice}: {seen}"
        seen = seen.__cause__ or seen.__context__
    return None
