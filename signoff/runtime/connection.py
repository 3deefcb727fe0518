"""How the worker and the CLI reach Temporal: one settings object, one way to connect.

Settings are Temporal's standard client configuration, read as the `temporal` CLI reads
them (`temporalio.envconfig`): the profile of a `temporal.toml` (`TEMPORAL_CONFIG_FILE`,
`TEMPORAL_PROFILE`, default `~/.config/temporalio/temporal.toml`), then the environment
on top (`TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`, `TEMPORAL_API_KEY`, `TEMPORAL_TLS`,
`TEMPORAL_TLS_CLIENT_CERT_PATH|_DATA`, `TEMPORAL_TLS_CLIENT_KEY_PATH|_DATA`,
`TEMPORAL_TLS_SERVER_CA_CERT_PATH|_DATA`, `TEMPORAL_TLS_SERVER_NAME`,
`TEMPORAL_GRPC_META_*`), then the CLI's flags. Plus signoff's own `SIGNOFF_TASK_QUEUE`
and payload store (`runtime/storage.py`), payload encryption (`SIGNOFF_CODEC_KEYS`,
`runtime/codec.py`) and tracing (`SIGNOFF_OTEL`, `runtime/telemetry.py`).

Zero config: with no address, TLS or API key configured anywhere and nothing listening
on localhost:7233, `open_client` starts the embedded dev server (`runtime/devserver.py`),
whose large payloads go to `.signoff/payloads`.
"""

from __future__ import annotations

import asyncio
import functools
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.client import Client
from temporalio.envconfig import ClientConfigProfile
from temporalio.runtime import Runtime
from temporalio.service import TLSConfig

from signoff.config.environment import (
    DEFAULT_ADDRESS,
    LOCAL_PAYLOADS,
    TASK_QUEUE_ENV,
    TEMPORAL_CONFIG_FILE_ENV,
    TEMPORAL_PROFILE_ENV,
    TEMPORAL_TLS_DISABLE_HOST_VERIFICATION_ENV,
    TEMPORAL_TLS_ENV,
    Environment,
)
from signoff.contract import DEFAULT_TASK_QUEUE, SEARCH_ATTRIBUTES
from signoff.errors import ConfigError
from signoff.runtime.codec import CodecKeys, EncryptionCodec
from signoff.runtime.devserver import EmbeddedServer, is_listening
from signoff.runtime.storage import PayloadStore, check_store, data_converter
from signoff.runtime.telemetry import TelemetrySettings, install_tracer_provider, tracing_interceptor

DEFAULT_NAMESPACE = "default"
_LOOPBACK = ("localhost", "127.0.0.1", "[::1]")
_KINDS = {
    "Keyword": IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
    "KeywordList": IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST,
}


class ConnectError(ConfigError):
    """Temporal could not be reached with these settings; the message names where and how."""


