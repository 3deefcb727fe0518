"""The environment, read in one place: a table of declared variables and one reader of them.

Every variable signoff reads is declared here, once, as a `Variable`: its name (the
`Variable` *is* the name, a `str`, so messages and mappings use it as they would the
text), its default, the parser that turns its text into a value (with the error that says
what is wrong and what to do, `ConfigError`), the module that owns it (reads it and
gives it its meaning) and a one-line doc. `VARIABLES` collects them, grouped by owner; the
manual's configuration tables are generated from it (`python -m tests.test_env_table`
rewrites them, and the test fails when they differ), and the secret files the file tools
never touch are the variables declared with `secret=` (`config/secrets.py`).

`Environment` is the one reader: `env.read(VARIABLE)` is the variable's value, parsed
(its default when unset or blank); `env.get(name)` the text of a variable named at run
time (`LLMConfig.api_key_env`, an MCP file's `${NAME}`). What a value *means* when several
variables meet (a key file and its kid, both halves of a deployment, a policy file's
entries) is checked by the owner, whose messages name the variables.

The declarations live here, at the bottom of the layers, rather than in each owner's
module, so that any layer may name any variable (a message in the worker's settings names
the CLI's key file) and so that the registry is whole in every process: the file tools'
guard must know the inbox's secret files in a worker that never imports the inbox. Each
`Variable` names its owner, and `tests/test_env_table.py` checks that the owner exists
and reads it. The three types the workflow imports (`Limits`, `PolicyBook`,
`ApproverKeys`) must not know the environment exists: the worker's settings build them
(`signoff.runtime.settings`: `read_limits`, `read_policies`, `read_approver_keys`).
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Callable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any, Generic, Literal, NamedTuple, TypeVar

from signoff.errors import ConfigError

T = TypeVar("T")
V = TypeVar("V", covariant=True)

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
DEFAULT_SLACK_API_URL = "https://slack.com/api/"
MIN_COLUMNS = 20
MAX_DURATION = timedelta(days=366)

_BOOLEANS = ("true", "false", "1", "0")
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"(\d{1,9})([smhd]?)")
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class Variable(str, Generic[V]):
    """One environment variable: its name (the `str` itself), default, parser, owner and doc.

    Attributes:
        default: its value when unset or blank.
        parse: its text (set, not blank; as given, surrounding whitespace included) as a
            value; raises `ConfigError` naming the variable.
        owner: the module that reads it and gives it its meaning.
        doc: one line, the manual's "meaning".
        shown: the manual's "default" ('—': none).
        table: the manual's table that documents it (`TABLES`); None: a standard
            variable signoff only glances at (`USER`, `COLUMNS`...), documented nowhere.
        secret: what the file it names holds, when that is a secret (`config/secrets.py`).
    """

    default: V
    parse: Callable[[str], V]
    owner: str
    doc: str
    shown: str
    table: str | None
    secret: str | None

    def __new__(
        cls,
        name: str,
        default: V,
        parse: Callable[[str], V],
        *,
        owner: str,
        doc: str,
        shown: str = "—",
        table: str | None = "environment",
        secret: str | None = None,
    ) -> Variable[V]:
        variable = super().__new__(cls, name)
        variable.default, variable.parse, variable.owner, variable.doc = default, parse, owner, doc
        variable.shown, variable.table, variable.secret = shown, table, secret
        VARIABLES.append(variable)
        return variable

    def __getnewargs__(self) -> tuple[Any, ...]:  # copies and pickles are the plain name
        return (str(self),)

    def __reduce__(self) -> tuple[Any, ...]:
        return (str, (str(self),))


VARIABLES: list[Variable[Any]] = []
"""Every declared variable, in the order of the manual's tables (grouped by owner)."""

TABLES = {
    "environment": "docs/configuration.md",
    "temporal": "docs/configuration.md",
    "otel": "docs/observability.md",
}
"""The manual's generated tables of variables, by name, and the page of each."""


