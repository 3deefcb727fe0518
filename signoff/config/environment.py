"""The environment, read in one place: every variable signoff reads, its default and its parsing.

`Environment` is the only reader of the process environment in signoff. Each variable has
its name here (a constant), its default, and the method that turns its text into a value,
with the error that says what is wrong and what to do (`ConfigError`). Code elsewhere
receives an `Environment` (or what the worker built from it, `runtime/settings.py`) and asks
it for values; what a value *means* (a policy file's entries, a key file's keys, a URL's
shape) is checked by the type it configures, whose messages name the variable.

The methods are grouped as the variables are: Temporal's client configuration (`TEMPORAL_*`,
which the SDK's envconfig reads from `temporal_variables`), the connection and its payloads,
observability, the worker, notifications and links, the model, tools, the CLI, the inbox.
docs/configuration.md, "Configuration (environment)", says what each variable means.

Which of these name secret files (the file tools never touch them) is `config/secrets.py`.

This module is the core's (no Temporal), and sits below every module that reads a variable:
they import it for the variable's name, so it imports none of them. The types a variable
configures build themselves from an `Environment` (`LLMConfig.from_env(env)`,
`WorkspaceScope.from_env(env)`, `ConnectionSettings.load(env)`...), except three that the
workflow itself imports (`Limits`, `PolicyBook`, `ApproverKeys`), which must not know the
environment exists (so that it stays out of the workflow's code and its fingerprint): the
worker's settings build those (`signoff.runtime.settings`: `read_limits`, `read_policies`,
`read_approver_keys`).
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Literal, NamedTuple

from signoff.errors import ConfigError

# Temporal's client configuration: the SDK reads TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
# TEMPORAL_API_KEY, TEMPORAL_TLS*, TEMPORAL_GRPC_META_* and the first two of these from
# `temporal_variables`; the others are checked here first, or named in messages.
TEMPORAL_CONFIG_FILE_ENV = "TEMPORAL_CONFIG_FILE"
TEMPORAL_PROFILE_ENV = "TEMPORAL_PROFILE"
TEMPORAL_TLS_ENV = "TEMPORAL_TLS"
TEMPORAL_TLS_CLIENT_KEY_PATH_ENV = "TEMPORAL_TLS_CLIENT_KEY_PATH"
TEMPORAL_TLS_DISABLE_HOST_VERIFICATION_ENV = "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION"

# Connection and payloads (the worker and the CLI alike).
TASK_QUEUE_ENV = "SIGNOFF_TASK_QUEUE"
PAYLOAD_STORE_ENV = "SIGNOFF_PAYLOAD_STORE"
PAYLOAD_THRESHOLD_ENV = "SIGNOFF_PAYLOAD_THRESHOLD"
CODEC_KEYS_ENV = "SIGNOFF_CODEC_KEYS"
S3_SECRET_ACCESS_KEY_FILE_ENV = "SIGNOFF_S3_SECRET_ACCESS_KEY_FILE"
AWS_ACCESS_KEY_ID_ENV = "AWS_ACCESS_KEY_ID"
METRICS_ADDRESS_ENV = "SIGNOFF_METRICS_ADDRESS"
OTEL_ENV = "SIGNOFF_OTEL"
OTEL_SERVICE_NAME_ENV = "OTEL_SERVICE_NAME"
OTEL_TRACES_EXPORTER_ENV = "OTEL_TRACES_EXPORTER"

# The worker.
AGENTS_ENV = "SIGNOFF_AGENTS"
MAX_TOOL_OUTPUT_ENV = "SIGNOFF_MAX_TOOL_OUTPUT"
MAX_CALLS_PER_TURN_ENV = "SIGNOFF_MAX_CALLS_PER_TURN"
TRANSCRIPT_BUDGET_ENV = "SIGNOFF_TRANSCRIPT_BUDGET"
MAX_CACHED_WORKFLOWS_ENV = "SIGNOFF_MAX_CACHED_WORKFLOWS"
POLICY_FILE_ENV = "SIGNOFF_POLICY_FILE"
APPROVER_KEYS_ENV = "SIGNOFF_APPROVER_KEYS"
APPROVER_ISSUER_ENV = "SIGNOFF_APPROVER_ISSUER"
APPROVER_AUDIENCE_ENV = "SIGNOFF_APPROVER_AUDIENCE"
SIGNATURE_MAX_AGE_ENV = "SIGNOFF_SIGNATURE_MAX_AGE"
STATE_KEY_FILE_ENV = "SIGNOFF_STATE_KEY_FILE"
DEPLOYMENT_NAME_ENV = "SIGNOFF_DEPLOYMENT_NAME"
BUILD_ID_ENV = "SIGNOFF_BUILD_ID"
NOTIFY_URLS_ENV = "SIGNOFF_NOTIFY_URLS"
NOTIFY_SECRET_FILE_ENV = "SIGNOFF_NOTIFY_SECRET_FILE"
UI_URL_ENV = "SIGNOFF_UI_URL"
INBOX_URL_ENV = "SIGNOFF_INBOX_URL"
SERVED_TASK_QUEUES_ENV = "SIGNOFF_SERVED_TASK_QUEUES"

# The model.
LLM_BASE_URL_ENV = "SIGNOFF_LLM_BASE_URL"
LLM_MODEL_ENV = "SIGNOFF_LLM_MODEL"
LLM_API_KEY_ENV = "SIGNOFF_LLM_API_KEY"
LLM_API_KEY_FILE_ENV = "SIGNOFF_LLM_API_KEY_FILE"
DEMO_NO_KEY_ENV = "SIGNOFF_DEMO_NO_KEY"
"""The key variable of the demo's scripted model: deliberately never set, so the scripted
model is never sent a real provider's key."""