@dataclass(frozen=True)
class ConnectionSettings:
    """Where Temporal is and how to reach it; built once with `load` (validated there).

    Attributes:
        address: the frontend's host:port.
        namespace: the Temporal namespace.
        task_queue: signoff's task queue (`SIGNOFF_TASK_QUEUE`).
        configured: an address, TLS or API key was given (environment, profile or flag),
            so the embedded dev server is never started in its place.
        profile: the `temporal.toml` profile asked for, if any.
        api_key: sent as a bearer token; never shown in `repr`.
        tls: False, True (system roots) or a TLSConfig with the CA, client certificate and key.
        rpc_metadata: extra gRPC headers (`TEMPORAL_GRPC_META_*`); not shown in `repr`.
        payload_store: where large payloads live, or None to keep them inline.
        codec_keys: the keys that encrypt payloads (`SIGNOFF_CODEC_KEYS`), or None.
        telemetry: metrics (worker only) and tracing (`SIGNOFF_METRICS_ADDRESS`, `SIGNOFF_OTEL`).
    """

    address: str = DEFAULT_ADDRESS
    namespace: str = DEFAULT_NAMESPACE
    task_queue: str = DEFAULT_TASK_QUEUE
    configured: bool = False
    profile: str | None = None
    api_key: str | None = field(default=None, repr=False)
    tls: bool | TLSConfig = field(default=False, repr=False)
    rpc_metadata: Mapping[str, str] = field(default_factory=dict, repr=False)
    payload_store: PayloadStore | None = None
    codec_keys: CodecKeys | None = None
    telemetry: TelemetrySettings = field(default_factory=TelemetrySettings)

    @classmethod
    def load(
        cls,
        env: Environment | None = None,
        *,
        profile: str | None = None,
        address: str | None = None,
        namespace: str | None = None,
    ) -> ConnectionSettings:
        """Settings from the profile and environment, with `address`/`namespace` (flags) on top.

        Args:
            env: the environment (`signoff.config.environment`); the process's when None.

        Raises:
            ConfigError: a missing config file or profile, an unreadable certificate, a
                setting this SDK cannot honour, or an API key that would travel in clear text.
        """
        env = env or Environment()
        connect = _connect_config(profile, env)
        address = address or connect.get("target_host") or None
        tls = connect.get("tls", False)
        configured = bool(address or tls or connect.get("api_key"))
        settings = cls(
            address=address or DEFAULT_ADDRESS,
            namespace=namespace or connect.get("namespace") or DEFAULT_NAMESPACE,
            task_queue=env.read(TASK_QUEUE_ENV) or DEFAULT_TASK_QUEUE,
            configured=configured,
            profile=profile or env.read(TEMPORAL_PROFILE_ENV),
            api_key=connect.get("api_key"),
            tls=tls,
            rpc_metadata=dict(connect.get("rpc_metadata") or {}),
            payload_store=PayloadStore.from_env(env, None if configured else Path.cwd() / LOCAL_PAYLOADS),
            codec_keys=CodecKeys.from_env(env),
            telemetry=TelemetrySettings.from_env(env),
        )
        settings._check()
        return settings

    @property
    def security(self) -> list[str]:
        """How the connection is protected, in words: TLS, client certificate, API key."""
        words = ["TLS"] if self.tls else []
        if isinstance(self.tls, TLSConfig) and self.tls.client_cert:
            words.append("client certificate")
        return words + (["API key"] if self.api_key else [])

    def describe(self) -> str:
        """`host:port (namespace ns; TLS, client certificate, API key)`, for messages."""
        security = ", ".join(self.security) or "no TLS"
        return f"{self.address} (namespace {self.namespace}; {security})"

    def _check(self) -> None:
        if isinstance(self.tls, TLSConfig) and bool(self.tls.client_cert) != bool(self.tls.client_private_key):
            raise ConfigError(
                "a TLS client certificate and its key go together: set both "
                "TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH (or neither)"
            )
        if self.api_key and not self.tls and self.address.rpartition(":")[0] not in _LOOPBACK:
            raise ConfigError(
                f"TEMPORAL_API_KEY is set but TLS is off (TEMPORAL_TLS=false): the key would "
                f"travel to {self.address} in clear text. Turn TLS on."
            )


def temporal_variables(env: Environment) -> dict[str, str]:
    """The variables for the SDK's client configuration (`temporalio.envconfig`), checked
    first where the SDK's own errors would not say what to do.

    Raises:
        ConfigError: `TEMPORAL_CONFIG_FILE` names no file, `TEMPORAL_TLS*` is not a
            boolean, or `TEMPORAL_TLS_DISABLE_HOST_VERIFICATION` is on.
    """
    config_file = env.get(TEMPORAL_CONFIG_FILE_ENV)
    if config_file and not Path(config_file).is_file():
        raise ConfigError(f"{TEMPORAL_CONFIG_FILE_ENV}={config_file} does not name a readable file")
    env.read(TEMPORAL_TLS_ENV)
    env.read(TEMPORAL_TLS_DISABLE_HOST_VERIFICATION_ENV)
    return dict(env.values)


def _connect_config(profile: str | None, env: Environment) -> dict[str, Any]:
    """The SDK's profile + environment, as `Client.connect` keywords, with clear errors."""
    variables = temporal_variables(env)
    try:
        loaded = ClientConfigProfile.load(profile, override_env_vars=variables)
    except RuntimeError as exc:  # the SDK's ConfigError: profile not found, bad TOML...
        config_file = env.read(TEMPORAL_CONFIG_FILE_ENV)
        where = f" ({TEMPORAL_CONFIG_FILE_ENV}={config_file})" if config_file else ""
        raise ConfigError(f"Temporal client configuration{where}: {exc}") from None
    try:
        return dict(loaded.to_client_connect_config())
    except OSError as exc:  # a certificate or key file named but not readable
        raise ConfigError(
            f"cannot read the TLS file {exc.filename}: {exc.strerror} "
            "(named by a TEMPORAL_TLS_*_PATH variable or the profile's tls section)"
        ) from None


