"""Where the model lives: endpoint, model name, timeouts. Never the API key itself.

The key is read at the moment a request is sent, from the file `LLMConfig.api_key_file`
(`SIGNOFF_LLM_API_KEY_FILE`, as container secrets are mounted) or else from the
environment variable named by `LLMConfig.api_key_env` (through `signoff.config.environment`,
like every variable). So it never sits in a config
object that could end up in a repr, a log line, an event or Temporal history, and a
rotated key file is picked up by the next request.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from signoff.config.environment import (
    LLM_API_KEY_ENV,
    LLM_API_KEY_FILE_ENV,
    LLM_BASE_URL_ENV,
    LLM_MODEL_ENV,
    Environment,
)
from signoff.config.smallfile import ExposedSecret, read_small_file
from signoff.errors import ConfigError

PRESETS: dict[str, str] = {
    "deepseek": "https://api.deepseek.com/v1",
    "openai": "https://api.openai.com/v1",
    "ollama": "http://localhost:11434/v1",
    "vllm": "http://localhost:8000/v1",
}
"""Known OpenAI-compatible endpoints, by name."""

PRESET_MODELS: dict[str, str] = {
    "deepseek": "deepseek-chat",
    "openai": "gpt-4o-mini",
    "ollama": "llama3.2",
}
"""Default model per preset; vLLM serves whatever it was started with, so it has none."""

MAX_API_KEY_FILE_BYTES = 64 * 1024
DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_READ_TIMEOUT = 120.0


@dataclass(frozen=True)
class LLMConfig:
    """How to reach an OpenAI-compatible chat-completions endpoint.

    Validated when built: a bad value raises `ConfigError` at once, not at the first request.

    Attributes:
        base_url: endpoint root, e.g. `https://api.deepseek.com/v1` (no trailing `/chat/...`).
        model: model name sent with each request unless `ChatOptions.model` overrides it.
        api_key_env: name of the environment variable holding the bearer key. The key is
            read when a request is made and sent only if the variable is set and non-empty.
        api_key_file: path of a file holding the bearer key (surrounding whitespace is
            ignored). When set, it is the key's only source: `api_key_env` is not read.
            Checked when the config is built and read again at each request.
        connect_timeout: seconds to establish the connection.
        read_timeout: seconds allowed between two chunks of the stream (not for the whole
            answer: a long answer that keeps streaming never times out).
        headers: extra HTTP headers sent with every request. Left out of the repr, since
            some providers take credentials in a custom header.
    """

    base_url: str
    model: str
    api_key_env: str = LLM_API_KEY_ENV
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    read_timeout: float = DEFAULT_READ_TIMEOUT
    headers: Mapping[str, str] = field(default_factory=dict, repr=False, hash=False)
    api_key_file: str | None = None

    def __post_init__(self) -> None:
        # A frozen dataclass cannot assign normally; normalising the URL here means
        # `f"{base_url}/chat/completions"` never has a doubled slash.
        object.__setattr__(self, "base_url", self.base_url.strip().rstrip("/"))
        object.__setattr__(self, "headers", dict(self.headers))
        _check_base_url(self.base_url)
        if not self.model.strip():
            raise ConfigError(f"model is empty: set {LLM_MODEL_ENV} or pass model=...")
        if not self.api_key_env.strip():
            raise ConfigError("api_key_env is empty: name the variable holding the API key")
        for name in ("connect_timeout", "read_timeout"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"{name} must be a positive number of seconds")
        if self.api_key_file is not None:
            read_api_key_file(self.api_key_file)  # fail now, not at the first request

    @classmethod
    def preset(cls, name: str, model: str | None = None, **kwargs: object) -> LLMConfig:
        """A config for a known provider.

        Args:
            name: a key of `PRESETS` (`deepseek`, `openai`, `ollama`, `vllm`).
            model: the model; defaults to the preset's usual one where it has one.
            **kwargs: any other `LLMConfig` field (timeouts, headers, api_key_env).

        Raises:
            ConfigError: unknown preset, or no model given for a preset without a default.
        """
        if name not in PRESETS:
            raise ConfigError(f"unknown preset {name!r}: choose one of {', '.join(PRESETS)}")
        model = model or PRESET_MODELS.get(name)
        if not model:
            raise ConfigError(f"preset {name!r} has no default model: pass model=...")
        return cls(base_url=PRESETS[name], model=model, **kwargs)  # type: ignore[arg-type]

    @classmethod
    def from_env(cls, env: Environment | None = None) -> LLMConfig:
        """Build from `SIGNOFF_LLM_BASE_URL`, `SIGNOFF_LLM_MODEL`, `SIGNOFF_LLM_API_KEY_FILE`.

        `SIGNOFF_LLM_BASE_URL` is a URL or a preset name (e.g. `deepseek`); with a preset,
        `SIGNOFF_LLM_MODEL` may be left unset to use the preset's default model. The key
        comes from `SIGNOFF_LLM_API_KEY_FILE` or `SIGNOFF_LLM_API_KEY`; setting both is
        an error, since which one the operator meant cannot be guessed.

        Args:
            env: the environment to read; the process's when None.

        Raises:
            ConfigError: a variable is missing or its value cannot work.
        """
        env = env or Environment()
        key_file = env.read(LLM_API_KEY_FILE_ENV)
        if key_file and env.get(LLM_API_KEY_ENV):
            raise ConfigError(
                f"both {LLM_API_KEY_ENV} and {LLM_API_KEY_FILE_ENV} are set: "
                "unset one of them (the file is the safer home for the key)"
            )
        base_url, model = env.read(LLM_BASE_URL_ENV), env.read(LLM_MODEL_ENV)
        if not base_url:
            raise ConfigError(
                f"{LLM_BASE_URL_ENV} is not set: set it to an OpenAI-compatible endpoint "
                f"such as https://api.deepseek.com/v1, or a preset name ({', '.join(PRESETS)})"
            )
        if base_url in PRESETS:
            return cls.preset(base_url, model=model, api_key_file=key_file)
        if model is None:
            raise ConfigError(f"{LLM_MODEL_ENV} is not set: set it to the model name to use")
        return cls(base_url=base_url, model=model, api_key_file=key_file)

    def api_key(self) -> str | None:
        """The API key now: from `api_key_file` when set, else from `api_key_env`.

        Returns:
            The key, or None when the environment variable is unset or empty.

        Raises:
            ConfigError: `api_key_file` is set but missing, unreadable or empty.
        """
        if self.api_key_file is not None:
            return read_api_key_file(self.api_key_file)
        return Environment().get(self.api_key_env) or None


def read_api_key_file(path: str) -> str:
    """The key held in the file at `path`, without surrounding whitespace.

    Errors name the file, never its content. A path that does not exist is named only
    when it looks like one: a key pasted into the setting by mistake must not be
    echoed into a log.

    Raises:
        ConfigError: the file is missing, unreadable, not a regular file, too large,
            not text, or empty.
    """
    what = _key_file_name(path)
    try:
        data = read_small_file(path, MAX_API_KEY_FILE_BYTES)
    except ExposedSecret as exc:
        raise ConfigError(f"{LLM_API_KEY_FILE_ENV}: {exc}") from None
    except FileNotFoundError:
        raise ConfigError(f"{what} does not exist: mount or create it, or fix the path") from None
    except PermissionError:
        raise ConfigError(f"{what} is not readable by this worker (uid {os.geteuid()})") from None
    except OSError as exc:  # only the open names the file
        raise ConfigError(f"{what} cannot be {'opened' if exc.filename else 'read'}: {exc.strerror}") from None
    except ValueError as exc:
        raise ConfigError(f"{what} is {exc}") from None
    try:
        key = data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise ConfigError(f"{what} is not UTF-8 text") from None
    if not key:
        raise ConfigError(f"{what} is empty: write the API key into it")
    return key


def _key_file_name(path: str) -> str:
    if os.path.lexists(path) or path.startswith(("/", ".", "~")):
        return f"API key file {path!r} ({LLM_API_KEY_FILE_ENV})"
    return (
        f"the API key file named by {LLM_API_KEY_FILE_ENV} (its value is not shown: it does not "
        "look like a path and may be the key itself; the setting takes the path of a file "
        "holding the key)"
    )


def _check_base_url(url: str) -> None:
    parts = urlsplit(url)
    if "@" in parts.netloc:
        # Checked first, and the URL left out of the message: credentials in the URL would
        # travel into reprs and logs, and the key has its own home.
        raise ConfigError("base URL must not contain credentials: put the key in the API key env var")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"base URL {url!r} is not an http(s) URL: use e.g. https://api.deepseek.com/v1 "
            f"or a preset name ({', '.join(PRESETS)})"
        )
    if parts.query or parts.fragment:
        raise ConfigError(f"base URL {url!r} must not have a query or fragment")