# Tools.
WORKSPACE_ENV = "SIGNOFF_WORKSPACE"
SCOPE_POLICY_ENV = "SIGNOFF_SCOPE_POLICY"
MCP_CONFIG_ENV = "SIGNOFF_MCP_CONFIG"
TOOL_ENV_ENV = "SIGNOFF_TOOL_ENV"
TOOL_USER_ENV = "SIGNOFF_TOOL_USER"

# The CLI.
APPROVER_TOKEN_ENV = "SIGNOFF_APPROVER_TOKEN"
APPROVER_KEY_FILE_ENV = "SIGNOFF_APPROVER_KEY_FILE"
APPROVER_KID_ENV = "SIGNOFF_APPROVER_KID"
CODEC_SERVER_TOKEN_FILE_ENV = "SIGNOFF_CODEC_SERVER_TOKEN_FILE"
USER_ENV = "USER"
NO_COLOR_ENV = "NO_COLOR"
COLUMNS_ENV = "COLUMNS"
STATE_HOME_ENV = "XDG_STATE_HOME"

# The inbox.
INBOX_TRUSTED_PROXIES_ENV = "SIGNOFF_INBOX_TRUSTED_PROXIES"
INBOX_USER_HEADER_ENV = "SIGNOFF_INBOX_USER_HEADER"
INBOX_GROUPS_HEADER_ENV = "SIGNOFF_INBOX_GROUPS_HEADER"
INBOX_SIGNING_KEY_FILE_ENV = "SIGNOFF_INBOX_SIGNING_KEY_FILE"
INBOX_SIGNING_KID_ENV = "SIGNOFF_INBOX_SIGNING_KID"
INBOX_ALLOWED_HOSTS_ENV = "SIGNOFF_INBOX_ALLOWED_HOSTS"
INBOX_SCOPE_ENV = "SIGNOFF_INBOX_SCOPE"

# Slack (the workers post and update the messages; the inbox's server takes the clicks).
SLACK_BOT_TOKEN_FILE_ENV = "SIGNOFF_SLACK_BOT_TOKEN_FILE"
SLACK_SIGNING_SECRET_FILE_ENV = "SIGNOFF_SLACK_SIGNING_SECRET_FILE"
SLACK_CHANNEL_ENV = "SIGNOFF_SLACK_CHANNEL"
SLACK_USERS_ENV = "SIGNOFF_SLACK_USERS"
SLACK_API_URL_ENV = "SIGNOFF_SLACK_API_URL"
DEFAULT_SLACK_API_URL = "https://slack.com/api/"

# Auto mode.
AUTO_MODEL_ENV = "SIGNOFF_AUTO_MODEL"
AUTO_SIGNING_KEY_FILE_ENV = "SIGNOFF_AUTO_SIGNING_KEY_FILE"
AUTO_SIGNING_KID_ENV = "SIGNOFF_AUTO_SIGNING_KID"

