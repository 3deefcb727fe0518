"""The SDK's S3 driver for `SIGNOFF_PAYLOAD_STORE=s3://bucket/prefix` (extra `signoff[s3]`).

Endpoint, region and credentials come from the standard AWS settings (`AWS_ENDPOINT_URL`
for MinIO, `AWS_DEFAULT_REGION`, `AWS_ACCESS_KEY_ID`, profiles, instance roles...), or
the secret key from the file `SIGNOFF_S3_SECRET_ACCESS_KEY_FILE` names (a compose secret).
Two things are added around the SDK's driver: keys go under the configured prefix, and
a reference is only followed into the configured bucket and prefix, so a crafted
reference (in a workflow input or a signal) cannot make a worker read other objects; it
reads as `not_a_payload` instead, which fails the run as invalid input (or is recorded as
an ignored signal) rather than failing the workflow task for ever.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.converter import StorageDriverClaim, StorageDriverRetrieveContext

from signoff.config.environment import AWS_ACCESS_KEY_ID_ENV, S3_SECRET_ACCESS_KEY_FILE_ENV, Environment
from signoff.config.smallfile import MAX_SECRET_BYTES, ExposedSecret, read_small_file
from signoff.errors import ConfigError
from signoff.runtime.filestore import UnresolvablePayload, not_a_payload

try:
    import aioboto3
    from temporalio.contrib.aws.s3driver import S3StorageDriver, S3StorageDriverClient
    from temporalio.contrib.aws.s3driver.aioboto3 import new_aioboto3_client
except ImportError as exc:  # the optional extra is not installed
    raise ConfigError(
        f"SIGNOFF_PAYLOAD_STORE=s3://... needs the S3 support: pip install 'signoff[s3]' ({exc})"
    ) from None

# The secret key as container secrets are mounted (botocore reads it only from env or INI files).
# The SDK's driver writes keys of this shape (`v0/ns/...`, `v0/d/sha256/...`).
_KEY_START = "v0/"


def _session(env: Environment | None = None) -> aioboto3.Session:
    """AWS's own settings; with `SIGNOFF_S3_SECRET_ACCESS_KEY_FILE`, the secret key from that file."""
    env = env or Environment()
    path = env.read(S3_SECRET_ACCESS_KEY_FILE_ENV)
    if path is None:
        return aioboto3.Session()
    key_id = env.read(AWS_ACCESS_KEY_ID_ENV)
    if not key_id:
        raise ConfigError(f"{S3_SECRET_ACCESS_KEY_FILE_ENV} is set: also set {AWS_ACCESS_KEY_ID_ENV}, the key's id")
    try:
        secret = read_small_file(path, MAX_SECRET_BYTES).decode("utf-8", "replace").strip()
    except ExposedSecret as exc:
        raise ConfigError(f"{S3_SECRET_ACCESS_KEY_FILE_ENV}: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{S3_SECRET_ACCESS_KEY_FILE_ENV}={path}: cannot read it ({exc.strerror})") from None
    except ValueError as exc:
        raise ConfigError(f"{S3_SECRET_ACCESS_KEY_FILE_ENV}={path}: cannot read it ({exc})") from None
    return aioboto3.Session(aws_access_key_id=key_id, aws_secret_access_key=secret)