class Environment:
    """The one reader of the environment.

    Args:
        values: the variables; None reads the process's, at each question (so a key
            variable rotated under a running process is seen, as the process would).
    """

    def __init__(self, values: Mapping[str, str] | None = None) -> None:
        self._values: Mapping[str, str] = os.environ if values is None else values

    @property
    def values(self) -> Mapping[str, str]:
        """Every variable: what a tool's process is given a part of, and what the SDK's
        client configuration reads (`signoff.runtime.connection.temporal_variables`)."""
        return self._values

    def get(self, name: str) -> str | None:
        """The variable `name` as set (None when unset): for the variables named at run
        time, such as `LLMConfig.api_key_env` or an MCP file's `${NAME}`."""
        return self._values.get(name)

    def read(self, variable: Variable[T]) -> T:
        """`variable`'s value: parsed when set and not blank, else its default.

        Raises:
            ConfigError: the value is not one of `variable`'s (naming it, saying what to do).
        """
        text = self._values.get(variable)
        return variable.default if text is None or not text.strip() else variable.parse(text)


# Parsers: each takes the variable's text (set, not blank).


def _text(text: str) -> str:
    return text.strip()


def _raw(text: str) -> str:
    return text


def _path(text: str) -> Path:
    return Path(text.strip())


def _flag(text: str) -> bool:
    return True


def _comma_list(text: str) -> tuple[str, ...]:
    return tuple(entry.strip() for entry in text.split(",") if entry.strip())