DEFAULT_ADDRESS = "localhost:7233"
"""`TEMPORAL_ADDRESS` when none is configured: the local dev server's (and the embedded one's)."""
DATA_DIR = Path(".signoff")
"""The embedded dev server's directory (owner-only), relative to the worker's: its database,
and the defaults of `SIGNOFF_PAYLOAD_STORE` and `SIGNOFF_STATE_KEY_FILE` when no Temporal
address, TLS or API key is configured."""
LOCAL_PAYLOADS = DATA_DIR / "payloads"
LOCAL_STATE_KEY = DATA_DIR / "state.key"
"""Made (0600) by a worker of the embedded or a local dev server without `SIGNOFF_STATE_KEY_FILE`."""
DEFAULT_PAYLOAD_THRESHOLD = 256 * 1024
MAX_CACHED_WORKFLOWS = 100_000
DEFAULT_SCOPE_POLICY = "approve_outside"
DEFAULT_OTEL_EXPORTER = "otlp"
DEFAULT_INBOX_USER_HEADER = "X-Forwarded-User"
DEFAULT_INBOX_GROUPS_HEADER = "X-Forwarded-Groups"
"""What oauth2-proxy sets (`--pass-user-headers`, its default in proxy mode)."""
MIN_COLUMNS = 20
MAX_DURATION = timedelta(days=366)

_BOOLEANS = ("true", "false", "1", "0")
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"(\d{1,9})([smhd]?)")
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class LLMVariables(NamedTuple):
    """`SIGNOFF_LLM_*` as set: the base URL ('' when unset: a URL or a preset's name), the
    model (None when unset) and the key file (None when unset)."""

    base_url: str
    model: str | None
    api_key_file: str | None


class Deployment(NamedTuple):
    """`SIGNOFF_DEPLOYMENT_NAME` and `SIGNOFF_BUILD_ID`."""

    name: str
    build_id: str


class KeyFile(NamedTuple):
    """A signing key's file and the key id its tokens name (None: the file's own)."""

    path: str
    kid: str | None


