"""Which MCP servers an agent uses: `MCPServer`, and the `mcpServers` file that lists them.

The file (`SIGNOFF_MCP_CONFIG`, JSON or TOML) has the shape other MCP clients already read:

    {"mcpServers": {
        "git":  {"command": "uvx", "args": ["mcp-server-git", "--repository", "/srv/repo"],
                 "env": {"GIT_AUTHOR_NAME": "signoff"}, "trusted": true},
        "docs": {"url": "https://docs.example.com/mcp",
                 "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}, "tools": ["search"]}}}

Per server: `command`, `args`, `env`, `cwd` (a local server over stdio) or `url`, `headers`
(a remote one over streamable HTTP); `type` (`stdio`, `http`, `streamable-http`) may say
which; `trusted` (default false: the server's annotations never relax a gate); `tools`, an
allow-list of the server's tool names; `timeout_seconds` for one call; `disabled`. `${NAME}`
and `${NAME:-default}` in `args`, `env`, `url` and `headers` take the worker's environment
variable, so a file need not hold secrets. Unknown fields are an error: a misspelt `tools`
must not quietly offer every tool. Everything is checked when the file is read, at worker
start, and a problem names the server and the field.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from signoff.approval.digest import canonical_json, sha256_hex
from signoff.config.environment import MCP_CONFIG_ENV, Environment
from signoff.config.smallfile import ExposedSecret, read_small_file
from signoff.errors import ConfigError

DEFAULT_CALL_TIMEOUT = 300.0
"""Seconds one call may take (a server's `timeout_seconds`); the tool activity allows 30 minutes."""
_MAX_CONFIG_BYTES = 1 << 20
_SERVER_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_|$))*")
"""Letters, digits, `-` and single `_`, not at the end: the server's part of `mcp__<server>__<tool>`
ends at the first `__`, so no two servers make one name (`a_`'s `x` and `a`'s `_x` would both be
`mcp__a___x`), and a server cannot offer tools in another's namespace (`a`'s `b__x` is `mcp__a__b__x`)."""
_MAX_SERVER_NAME = 32
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_TRANSPORTS = {"stdio": "stdio", "http": "http", "streamable-http": "http", "streamable_http": "http"}