def _true_or_false(name: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text.lower() not in _BOOLEANS:
            raise ConfigError(f"{name} must be true or false, got {text!r}")
        return text

    return parse


def _no_host_verification(text: str) -> str:
    _true_or_false(TEMPORAL_TLS_DISABLE_HOST_VERIFICATION_ENV)(text)
    if text.lower() in ("true", "1"):
        raise ConfigError(
            f"{TEMPORAL_TLS_DISABLE_HOST_VERIFICATION_ENV} is not supported by the Temporal Python SDK: "
            "give the server's CA with TEMPORAL_TLS_SERVER_CA_CERT_PATH and the name in its "
            "certificate with TEMPORAL_TLS_SERVER_NAME instead"
        )
    return text


def _payload_threshold(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"{PAYLOAD_THRESHOLD_ENV} must be a number of bytes, got {text!r}") from None


def _otel(text: str) -> bool:
    value = text.strip().lower()
    if value not in _TRUE + _FALSE:
        raise ConfigError(f"{OTEL_ENV} must be 1 or 0, got {text!r}")
    return value in _TRUE


def _signature_max_age(text: str) -> timedelta | None:
    try:
        return read_duration(text.strip())
    except ValueError as exc:
        raise ConfigError(f"{SIGNATURE_MAX_AGE_ENV}: {exc}") from None


def _max_cached_workflows(text: str) -> int | None:
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


def _tool_env_names(text: str) -> tuple[str, ...]:
    names = tuple(part.strip() for part in text.split(","))
    for name in names:
        if not _NAME.fullmatch(name):
            # The entry is not echoed: a value written by mistake may be a secret.
            shown = "an empty entry" if not name else f"entry {names.index(name) + 1}"
            raise ConfigError(
                f"{TOOL_ENV_ENV} has {shown} that is not a variable name: give names only, "
                f"comma-separated (e.g. {TOOL_ENV_ENV}=GOPATH,HTTPS_PROXY), never values"
            )
    return names


def _columns(text: str) -> int | None:
    return int(text) if text.isdigit() and int(text) >= MIN_COLUMNS else None


def _state_home(text: str) -> Path | None:
    base = text.strip()
    return Path(base) if Path(base).is_absolute() else None


def _url_root(text: str) -> str | None:
    return text.strip().rstrip("/") or None


def _slack_api_url(text: str) -> str:
    url = text.strip()
    return url if url.endswith("/") else url + "/"


def _inbox_scope(text: str) -> Literal["all", "mine"]:
    scope = text.strip().lower()
    if scope not in ("all", "mine"):
        raise ConfigError(
            f"{INBOX_SCOPE_ENV} must be all (every waiting call) or mine (the calls the viewer may decide), "
            f"got {text.strip()!r}"
        )
    return "mine" if scope == "mine" else "all"


def _allowed_hosts(text: str) -> tuple[str, ...]:
    return tuple(parse_host(entry) for entry in text.strip().split(",") if entry.strip())


# The declared variables, grouped by the module that owns each.

_CONNECTION = "signoff.runtime.connection"
_SDK = "temporalio.envconfig"
"""The Temporal SDK's client configuration reads these (from `temporal_variables`)."""
TEMPORAL_ADDRESS_ENV = Variable(
    "TEMPORAL_ADDRESS",
    None,
    _text,
    owner=_SDK,
    shown=f"`{DEFAULT_ADDRESS}`",
    doc="Temporal frontend (read by the SDK's client configuration, as the other `TEMPORAL_*`); with "
    "`TEMPORAL_API_KEY`, `TEMPORAL_TLS*`, `TEMPORAL_PROFILE`, `TEMPORAL_CONFIG_FILE`: see "
    "[Connecting to a secured cluster](#connecting-to-a-secured-cluster)",
)
TEMPORAL_NAMESPACE_ENV = Variable(
    "TEMPORAL_NAMESPACE", None, _text, owner=_SDK, shown="`default`", doc="Temporal namespace"
)
TASK_QUEUE_ENV = Variable("SIGNOFF_TASK_QUEUE", None, _text, owner=_CONNECTION, shown="`signoff`", doc="task queue")
TEMPORAL_API_KEY_ENV = Variable(
    "TEMPORAL_API_KEY", None, _raw, owner=_SDK, table="temporal", doc="API key (turns TLS on with the system's roots)"
)
TEMPORAL_TLS_ENV = Variable(
    "TEMPORAL_TLS", None, _true_or_false("TEMPORAL_TLS"), owner=_CONNECTION, table="temporal", doc="`true`/`false`"
)
TEMPORAL_TLS_SERVER_CA_CERT_PATH_ENV = Variable(
    "TEMPORAL_TLS_SERVER_CA_CERT_PATH",
    None,
    _raw,
    owner=_SDK,
    table="temporal",
    doc="a file holding the CA that signed the server's certificate",
)
TEMPORAL_TLS_SERVER_CA_CERT_DATA_ENV = Variable(
    "TEMPORAL_TLS_SERVER_CA_CERT_DATA", None, _raw, owner=_SDK, table="temporal", doc="that CA's PEM itself"
)
TEMPORAL_TLS_SERVER_NAME_ENV = Variable(
    "TEMPORAL_TLS_SERVER_NAME", None, _raw, owner=_SDK, table="temporal", doc="name in the server's certificate (SNI)"
)
TEMPORAL_TLS_CLIENT_CERT_PATH_ENV = Variable(
    "TEMPORAL_TLS_CLIENT_CERT_PATH",
    None,
    _raw,
    owner=_SDK,
    table="temporal",
    doc="client certificate for mTLS (a file; with its key: both or neither)",
)
TEMPORAL_TLS_CLIENT_KEY_PATH_ENV = Variable(
    "TEMPORAL_TLS_CLIENT_KEY_PATH",
    None,
    _raw,
    owner=_SDK,
    table="temporal",
    doc="the client certificate's private key (a file)",
    secret="the private key of the Temporal client certificate",
)
TEMPORAL_TLS_CLIENT_CERT_DATA_ENV = Variable(
    "TEMPORAL_TLS_CLIENT_CERT_DATA", None, _raw, owner=_SDK, table="temporal", doc="the client certificate's PEM itself"
)
TEMPORAL_TLS_CLIENT_KEY_DATA_ENV = Variable(
    "TEMPORAL_TLS_CLIENT_KEY_DATA", None, _raw, owner=_SDK, table="temporal", doc="the client key's PEM itself"
)
TEMPORAL_TLS_DISABLE_HOST_VERIFICATION_ENV = Variable(
    "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION",
    None,
    _no_host_verification,
    owner=_CONNECTION,
    table="temporal",
    doc="not supported by the Python SDK: `true` stops the worker and the CLI at start (give the CA and the "
    "server name instead)",
)
TEMPORAL_GRPC_META_ENV = Variable(
    "TEMPORAL_GRPC_META_<NAME>", None, _raw, owner=_SDK, table="temporal", doc="extra gRPC header"
)
TEMPORAL_CONFIG_FILE_ENV = Variable(
    "TEMPORAL_CONFIG_FILE",
    None,
    _raw,
    owner=_CONNECTION,
    table="temporal",
    shown="`~/.config/temporalio/temporal.toml`",
    doc="Temporal's client configuration file (profiles)",
    secret="Temporal's client configuration (API keys, TLS keys)",
)
TEMPORAL_PROFILE_ENV = Variable(
    "TEMPORAL_PROFILE",
    None,
    _raw,
    owner=_CONNECTION,
    table="temporal",
    shown="`default`",
    doc="the config file's profile",
)

_STORAGE = "signoff.runtime.storage"
PAYLOAD_STORE_ENV = Variable(
    "SIGNOFF_PAYLOAD_STORE",
    None,
    _text,
    owner=_STORAGE,
    shown="`./.signoff/payloads` when no Temporal address, TLS or API key is configured (the embedded or a local "
    "dev server), else none",
    doc="where payloads of the threshold or more are kept (`file:///path` or `s3://bucket/prefix`), see "
    "[Limits and large payloads](#limits-and-large-payloads)",
)
PAYLOAD_THRESHOLD_ENV = Variable(
    "SIGNOFF_PAYLOAD_THRESHOLD",
    DEFAULT_PAYLOAD_THRESHOLD,
    _payload_threshold,
    owner=_STORAGE,
    shown=str(DEFAULT_PAYLOAD_THRESHOLD),
    doc="bytes from which a payload goes to the store",
)
_S3 = "signoff.runtime.s3store"
S3_SECRET_ACCESS_KEY_FILE_ENV = Variable(
    "SIGNOFF_S3_SECRET_ACCESS_KEY_FILE",
    None,
    _raw,
    owner=_S3,
    doc="with an `s3://` store: a file holding the secret access key (with `AWS_ACCESS_KEY_ID` set), instead of "
    "the standard AWS settings",
    secret="the S3 secret access key of the payload store",
)
AWS_ACCESS_KEY_ID_ENV = Variable(
    "AWS_ACCESS_KEY_ID", None, _raw, owner=_S3, table=None, doc="the S3 key's id (AWS's own variable)"
)
CODEC_KEYS_ENV = Variable(
    "SIGNOFF_CODEC_KEYS",
    None,
    _path,
    owner="signoff.runtime.codec",
    doc="a key file (`kid:base64key` lines, oldest first): AES-256-GCM encryption of every payload the worker and "
    "the CLI write; the last key encrypts, all decrypt",
    secret="the keys that encrypt payloads",
)

_TELEMETRY = "signoff.runtime.telemetry"
METRICS_ADDRESS_ENV = Variable(
    "SIGNOFF_METRICS_ADDRESS",
    None,
    _text,
    owner=_TELEMETRY,
    doc="`host:port` where the worker serves Prometheus metrics (`/metrics`), see "
    "[Metrics, traces and encrypted payloads](observability.md)",
)
OTEL_ENV = Variable(
    "SIGNOFF_OTEL",
    False,
    _otel,
    owner=_TELEMETRY,
    shown="`0`",
    doc="`1`: OpenTelemetry traces from workers and the CLI, with the standard `OTEL_EXPORTER_OTLP_*`, "
    "`OTEL_SERVICE_NAME` (default `signoff`), `OTEL_TRACES_EXPORTER=console`; needs `pip install 'signoff[otel]'`",
)
OTEL_EXPORTER_OTLP_ENV = Variable(
    "OTEL_EXPORTER_OTLP_*",
    None,
    _raw,
    owner="opentelemetry.exporter.otlp",
    table="otel",
    doc="where and how spans are sent (`OTEL_EXPORTER_OTLP_ENDPOINT`, `..._HEADERS`, ...), as the OpenTelemetry "
    "SDK reads them",
)
OTEL_SERVICE_NAME_ENV = Variable(
    "OTEL_SERVICE_NAME", None, _raw, owner=_TELEMETRY, table="otel", shown="`signoff`", doc="the service the spans name"
)
OTEL_TRACES_EXPORTER_ENV = Variable(
    "OTEL_TRACES_EXPORTER",
    DEFAULT_OTEL_EXPORTER,
    lambda text: text.strip().lower(),
    owner=_TELEMETRY,
    table="otel",
    shown=f"`{DEFAULT_OTEL_EXPORTER}`",
    doc="`console` prints the spans instead of sending them",
)

AGENTS_ENV: Variable[tuple[str, ...]] = Variable(
    "SIGNOFF_AGENTS",
    (),
    _comma_list,
    owner="signoff.runtime.worker",
    doc="comma-separated modules with your agents (same as `--agents`)",
)

_SETTINGS = "signoff.runtime.settings"
MAX_TOOL_OUTPUT_ENV = Variable(
    "SIGNOFF_MAX_TOOL_OUTPUT",
    None,
    _text,
    owner=_SETTINGS,
    shown="65536",
    doc="characters of a tool's output kept in the transcript, see "
    "[Limits and large payloads](#limits-and-large-payloads)",
)
MAX_CALLS_PER_TURN_ENV = Variable(
    "SIGNOFF_MAX_CALLS_PER_TURN", None, _text, owner=_SETTINGS, shown="64", doc="tool calls run from one model answer"
)
TRANSCRIPT_BUDGET_ENV = Variable(
    "SIGNOFF_TRANSCRIPT_BUDGET",
    None,
    _text,
    owner=_SETTINGS,
    shown="500000",
    doc="bytes of the transcript the model sees",
)
POLICY_FILE_ENV = Variable(
    "SIGNOFF_POLICY_FILE",
    None,
    _raw,
    owner=_SETTINGS,
    doc='approval policies by tool name (TOML or JSON; `always = true` gates a tool, `"*"` every tool without an '
    "entry, `grants = false` takes no grants), see [Who may approve](approvals.md#who-may-approve)",
)
APPROVER_KEYS_ENV = Variable(
    "SIGNOFF_APPROVER_KEYS",
    None,
    _text,
    owner=_SETTINGS,
    doc="keys that verify approvers' tokens: an HS256 secret file, PEM public keys, or a JWKS whose keys may carry "
    '`sub` and `groups` (a person\'s key: signs only as that subject) or `"signoff_service": true` (a service '
    "signing for its users). The tool activity and `signoff audit --verify` check signed decisions with them too",
    secret="the keys that verify approvers' tokens (an HS256 secret signs them too)",
)
APPROVER_ISSUER_ENV = Variable(
    "SIGNOFF_APPROVER_ISSUER",
    None,
    _text,
    owner=_SETTINGS,
    doc="the issuer (`iss`) approvers' tokens must carry, see "
    "[Identity providers](verified-approvers.md#identity-providers)",
)
APPROVER_AUDIENCE_ENV = Variable(
    "SIGNOFF_APPROVER_AUDIENCE",
    None,
    _text,
    owner=_SETTINGS,
    doc="the audience (`aud`) approvers' tokens must carry; always set it with an identity provider's keys",
)
SIGNATURE_MAX_AGE_ENV = Variable(
    "SIGNOFF_SIGNATURE_MAX_AGE",
    None,
    _signature_max_age,
    owner=_SETTINGS,
    shown="`24h`",
    doc="(worker) how long after it was signed (`iat`) a signed approval is honoured by the tool activity "
    "(`90m`, `12h`, `2d`), never longer than the namespace's retention less an hour, see "
    "[A signature is spent once](verified-approvers.md#a-signature-is-spent-once)",
)
STATE_KEY_FILE_ENV = Variable(
    "SIGNOFF_STATE_KEY_FILE",
    None,
    _text,
    owner=_SETTINGS,
    shown="`.signoff/state.key` (made, 0600) when no Temporal address, TLS or API key is configured, else none",
    doc="a secret (32+ bytes) every worker of the task queue shares: it seals the state a run carries across "
    "continue-as-new, so no other workflow can continue into `AgentRun` with state of its own. Without one the "
    "worker only checks with the server that the run continued is an `AgentRun` of its task queue (see "
    "[Security](threat-model.md))",
    secret="the key that seals the state runs carry across continue-as-new",
)
MAX_CACHED_WORKFLOWS_ENV = Variable(
    "SIGNOFF_MAX_CACHED_WORKFLOWS",
    None,
    _max_cached_workflows,
    owner=_SETTINGS,
    shown="1000 (the SDK's)",
    doc="runs the worker keeps in memory between their steps (1 to 100,000); the others replay their history when "
    "a decision or timer wakes them (bench 10: 10,000 parked runs on one worker)",
)
AUTO_MODEL_ENV = Variable(
    "SIGNOFF_AUTO_MODEL",
    None,
    _text,
    owner=_SETTINGS,
    shown="the agent's model",
    doc="auto mode's evaluator model, see [Auto mode](auto-mode.md)",
)
AUTO_SIGNING_KEY_FILE_ENV = Variable(
    "SIGNOFF_AUTO_SIGNING_KEY_FILE",
    None,
    _text,
    owner=_SETTINGS,
    doc="the worker's service key that signs auto mode's votes under verified policies",
    secret="the key the worker signs auto mode's decisions with",
)
AUTO_SIGNING_KID_ENV = Variable(
    "SIGNOFF_AUTO_SIGNING_KID", None, _text, owner=_SETTINGS, doc="that key's `kid` (default: the key file's own)"
)

_DEPLOYMENT = "signoff.runtime.deployment"
DEPLOYMENT_NAME_ENV = Variable(
    "SIGNOFF_DEPLOYMENT_NAME",
    None,
    _text,
    owner=_DEPLOYMENT,
    shown="— (unversioned)",
    doc="with `SIGNOFF_BUILD_ID` (both or neither): the worker joins this Temporal Worker Deployment as version "
    "`<name>.<build id>` and pins `AgentRun` runs to the version they start on; see "
    "[Deploys and parked runs](deploys.md). The name has no `.`",
)
BUILD_ID_ENV = Variable(
    "SIGNOFF_BUILD_ID",
    None,
    _text,
    owner=_DEPLOYMENT,
    shown="— (unversioned)",
    doc="this build of the deployment; both are visible ASCII without spaces, at most 255 characters, not "
    "starting with `__`",
)

_NOTIFY = "signoff.activities.notify"
NOTIFY_URLS_ENV: Variable[tuple[str, ...]] = Variable(
    "SIGNOFF_NOTIFY_URLS",
    (),
    _comma_list,
    owner=_NOTIFY,
    doc="notification webhooks, comma-separated, see [Notifications](fleets.md#notifications)",
)
NOTIFY_SECRET_FILE_ENV = Variable(
    "SIGNOFF_NOTIFY_SECRET_FILE",
    None,
    _path,
    owner=_NOTIFY,
    doc="the key that signs notifications",
    secret="the key that signs notifications",
)

_SLACK = "signoff.activities.slack"
SLACK_BOT_TOKEN_FILE_ENV = Variable(
    "SIGNOFF_SLACK_BOT_TOKEN_FILE",
    None,
    _path,
    owner=_SLACK,
    doc="(worker, inbox) the Slack app's bot token file (`xoxb-...`), see "
    "[Deciding in Slack](fleets.md#deciding-in-slack)",
    secret="the Slack app's bot token",
)
SLACK_CHANNEL_ENV = Variable(
    "SIGNOFF_SLACK_CHANNEL",
    None,
    _text,
    owner=_SLACK,
    doc="(worker) the channel (id, e.g. `C0123ABCD`) calls are posted to",
)
SLACK_API_URL_ENV = Variable(
    "SIGNOFF_SLACK_API_URL",
    DEFAULT_SLACK_API_URL,
    _slack_api_url,
    owner=_SLACK,
    shown=f"`{DEFAULT_SLACK_API_URL}`",
    doc="Slack's Web API base URL",
)

_LINKS = "signoff.views.links"
UI_URL_ENV = Variable(
    "SIGNOFF_UI_URL",
    None,
    _raw,
    owner=_LINKS,
    shown="the embedded server's UI, else `http://localhost:8233` for a local server",
    doc="the Web UI root for links in the CLI and in notifications",
)
INBOX_URL_ENV = Variable(
    "SIGNOFF_INBOX_URL",
    None,
    _url_root,
    owner=_LINKS,
    doc="where people reach the inbox (e.g. `https://inbox.example.com`): notifications (`inbox_url`, the text, "
    "Slack's button) and the CLI link to each call's page there; the inbox and `signoff codec-server` answer for "
    "its host (and `Origin`), see [The inbox](inbox.md)",
)

SERVED_TASK_QUEUES_ENV: Variable[tuple[str, ...]] = Variable(
    "SIGNOFF_SERVED_TASK_QUEUES",
    (),
    _comma_list,
    owner="signoff.signing.derived",
    shown="`SIGNOFF_TASK_QUEUE`",
    doc="(CLI, inbox) comma-separated task queues your workers serve: signers sign only for `AgentRun` runs on "
    "these (`*`: any queue), see [Verified approvers](verified-approvers.md)",
)

_CHAT = "signoff.chat.config"
LLM_BASE_URL_ENV = Variable(
    "SIGNOFF_LLM_BASE_URL",
    "",
    _text,
    owner=_CHAT,
    doc="OpenAI-compatible endpoint, or a preset name: `deepseek`, `openai`, `ollama`, `vllm`",
)
LLM_MODEL_ENV = Variable("SIGNOFF_LLM_MODEL", None, _text, owner=_CHAT, doc="model name")
LLM_API_KEY_ENV = Variable(
    "SIGNOFF_LLM_API_KEY",
    None,
    _raw,
    owner=_CHAT,
    doc="bearer key; read by the activity at request time, never written to history, masked in every error (also "
    "a partial echo of 8 or more characters)",
)
LLM_API_KEY_FILE_ENV = Variable(
    "SIGNOFF_LLM_API_KEY_FILE",
    None,
    _text,
    owner=_CHAT,
    doc="a file holding the key instead (as container secrets are mounted); read at each request; setting both is "
    "an error",
    secret="the model provider's API key",
)
DEMO_NO_KEY_ENV = Variable(
    "SIGNOFF_DEMO_NO_KEY",
    None,
    _raw,
    owner="signoff.cli.demo",
    table=None,
    doc="the key variable of the demo's scripted model: deliberately never set, so the scripted model is never "
    "sent a real provider's key",
)

_SCOPE = "signoff.tools.files.scope"
WORKSPACE_ENV = Variable(
    "SIGNOFF_WORKSPACE", None, _raw, owner=_SCOPE, shown="current directory", doc="root of the file tools' workspace"
)
SCOPE_POLICY_ENV = Variable(
    "SIGNOFF_SCOPE_POLICY",
    DEFAULT_SCOPE_POLICY,
    _raw,
    owner=_SCOPE,
    shown=f"`{DEFAULT_SCOPE_POLICY}`",
    doc="`deny`, `approve_outside` or `allow`",
)
MCP_CONFIG_ENV = Variable(
    "SIGNOFF_MCP_CONFIG",
    None,
    _text,
    owner="signoff.tools.mcp.config",
    doc="MCP servers whose tools the `default` agent offers: an `mcpServers` file (JSON or TOML), see "
    "[Tools from MCP servers](mcp.md)",
    secret="MCP servers, whose headers and env may hold tokens",
)
_PROCESS = "signoff.tools.process"
TOOL_ENV_ENV: Variable[tuple[str, ...]] = Variable(
    "SIGNOFF_TOOL_ENV",
    (),
    _tool_env_names,
    owner=_PROCESS,
    doc="comma-separated variable **names** `run_command` also receives (it gets only `PATH`, `HOME`, `LANG`, "
    "`LC_*`, `TZ`, `TERM`, `USER`, `SHELL` otherwise)",
)
TOOL_USER_ENV = Variable(
    "SIGNOFF_TOOL_USER",
    None,
    _text,
    owner=_PROCESS,
    doc="run `run_command` as this OS user (name or uid); needs a root worker or `CAP_SETUID`, `CAP_SETGID`, "
    "`CAP_KILL`; checked at start",
)

APPROVER_TOKEN_ENV = Variable(
    "SIGNOFF_APPROVER_TOKEN",
    None,
    _text,
    owner="signoff.cli.token",
    doc="the CLI sends this token with decisions on unverified calls (or `--token`)",
)
_WHO = "signoff.cli.who"
APPROVER_KEY_FILE_ENV = Variable(
    "SIGNOFF_APPROVER_KEY_FILE",
    None,
    _text,
    owner=_WHO,
    doc="(CLI) the key `approve`/`deny`/`extend`/`sign` sign decisions on verified calls with, and `run` its "
    "requester token: a PEM private key (Ed25519, EC P-256, RSA 2048+; `signoff keys new`), or the HS256 secret file",
    secret="the private key a person or service signs decisions with",
)
APPROVER_KID_ENV = Variable(
    "SIGNOFF_APPROVER_KID", None, _text, owner=_WHO, doc="(CLI) that key's `kid` (default: the key file's own)"
)
USER_ENV = Variable(
    "USER", None, _raw, owner="signoff.cli.args", table=None, doc="who the CLI decides as when nothing else names them"
)
CODEC_SERVER_TOKEN_FILE_ENV = Variable(
    "SIGNOFF_CODEC_SERVER_TOKEN_FILE",
    None,
    _raw,
    owner="signoff.cli.codec",
    doc="`signoff codec-server` requires `Authorization: Bearer <the file's token>` (same as `--auth-token-file`)",
    secret="the bearer token of `signoff codec-server`",
)
NO_COLOR_ENV = Variable(
    "NO_COLOR", False, _flag, owner="signoff.cli.style", table=None, doc="set: no colours, even on a terminal"
)
COLUMNS_ENV = Variable(
    "COLUMNS", None, _columns, owner="signoff.cli.style", table=None, doc="the terminal's width (20 or more)"
)
STATE_HOME_ENV = Variable(
    "XDG_STATE_HOME",
    None,
    _state_home,
    owner="signoff.cli.shown",
    table=None,
    doc="where the CLI keeps what it showed (an absolute path)",
)

_INBOX_WHO = "signoff.inbox.who"
INBOX_TRUSTED_PROXIES_ENV: Variable[tuple[Network, ...]] = Variable(
    "SIGNOFF_INBOX_TRUSTED_PROXIES",
    (),
    lambda text: parse_networks(text),
    owner=_INBOX_WHO,
    doc="`signoff inbox`: addresses or CIDRs of the authenticating proxy (`10.0.0.5, 172.28.7.0/24`); its user and "
    "groups headers count only on connections from these",
)
INBOX_USER_HEADER_ENV = Variable(
    "SIGNOFF_INBOX_USER_HEADER",
    DEFAULT_INBOX_USER_HEADER,
    _text,
    owner=_INBOX_WHO,
    shown=f"`{DEFAULT_INBOX_USER_HEADER}`",
    doc="the header the proxy names the person in; oauth2-proxy's name by default",
)
INBOX_GROUPS_HEADER_ENV = Variable(
    "SIGNOFF_INBOX_GROUPS_HEADER",
    DEFAULT_INBOX_GROUPS_HEADER,
    _text,
    owner=_INBOX_WHO,
    shown=f"`{DEFAULT_INBOX_GROUPS_HEADER}`",
    doc="the header the proxy names their groups in (comma-separated); oauth2-proxy's name by default",
)
_SIGNER = "signoff.inbox.signer"
INBOX_SIGNING_KEY_FILE_ENV = Variable(
    "SIGNOFF_INBOX_SIGNING_KEY_FILE",
    None,
    _text,
    owner=_SIGNER,
    doc="the inbox's key (an HS256 secret file, or a PEM private key): it signs a bound token for each decision, "
    "see [The inbox](inbox.md)",
    secret="the key the inbox signs its users' decisions with",
)
INBOX_SIGNING_KID_ENV = Variable(
    "SIGNOFF_INBOX_SIGNING_KID",
    None,
    _text,
    owner=_SIGNER,
    doc="the inbox key's JWKS `kid` (default: the key file's own)",
)
_CLI_INBOX = "signoff.cli.inbox"
INBOX_ALLOWED_HOSTS_ENV: Variable[tuple[str, ...]] = Variable(
    "SIGNOFF_INBOX_ALLOWED_HOSTS",
    (),
    _allowed_hosts,
    owner=_CLI_INBOX,
    doc="more `Host` names the inbox and `signoff codec-server` answer for, comma-separated: `name` (any port) or "
    "`name:port` (`inbox.internal, localhost:9000`); besides these, only their own listening address and "
    "`SIGNOFF_INBOX_URL`'s host: any other `Host` gets 421",
)
INBOX_SCOPE_ENV: Variable[Literal["all", "mine"]] = Variable(
    "SIGNOFF_INBOX_SCOPE",
    "all",
    _inbox_scope,
    owner=_CLI_INBOX,
    shown="`all`",
    doc="`all`: every viewer sees every waiting call of the namespace; `mine`: each viewer sees (lists, pages, live "
    "updates, decisions) only the calls they may decide",
)
_INBOX_SLACK = "signoff.inbox.slack"
SLACK_SIGNING_SECRET_FILE_ENV = Variable(
    "SIGNOFF_SLACK_SIGNING_SECRET_FILE",
    None,
    _path,
    owner=_INBOX_SLACK,
    doc="(inbox) the Slack app's signing secret file; with the bot token, the inbox serves `POST /slack/interactions`",
    secret="the Slack app's signing secret, which vouches for who clicked",
)
SLACK_USERS_ENV = Variable(
    "SIGNOFF_SLACK_USERS",
    None,
    _path,
    owner=_INBOX_SLACK,
    doc='(inbox) the file mapping Slack user ids to `{"sub", "groups"}`',
    secret="who each Slack user is to signoff (written, it names approvers)",
)


class KeyFile(NamedTuple):
    """A signing key's file and the key id its tokens name (None: the file's own)."""

    path: str
    kid: str | None


def key_file(env: Environment, path: Variable[str | None], kid: Variable[str | None]) -> KeyFile | None:
    """The key file `path` names with the kid `kid` names; None when `path` is unset."""
    given = env.read(path)
    return KeyFile(given, env.read(kid)) if given else None


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