class Environment:
    """The variables of one environment, as signoff reads them.

    Args:
        values: the variables; None reads the process's, at each question (so a key
            variable rotated under a running process is seen, as the process would).
    """

    def __init__(self, values: Mapping[str, str] | None = None) -> None:
        self._values: Mapping[str, str] = os.environ if values is None else values

    @property
    def values(self) -> Mapping[str, str]:
        """Every variable: what a tool's process is given a part of, and what the SDK's
        client configuration reads (`temporal_variables`)."""
        return self._values

    def get(self, name: str) -> str | None:
        """The variable `name` as set (None when unset): for the variables named at run
        time, such as `LLMConfig.api_key_env` or an MCP file's `${NAME}`."""
        return self._values.get(name)

    def _text(self, name: str) -> str:
        """The variable's value without surrounding whitespace ('' when unset)."""
        return self._values.get(name, "").strip()

    def _given(self, name: str) -> str | None:
        """The variable's value without surrounding whitespace; None when unset or blank."""
        return self._text(name) or None

    # Temporal's client configuration.

    def temporal_variables(self) -> dict[str, str]:
        """The variables for the SDK's client configuration (`temporalio.envconfig`), checked
        first where the SDK's own errors would not say what to do.

        Raises:
            ConfigError: `TEMPORAL_CONFIG_FILE` names no file, `TEMPORAL_TLS*` is not a
                boolean, or `TEMPORAL_TLS_DISABLE_HOST_VERIFICATION` is on.
        """
        config_file = self.temporal_config_file()
        if config_file and not Path(config_file).is_file():
            raise ConfigError(f"{TEMPORAL_CONFIG_FILE_ENV}={config_file} does not name a readable file")
        for name in (TEMPORAL_TLS_ENV, TEMPORAL_TLS_DISABLE_HOST_VERIFICATION_ENV):
            value = self._values.get(name)
            if value and value.lower() not in _BOOLEANS:
                raise ConfigError(f"{name} must be true or false, got {value!r}")
        if self._values.get(TEMPORAL_TLS_DISABLE_HOST_VERIFICATION_ENV, "").lower() in ("true", "1"):
            raise ConfigError(
                f"{TEMPORAL_TLS_DISABLE_HOST_VERIFICATION_ENV} is not supported by the Temporal Python SDK: "
                "give the server's CA with TEMPORAL_TLS_SERVER_CA_CERT_PATH and the name in its "
                "certificate with TEMPORAL_TLS_SERVER_NAME instead"
            )
        return dict(self._values)

    def temporal_config_file(self) -> str | None:
        """`TEMPORAL_CONFIG_FILE`: the `temporal.toml` (None: the SDK's default,
        `~/.config/temporalio/temporal.toml`)."""
        return self._values.get(TEMPORAL_CONFIG_FILE_ENV) or None

    def temporal_profile(self) -> str | None:
        """`TEMPORAL_PROFILE`: the profile of the config file (None: `default`)."""
        return self._values.get(TEMPORAL_PROFILE_ENV) or None

    # Connection and payloads.

    def task_queue(self) -> str | None:
        """`SIGNOFF_TASK_QUEUE`; None: the contract's `DEFAULT_TASK_QUEUE` (`signoff`)."""
        return self._values.get(TASK_QUEUE_ENV) or None

    def payload_store(self) -> str | None:
        """`SIGNOFF_PAYLOAD_STORE`: `file:///path` or `s3://bucket/prefix` (checked by
        `PayloadStore`); None: the embedded server's directory, else inline."""
        return self._given(PAYLOAD_STORE_ENV)

    def payload_threshold(self) -> int:
        """`SIGNOFF_PAYLOAD_THRESHOLD`: bytes from which a payload goes to the store (256 KiB).

        Raises:
            ConfigError: not a number (its range is `PayloadStore`'s to check).
        """
        text = self._values.get(PAYLOAD_THRESHOLD_ENV, "")
        if not text.strip():
            return DEFAULT_PAYLOAD_THRESHOLD
        try:
            return int(text)
        except ValueError:
            raise ConfigError(f"{PAYLOAD_THRESHOLD_ENV} must be a number of bytes, got {text!r}") from None

    def codec_keys_file(self) -> Path | None:
        """`SIGNOFF_CODEC_KEYS`: the payload encryption key file; None: no encryption."""
        path = self._text(CODEC_KEYS_ENV)
        return Path(path) if path else None

    def s3_secret_key(self) -> tuple[str, str] | None:
        """(`AWS_ACCESS_KEY_ID`, the file `SIGNOFF_S3_SECRET_ACCESS_KEY_FILE` names); None
        when the file is not set (AWS's own settings then).

        Raises:
            ConfigError: the file is set without the key's id.
        """
        path = self._values.get(S3_SECRET_ACCESS_KEY_FILE_ENV)
        if not path:
            return None
        key_id = self._values.get(AWS_ACCESS_KEY_ID_ENV)
        if not key_id:
            raise ConfigError(f"{S3_SECRET_ACCESS_KEY_FILE_ENV} is set: also set {AWS_ACCESS_KEY_ID_ENV}, the key's id")
        return key_id, path

    # Observability.

    def metrics_address(self) -> str | None:
        """`SIGNOFF_METRICS_ADDRESS`: `host:port` of the Prometheus endpoint (checked by
        `TelemetrySettings`); None: no metrics."""
        return self._given(METRICS_ADDRESS_ENV)

    def otel(self) -> bool:
        """`SIGNOFF_OTEL`: trace with OpenTelemetry (default off).

        Raises:
            ConfigError: neither 1 nor 0 (nor true/false, yes/no, on/off).
        """
        value = self._text(OTEL_ENV).lower()
        if value not in _TRUE + _FALSE:
            raise ConfigError(f"{OTEL_ENV} must be 1 or 0, got {self._values[OTEL_ENV]!r}")
        return value in _TRUE

    def otel_service_named(self) -> bool:
        """Whether `OTEL_SERVICE_NAME` is set (else traces name the service `signoff`)."""
        return bool(self._values.get(OTEL_SERVICE_NAME_ENV))

    def otel_exporter(self) -> str:
        """`OTEL_TRACES_EXPORTER`, lowercase: `otlp` (the default) or `console`."""
        return self._values.get(OTEL_TRACES_EXPORTER_ENV, DEFAULT_OTEL_EXPORTER).strip().lower()

    # The worker.

    def agent_modules(self) -> list[str]:
        """`SIGNOFF_AGENTS`: modules offering agents, comma-separated (none by default)."""
        return [module.strip() for module in self._values.get(AGENTS_ENV, "").split(",") if module.strip()]

    def approver_keys_file(self) -> str | None:
        """`SIGNOFF_APPROVER_KEYS` (what `signoff token` signs and checks with by default)."""
        return self._given(APPROVER_KEYS_ENV)

    def approver_issuer(self) -> str | None:
        """`SIGNOFF_APPROVER_ISSUER`: the `iss` tokens must name (None: not checked)."""
        return self._given(APPROVER_ISSUER_ENV)

    def approver_audience(self) -> str | None:
        """`SIGNOFF_APPROVER_AUDIENCE`: the `aud` tokens must name (None: not checked)."""
        return self._given(APPROVER_AUDIENCE_ENV)

    def signature_max_age(self) -> timedelta | None:
        """`SIGNOFF_SIGNATURE_MAX_AGE`: how long after it was signed a signed approval is honoured
        at the tool activity (None: not set; the worker's settings then take 24 h,
        `signoff.approval.spent`).

        Raises:
            ConfigError: not a duration such as `90m`, `12h`, `2d`.
        """
        text = self._text(SIGNATURE_MAX_AGE_ENV)
        try:
            return read_duration(text) if text else None
        except ValueError as exc:
            raise ConfigError(f"{SIGNATURE_MAX_AGE_ENV}: {exc}") from None

    def state_key_file(self) -> str | None:
        """`SIGNOFF_STATE_KEY_FILE`: the key that seals continued state (None: the embedded
        server's `.signoff/state.key`, else none)."""
        return self._given(STATE_KEY_FILE_ENV)

    def deployment(self) -> Deployment | None:
        """`SIGNOFF_DEPLOYMENT_NAME` and `SIGNOFF_BUILD_ID` (their values are
        `DeploymentSettings`' to check); None when neither is set.

        Raises:
            ConfigError: only one is set.
        """
        name, build_id = self._text(DEPLOYMENT_NAME_ENV), self._text(BUILD_ID_ENV)
        if not name and not build_id:
            return None
        if not (name and build_id):
            given, missing = (DEPLOYMENT_NAME_ENV, BUILD_ID_ENV) if name else (BUILD_ID_ENV, DEPLOYMENT_NAME_ENV)
            raise ConfigError(
                f"{given} is set but {missing} is not: Worker Versioning needs both (the deployment "
                "and this build of it), or neither"
            )
        return Deployment(name, build_id)

    def max_cached_workflows(self) -> int | None:
        """`SIGNOFF_MAX_CACHED_WORKFLOWS`: runs kept in memory between their workflow tasks
        (None: the SDK's 1,000).

        Raises:
            ConfigError: not a whole number from 1 to 100,000. (0, a worker that keeps no run
                between tasks, is refused: Temporal's core loses a local activity in flight
                with its run — a signal's token being verified, the state sealed at
                continue-as-new — and the run's next replay fails, or its task times out
                again and again. The SDK's `max_cached_workflows=0` stays for tests.)
        """
        text = self._values.get(MAX_CACHED_WORKFLOWS_ENV, "")
        if not text.strip():
            return None
        try:
            value = int(text.replace("_", "").replace(",", ""))
        except ValueError:
            value = -1
        if not 1 <= value <= MAX_CACHED_WORKFLOWS:
            raise ConfigError(
                f"{MAX_CACHED_WORKFLOWS_ENV} must be a whole number of runs from 1 to {MAX_CACHED_WORKFLOWS:,}, "
                f"got {text!r} (a worker that keeps no run between tasks loses its local activities in flight: "
                "a signal's token being verified, the state sealed at continue-as-new)"
            )
        return value

    def notify_urls(self) -> tuple[str, ...]:
        """`SIGNOFF_NOTIFY_URLS`, comma-separated (checked by `NotifyConfig`); none by default."""
        return tuple(url.strip() for url in self._values.get(NOTIFY_URLS_ENV, "").split(",") if url.strip())

    def notify_secret_file(self) -> Path | None:
        """`SIGNOFF_NOTIFY_SECRET_FILE`: the key that signs notifications (None: unsigned)."""
        path = self._text(NOTIFY_SECRET_FILE_ENV)
        return Path(path) if path else None

    def ui_url(self) -> str | None:
        """`SIGNOFF_UI_URL`: the Temporal Web UI's root (None: the embedded server's, else
        `http://localhost:8233` for a local server; `signoff.views.links`)."""
        return self._values.get(UI_URL_ENV) or None

    def inbox_url(self) -> str | None:
        """`SIGNOFF_INBOX_URL`: where people reach the inbox, without a trailing `/`."""
        return self._text(INBOX_URL_ENV).rstrip("/") or None

    def served_task_queues(self) -> tuple[str, ...]:
        """`SIGNOFF_SERVED_TASK_QUEUES`: the task queues whose `AgentRun` runs the signers (the
        CLI, the inbox) sign for, comma-separated; `*`: any. Default: `SIGNOFF_TASK_QUEUE` (or
        the contract's `signoff`, which `ServedRuns.from_env` adds: none here)."""
        given = tuple(q.strip() for q in self._text(SERVED_TASK_QUEUES_ENV).split(",") if q.strip())
        queue = self.task_queue()
        return given or ((queue,) if queue else ())

    # The model.

    def llm(self) -> LLMVariables:
        """`SIGNOFF_LLM_BASE_URL`, `SIGNOFF_LLM_MODEL` and `SIGNOFF_LLM_API_KEY_FILE`, for
        `LLMConfig.from_env` (which knows the presets).

        Raises:
            ConfigError: both the key and the key file are set.
        """
        key_file = self._given(LLM_API_KEY_FILE_ENV)
        if key_file and self._values.get(LLM_API_KEY_ENV):
            raise ConfigError(
                f"both {LLM_API_KEY_ENV} and {LLM_API_KEY_FILE_ENV} are set: "
                "unset one of them (the file is the safer home for the key)"
            )
        return LLMVariables(self.llm_base_url(), self._given(LLM_MODEL_ENV), key_file)

    def llm_base_url(self) -> str:
        """`SIGNOFF_LLM_BASE_URL` ('' when no model is configured)."""
        return self._text(LLM_BASE_URL_ENV)

    # Tools.

    def workspace(self) -> str:
        """`SIGNOFF_WORKSPACE`: the file tools' workspace (default: the current directory)."""
        return self._values.get(WORKSPACE_ENV) or os.getcwd()

    def scope_policy(self) -> str:
        """`SIGNOFF_SCOPE_POLICY`: `deny`, `approve_outside` (the default) or `allow`
        (checked by `WorkspaceScope.from_env`, naming the variable)."""
        return self._values.get(SCOPE_POLICY_ENV) or DEFAULT_SCOPE_POLICY

    def mcp_config(self) -> str | None:
        """`SIGNOFF_MCP_CONFIG`: the `mcpServers` file of the default agent (None: no servers)."""
        return self._given(MCP_CONFIG_ENV)

    def tool_env_names(self) -> tuple[str, ...]:
        """`SIGNOFF_TOOL_ENV`: names of the variables a tool process also gets, comma-separated.

        Raises:
            ConfigError: an entry is empty or not a variable name (e.g. `NAME=value`).
        """
        value = self._values.get(TOOL_ENV_ENV, "")
        if not value.strip():
            return ()
        names = tuple(part.strip() for part in value.split(","))
        for name in names:
            if not _NAME.fullmatch(name):
                # The entry is not echoed: a value written by mistake may be a secret.
                shown = "an empty entry" if not name else f"entry {names.index(name) + 1}"
                raise ConfigError(
                    f"{TOOL_ENV_ENV} has {shown} that is not a variable name: give names only, "
                    f"comma-separated (e.g. {TOOL_ENV_ENV}=GOPATH,HTTPS_PROXY), never values"
                )
        return names

    def tool_user(self) -> str | None:
        """`SIGNOFF_TOOL_USER`: the OS user (name or uid) tool processes run as (None: the worker's)."""
        return self._given(TOOL_USER_ENV)

    # The CLI.

    def approver_token(self) -> str | None:
        """`SIGNOFF_APPROVER_TOKEN`: the token the CLI sends with decisions."""
        return self._given(APPROVER_TOKEN_ENV)

    def approver_key_file(self) -> str | None:
        """`SIGNOFF_APPROVER_KEY_FILE`: the key the CLI signs decisions with."""
        return self._given(APPROVER_KEY_FILE_ENV)

    def approver_kid(self) -> str | None:
        """`SIGNOFF_APPROVER_KID`: the key id its tokens name (None: the key file's own)."""
        return self._given(APPROVER_KID_ENV)

    def codec_server_token_file(self) -> str | None:
        """`SIGNOFF_CODEC_SERVER_TOKEN_FILE`: the bearer token `signoff codec-server` requires."""
        return self._values.get(CODEC_SERVER_TOKEN_FILE_ENV) or None

    def user(self) -> str | None:
        """`USER`: who the CLI decides as when nothing else names the approver."""
        return self._values.get(USER_ENV) or None

    def no_color(self) -> bool:
        """Whether `NO_COLOR` is set (no colours, even on a terminal)."""
        return bool(self._values.get(NO_COLOR_ENV))

    def columns(self) -> int | None:
        """`COLUMNS`, when it is a width of 20 or more."""
        columns = self._values.get(COLUMNS_ENV, "")
        return int(columns) if columns.isdigit() and int(columns) >= MIN_COLUMNS else None

    def state_home(self) -> Path | None:
        """`XDG_STATE_HOME`, when it is an absolute path."""
        base = self._text(STATE_HOME_ENV)
        return Path(base) if base and Path(base).is_absolute() else None

    # The inbox.

    def inbox_trusted_proxies(self) -> tuple[Network, ...]:
        """`SIGNOFF_INBOX_TRUSTED_PROXIES`: the proxies' addresses or CIDRs (see `parse_networks`)."""
        return parse_networks(self._values.get(INBOX_TRUSTED_PROXIES_ENV, ""))

    def inbox_user_header(self) -> str:
        """`SIGNOFF_INBOX_USER_HEADER`: the header the proxy names the person in."""
        return self._text(INBOX_USER_HEADER_ENV) or DEFAULT_INBOX_USER_HEADER

    def inbox_groups_header(self) -> str:
        """`SIGNOFF_INBOX_GROUPS_HEADER`: the header the proxy names their groups in."""
        return self._text(INBOX_GROUPS_HEADER_ENV) or DEFAULT_INBOX_GROUPS_HEADER

    def inbox_signing_key(self) -> KeyFile | None:
        """`SIGNOFF_INBOX_SIGNING_KEY_FILE` with `SIGNOFF_INBOX_SIGNING_KID`; None when unset."""
        path = self._text(INBOX_SIGNING_KEY_FILE_ENV)
        return KeyFile(path, self._given(INBOX_SIGNING_KID_ENV)) if path else None

    def auto_model(self) -> str | None:
        """`SIGNOFF_AUTO_MODEL`: the auto mode evaluator's model (None: the agent's own)."""
        return self._given(AUTO_MODEL_ENV)

    def auto_signing_key(self) -> KeyFile | None:
        """`SIGNOFF_AUTO_SIGNING_KEY_FILE` with `SIGNOFF_AUTO_SIGNING_KID`: the worker's own service
        key, which signs auto mode's decisions under verified policies; None when unset."""
        path = self._text(AUTO_SIGNING_KEY_FILE_ENV)
        return KeyFile(path, self._given(AUTO_SIGNING_KID_ENV)) if path else None

    def inbox_allowed_hosts(self) -> tuple[str, ...]:
        """`SIGNOFF_INBOX_ALLOWED_HOSTS`: more `Host` names the inbox and the codec server answer
        for (`inbox.example.com, inbox.internal:8765`), lower case; none by default.

        Raises:
            ConfigError: an entry is not a host name or address with an optional port.
        """
        return tuple(parse_host(entry) for entry in self._text(INBOX_ALLOWED_HOSTS_ENV).split(",") if entry.strip())

    def slack_bot_token_file(self) -> Path | None:
        """`SIGNOFF_SLACK_BOT_TOKEN_FILE`: the Slack app's bot token (`xoxb-...`); None when unset."""
        path = self._text(SLACK_BOT_TOKEN_FILE_ENV)
        return Path(path) if path else None

    def slack_signing_secret_file(self) -> Path | None:
        """`SIGNOFF_SLACK_SIGNING_SECRET_FILE`: the Slack app's signing secret; None when unset."""
        path = self._text(SLACK_SIGNING_SECRET_FILE_ENV)
        return Path(path) if path else None

    def slack_channel(self) -> str | None:
        """`SIGNOFF_SLACK_CHANNEL`: the channel (id, e.g. `C0123ABCD`) requests are posted to."""
        return self._text(SLACK_CHANNEL_ENV) or None

    def slack_users_file(self) -> Path | None:
        """`SIGNOFF_SLACK_USERS`: the file mapping Slack user ids to signoff subjects and groups."""
        path = self._text(SLACK_USERS_ENV)
        return Path(path) if path else None

    def slack_api_url(self) -> str:
        """`SIGNOFF_SLACK_API_URL`: Slack's Web API base URL, ending in `/` (default Slack's own)."""
        url = self._text(SLACK_API_URL_ENV) or DEFAULT_SLACK_API_URL
        return url if url.endswith("/") else url + "/"

    def inbox_scope(self) -> Literal["all", "mine"]:
        """`SIGNOFF_INBOX_SCOPE`: `all` (every waiting call of the namespace, the default) or
        `mine` (only the calls the viewer may decide).

        Raises:
            ConfigError: any other value.
        """
        scope = self._text(INBOX_SCOPE_ENV).lower() or "all"
        if scope not in ("all", "mine"):
            raise ConfigError(
                f"{INBOX_SCOPE_ENV} must be all (every waiting call) or mine (the calls the viewer may decide), "
                f"got {self._text(INBOX_SCOPE_ENV)!r}"
            )
        return "mine" if scope == "mine" else "all"