class MCPServer(BaseModel):
    """One MCP server an agent takes tools from (the fields of an `mcpServers` entry).

    Attributes:
        name: the server's name: its tools are `mcp__<name>__<tool>`.
        command: the program of a local server, spoken to over stdio (with `args`, `env`, `cwd`).
        args: its arguments.
        env: variables the server gets besides the allow-listed environment `run_command`
            gets (`PATH`, `HOME`, `LANG`, `LC_*`, `TZ`, `TERM`, `USER`, `SHELL`,
            `SIGNOFF_TOOL_ENV`); nothing else of the worker's reaches it.
        cwd: its working directory (default: the worker's).
        url: the endpoint of a remote server, spoken to over streamable HTTP (with `headers`).
        headers: HTTP headers sent with every request (e.g. `Authorization`).
        trusted: whether the server's tool annotations may be believed: a tool of a trusted
            server that declares `readOnlyHint: true` (and not `destructiveHint: true`) runs
            without approval, and one that declares `idempotentHint: true` may be retried.
            Every other MCP tool needs approval and runs at most once.
        tools: the only tool names (the server's own) to offer; None offers all.
        timeout_seconds: how long one call may take before it is reported as timed out.
        disabled: a server kept in the file but not used.

    `${NAME}` and `${NAME:-default}` in `args`, `env`, `url` and `headers` are replaced by
    the environment variable when the server is built.

    Raises:
        ConfigError: a field is missing, unknown or invalid (the message names it).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    type: Literal["stdio", "http", "streamable-http", "streamable_http"] | None = None
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict, repr=False)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict, repr=False)
    trusted: bool = False
    tools: tuple[str, ...] | None = None
    timeout_seconds: float = Field(DEFAULT_CALL_TIMEOUT, gt=0, le=1800)
    disabled: bool = False

    def __init__(self, **fields: Any) -> None:
        name = fields.get("name")
        try:
            super().__init__(**_expanded(fields, name))
        except ValidationError as exc:
            raise ConfigError(f"MCP server {name!r}: {_problems(exc)}") from None

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        if len(name) > _MAX_SERVER_NAME or not _SERVER_NAME.fullmatch(name):
            raise ValueError(
                f"the name must be 1-{_MAX_SERVER_NAME} letters, digits, '-' or single '_' (not last: its "
                "tools are called mcp__<name>__<tool>)"
            )
        return name

    @field_validator("url")
    @classmethod
    def _url(cls, url: str | None) -> str | None:
        if url is not None and not re.match(r"https?://[^/\s]+", url):
            raise ValueError("url must be an http:// or https:// address (streamable HTTP; SSE is not supported)")
        return url

    @model_validator(mode="after")
    def _one_transport(self) -> MCPServer:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either command (a local server over stdio) or url (streamable HTTP), not both")
        if self.type is not None and _TRANSPORTS[self.type] != self.transport:
            raise ValueError(f"type {self.type!r} does not match {'url' if self.url else 'command'}")
        if self.url is not None and (self.args or self.env or self.cwd):
            raise ValueError("args, env and cwd go with command, not url")
        if self.command is not None and self.headers:
            raise ValueError("headers go with url, not command")
        return self

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "http" if self.url is not None else "stdio"

    @property
    def key(self) -> str:
        """Names this configuration (secrets included, hashed): one live session per key."""
        return self.name + ":" + sha256_hex(canonical_json(self.model_dump(mode="json")))[:16]

    def offers(self, tool: str) -> bool:
        """Whether the allow-list (if any) lets this server's tool `tool` be offered."""
        return self.tools is None or tool in self.tools

    def describe(self) -> str:
        """`git (stdio: uvx mcp-server-git ..., trusted)`: for logs, never a header or env value."""
        where = f"stdio: {' '.join([self.command or '', *self.args])}" if self.command else f"http: {self.url}"
        where = where if len(where) <= 80 else where[:79] + "…"
        notes = ["trusted" if self.trusted else "untrusted"]
        notes += [f"tools: {', '.join(self.tools)}"] if self.tools is not None else []
        return f"{self.name} ({where}; {'; '.join(notes)})"

    def check(self) -> None:
        """What can be checked without starting the server: its command is found, its cwd exists.

        Raises:
            ConfigError: naming the server and the field.
        """
        if self.cwd is not None and not Path(self.cwd).is_dir():
            raise ConfigError(f"MCP server {self.name!r}: cwd {self.cwd!r} is not a directory")
        if self.command is not None and not _found(self.command, self.cwd):
            raise ConfigError(
                f"MCP server {self.name!r}: command {self.command!r} is not found on PATH "
                "(give its absolute path, or install it)"
            )

    @classmethod
    def load_all(cls, path: str | os.PathLike[str]) -> list[MCPServer]:
        """The servers of an `mcpServers` file (JSON by `.json`, else TOML), `disabled` ones left out.

        Raises:
            ConfigError: the file cannot be read or parsed, or a server is invalid.
        """
        file = Path(path)
        try:
            text = read_small_file(file, _MAX_CONFIG_BYTES, private=False).decode()
        except ExposedSecret as exc:  # its stdio servers run as the worker: others must not add one
            raise ConfigError(f"{MCP_CONFIG_ENV}: {exc}") from None
        except (OSError, ValueError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise ConfigError(f"{MCP_CONFIG_ENV}: cannot read {file}: {why}") from None
        try:
            raw: Any = json.loads(text) if file.suffix == ".json" else tomllib.loads(text)
        except (ValueError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"{MCP_CONFIG_ENV}: {file} is not valid {file.suffix or 'TOML'}: {exc}") from None
        return cls.parse_all(raw, f"{MCP_CONFIG_ENV} ({file})")

    @classmethod
    def parse_all(cls, raw: Any, source: str = "MCP configuration") -> list[MCPServer]:
        """The servers of a parsed `{"mcpServers": {name: {...}}}` value."""
        servers = raw.get("mcpServers") if isinstance(raw, Mapping) else None
        if not isinstance(servers, Mapping):
            raise ConfigError(f'{source}: expected a table "mcpServers" of servers by name')
        found = []
        for name, entry in servers.items():
            if not isinstance(entry, Mapping):
                raise ConfigError(f"{source}: MCP server {name!r}: expected a table of fields")
            if "name" in entry:
                raise ConfigError(f"{source}: MCP server {name!r}: the name is the entry's key, not a field")
            try:
                server = cls(name=str(name), **entry)
            except ConfigError as exc:
                raise ConfigError(f"{source}: {exc}") from None
            if not server.disabled:
                found.append(server)
        return found

    @classmethod
    def from_env(cls, env: Environment | None = None) -> list[MCPServer]:
        """The servers of the file `SIGNOFF_MCP_CONFIG` names (none when it is unset)."""
        path = (env or Environment()).read(MCP_CONFIG_ENV)
        return cls.load_all(path) if path else []


def _expanded(fields: dict[str, Any], name: object) -> dict[str, Any]:
    """`fields` with `${NAME}` / `${NAME:-default}` replaced in args, env, url and headers."""
    out = dict(fields)
    for field in ("args", "env", "url", "headers"):
        value = fields.get(field)
        where = f"MCP server {name!r}: {field}"
        if isinstance(value, str):
            out[field] = _expand(value, where)
        elif isinstance(value, list | tuple):
            out[field] = [_expand(v, f"{where}[{i}]") if isinstance(v, str) else v for i, v in enumerate(value)]
        elif isinstance(value, Mapping):
            out[field] = {k: _expand(v, f"{where}.{k}") if isinstance(v, str) else v for k, v in value.items()}
    return out


def _expand(text: str, where: str) -> str:
    def variable(match: re.Match[str]) -> str:
        value = Environment().get(match.group(1))
        if value is None and match.group(2) is None:
            raise ConfigError(
                f"{where} refers to ${{{match.group(1)}}}, which is not set in the worker's environment "
                f"(set it, or give a default: ${{{match.group(1)}:-...}})"
            )
        return value if value is not None else match.group(2)

    return _VARIABLE.sub(variable, text)


def _problems(exc: ValidationError) -> str:
    """Each problem with the field it is in; never the value (headers and env hold secrets)."""
    problems = []
    for error in exc.errors():
        field = ".".join(map(str, error["loc"]))
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = f"unknown field (known: {', '.join(f for f in MCPServer.model_fields if f != 'name')})"
        problems.append(f"{field}: {message}" if field else message)
    return "; ".join(problems)


def _found(command: str, cwd: str | None) -> bool:
    if os.sep in command:
        return os.access(Path(cwd or ".") / command, os.X_OK)
    return shutil.which(command) is not None


__all__ = ["DEFAULT_CALL_TIMEOUT", "MCPServer"]