class Aioboto3Client(S3StorageDriverClient):
    """aioboto3's S3 client for the SDK driver, with every key under `prefix`.

    Opened on first use in the running event loop and kept open (a new client costs
    tens of milliseconds); `aclose` closes it. A client opened in an event loop that
    has since ended is dropped and a new one opened.
    """

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix
        self._session = _session()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stack = AsyncExitStack()
        self._inner: S3StorageDriverClient | None = None
        self.raw: Any = None

    def _key(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    async def open(self) -> Any:
        """The raw aioboto3 client for this event loop."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            stack = AsyncExitStack()
            raw = await stack.enter_async_context(self._session.client("s3"))
            if self._loop is loop:  # another task opened one meanwhile
                await stack.aclose()
            else:
                self._loop, self._stack, self.raw = loop, stack, raw
                self._inner = new_aioboto3_client(raw)
        return self.raw

    async def _client(self) -> S3StorageDriverClient:
        await self.open()
        assert self._inner is not None
        return self._inner

    async def put_object(self, *, bucket: str, key: str, data: bytes) -> None:
        await (await self._client()).put_object(bucket=bucket, key=self._key(key), data=data)

    async def object_exists(self, *, bucket: str, key: str) -> bool:
        return await (await self._client()).object_exists(bucket=bucket, key=self._key(key))

    async def get_object(self, *, bucket: str, key: str) -> bytes:
        return await (await self._client()).get_object(bucket=bucket, key=self._key(key))

    def describe(self) -> Mapping[str, str]:
        info = dict(self._inner.describe()) if self._inner else {}
        if self.raw is not None:
            info["endpoint"] = self.raw.meta.endpoint_url
        return info

    async def aclose(self) -> None:
        """Close the connection pool if it belongs to the running event loop."""
        if self._loop is asyncio.get_running_loop():
            await self._stack.aclose()
        self._loop, self._inner, self.raw = None, None, None


class ScopedS3Driver(S3StorageDriver):
    """The SDK's S3 driver, following references only into its own bucket and prefix."""

    def __init__(self, client: Aioboto3Client, bucket: str) -> None:
        super().__init__(client=client, bucket=bucket)
        self.client = client
        self.bucket = bucket

    async def retrieve(
        self, context: StorageDriverRetrieveContext, claims: Sequence[StorageDriverClaim]
    ) -> list[Payload]:
        """Objects of this store as the SDK reads them; a reference elsewhere reads as `not_a_payload`."""
        results: list[Payload | None] = [None] * len(claims)
        ours: list[tuple[int, StorageDriverClaim]] = []
        for index, claim in enumerate(claims):
            if (problem := self._outside(claim)) is None:
                ours.append((index, claim))
            else:
                results[index] = not_a_payload(problem)
        try:
            read = await super().retrieve(context, [claim for _, claim in ours]) if ours else []
        except Exception as exc:
            if _never_readable(exc):  # a well-formed key with nothing under it, or content that does not match
                raise UnresolvablePayload(f"a payload of the store s3://{self.bucket} cannot be read: {exc}") from exc
            raise
        for (index, _), payload in zip(ours, read, strict=True):  # the SDK reads one payload per claim
            results[index] = payload
        return [payload for payload in results if payload is not None]

    def _outside(self, claim: StorageDriverClaim) -> str | None:
        data = claim.claim_data
        key = data.get("key", "")
        if (
            data.get("bucket") != self.bucket
            or not key.startswith(_KEY_START)
            or ".." in key.split("/")
            or data.get("hash_algorithm") != "sha256"
            or not data.get("hash_value")
        ):
            where = f"s3://{self.bucket}/{self.client.prefix}".rstrip("/")
            return f"{dict(data)!r} is not an object of the payload store {where}"
        return None

    async def aclose(self) -> None:
        await self.client.aclose()


def _never_readable(exc: BaseException) -> bool:
    """Whether the SDK's S3 error says the object is missing or not what the reference says."""
    seen: BaseException | None = exc
    while seen is not None:
        code = getattr(seen, "response", {}).get("Error", {}).get("Code") if hasattr(seen, "response") else None
        if isinstance(seen, ValueError) or code in ("NoSuchKey", "404"):
            return True
        seen = seen.__cause__
    return False


def scoped_s3_driver(bucket: str, prefix: str) -> ScopedS3Driver:
    """The driver for `s3://bucket/prefix`."""
    return ScopedS3Driver(Aioboto3Client(prefix), bucket)


async def check_bucket(bucket: str, url: str) -> None:
    """ConfigError unless `bucket` answers with these credentials and this endpoint."""
    client = Aioboto3Client()
    try:
        raw = await client.open()
        await raw.head_bucket(Bucket=bucket)
    except Exception as exc:
        endpoint = client.raw.meta.endpoint_url if client.raw is not None else "not set"
        raise ConfigError(
            f"the payload store {url} is not reachable (endpoint {endpoint}): {exc}. "
            "Check AWS_ENDPOINT_URL, AWS_DEFAULT_REGION and the credentials, "
            "and that the bucket exists."
        ) from None
    finally:
        await client.aclose()