async def connect(settings: ConnectionSettings, *, runtime: Runtime | None = None, worker: bool = False) -> Client:
    """A client with signoff's data converter (pydantic, encryption, the payload store) and,
    with `SIGNOFF_OTEL`, Temporal's tracing interceptor.

    Args:
        runtime: the SDK runtime (a worker's serves its metrics); default the SDK's.
        worker: the client of a worker: a payload it cannot decrypt is left as it is, so the
            run that receives it fails or ignores it clearly (`EncryptionCodec`); a CLI's
            raises, naming the key.

    Raises:
        ConnectError: naming the address, namespace and TLS/API key in use.
    """
    codec = EncryptionCodec(settings.codec_keys, strict=not worker) if settings.codec_keys else None
    interceptors = []
    if settings.telemetry.otel:
        install_tracer_provider(Environment())
        interceptors.append(tracing_interceptor())
    try:
        return await Client.connect(
            settings.address,
            namespace=settings.namespace,
            api_key=settings.api_key,
            tls=settings.tls,
            rpc_metadata=settings.rpc_metadata,
            data_converter=data_converter(settings.payload_store, codec),
            interceptors=interceptors,
            runtime=runtime,
        )
    except RuntimeError as exc:
        hint = ""
        if settings.tls and "client certificate" not in settings.security:
            hint = (
                " (if the server requires a client certificate (mTLS), set TEMPORAL_TLS_CLIENT_CERT_PATH "
                "and TEMPORAL_TLS_CLIENT_KEY_PATH)"
            )
        raise ConnectError(f"cannot connect to Temporal at {settings.describe()}{hint}: {exc}") from None


async def ensure_search_attributes(client: Client, namespace: str) -> None:
    """Register the search attributes signoff uses, or say how to."""
    service = client.operator_service
    try:
        existing = await service.list_search_attributes(ListSearchAttributesRequest(namespace=namespace))
        known = set(existing.custom_attributes) | set(existing.system_attributes)
        missing = {n: _KINDS[k] for n, k in SEARCH_ATTRIBUTES.items() if n not in known}
        if missing:
            await service.add_search_attributes(
                AddSearchAttributesRequest(namespace=namespace, search_attributes=missing)
            )
    except Exception as exc:
        commands = [  # one per attribute: the CLI takes a single --type per command
            f"  temporal operator search-attribute create --namespace {namespace} --name {name} --type {kind}"
            for name, kind in SEARCH_ATTRIBUTES.items()
        ]
        print(f"signoff: could not register search attributes ({exc}); run:\n" + "\n".join(commands), file=sys.stderr)


async def open_client(
    settings: ConnectionSettings, *, runtime: Runtime | None = None, worker: bool = False
) -> tuple[Client, EmbeddedServer | None]:
    """Connect (as `connect`), starting the embedded dev server when nothing is configured
    or listening.

    Checks the payload store first. The caller stops the returned server; if
    connecting fails, it is stopped here.
    """
    await check_store(settings.payload_store)
    server = None
    if not settings.configured and not is_listening(settings.address):
        server = await asyncio.to_thread(EmbeddedServer().start)
        print(
            f"signoff: started the embedded Temporal dev server at {server.address} "
            f"(data in {server.data_dir}/, Web UI {server.ui_url})",
            flush=True,
        )
    try:
        connecting = functools.partial(connect, settings, runtime=runtime, worker=worker)
        client = await (_connect_when_ready(connecting) if server else connecting())
        await ensure_search_attributes(client, settings.namespace)
    except BaseException:
        if server:
            server.stop()
        raise
    return client, server


async def _connect_when_ready(connecting: Callable[[], Awaitable[Client]], patience: float = 30.0) -> Client:
    """Connect to a dev server that was just started: it listens before its frontend is
    healthy ("Frontend is not healthy yet"), so a refusal is asked again for a while."""
    deadline = asyncio.get_running_loop().time() + patience
    while True:
        try:
            return await connecting()
        except ConnectError:
            if asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.2)