_HOST_NAME = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*")
_PORT = re.compile(r"[0-9]{1,5}")


def host_value(text: str) -> str | None:
    """`Inbox.Example.com.:8765` as `inbox.example.com:8765`: a `Host` value in one spelling (a
    name, an IPv4 address or a bracketed IPv6 address, lower case, no trailing dot, with an
    optional port), or None when `text` is none (a URL, a pattern, a bare IPv6 address...)."""
    host = text.strip().lower()
    if host.startswith("["):
        name, _, rest = host.partition("]")
        try:
            name = f"[{ipaddress.IPv6Address(name[1:]).compressed}]"
        except ValueError:
            return None
        if rest and not rest.startswith(":"):
            return None
        port = rest[1:] if rest else None
    else:
        name, colon, given = host.partition(":")
        name, port = name.rstrip("."), given if colon else None
        if not _HOST_NAME.fullmatch(name):
            return None
    if port is not None and not (_PORT.fullmatch(port) and 0 < int(port) < 65536):
        return None
    return name if port is None else f"{name}:{int(port)}"


def parse_host(entry: str) -> str:
    """`entry` as `host_value` spells it.

    Raises:
        ConfigError: `entry` is not a host name or address with an optional port.
    """
    value = host_value(entry)
    if value is None:
        raise ConfigError(
            f"{INBOX_ALLOWED_HOSTS_ENV}: {entry.strip()!r} is not a host name with an optional port "
            "(e.g. inbox.example.com or inbox.internal:8765; no scheme, path or wildcard; IPv6 in brackets)"
        )
    return value


def read_duration(text: str) -> timedelta:
    """`90s`, `15m`, `1h`, `2d` (a bare number is seconds); positive, at most 366 days.

    Raises:
        ValueError: anything else, with an example of what works.
    """
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not a duration; use e.g. 90s, 15m, 1h or 2d")
    duration = timedelta(seconds=int(match[1]) * _UNITS[match[2] or "s"])
    if not timedelta(0) < duration <= MAX_DURATION:
        raise ValueError(f"{text!r}: give a duration between 1s and {MAX_DURATION.days}d")
    return duration


def parse_networks(text: str) -> tuple[Network, ...]:
    """`10.0.0.5, 172.28.0.0/24, ::1`: the inbox's proxies' addresses.

    Raises:
        ConfigError: an entry is not an IP address or network.
    """
    networks = []
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise ConfigError(
                f"{INBOX_TRUSTED_PROXIES_ENV}: {entry!r} is not an IP address or CIDR (e.g. 10.0.0.5 or "
                "172.28.0.0/24); name the proxy by address, not by host name"
            ) from None
    return tuple(networks)
