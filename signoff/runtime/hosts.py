"""Which `Host` a server of people's browsers answers for: DNS rebinding kept out.

A page on another site whose name re-resolves to 127.0.0.1 (DNS rebinding) is, to the
browser, same-origin with itself: it can read what the inbox serves on that port (a page with
its CSRF token) and post its forms, and the browser's `Origin` then names that same site. Only
the `Host` header tells the two apart: it names the site the browser thinks it is talking to.
So the inbox and the codec server answer a request only when its `Host` is one of
(CONTRACT v4 "Signing what is shown"):

- the address they listen on, with the port actually bound: for a loopback address or the
  wildcard one (`127.0.0.1`, `::1`, `0.0.0.0`, `::`), `127.0.0.1:PORT`, `localhost:PORT` and
  `[::1]:PORT` (never `0.0.0.0:PORT`: that is no address to reach); for any other address,
  that address and port;
- the host of `SIGNOFF_INBOX_URL`, where people reach it (through a proxy, say);
- the names in `SIGNOFF_INBOX_ALLOWED_HOSTS` (comma-separated; `name` matches that name on any
  port, `name:port` only on that port).

Any other `Host`, and a request without one, is answered `421 Misdirected Request` with a
short plain message, before any route runs. A browser's `Origin` is checked against the same
list, never against the request's own `Host` (which a rebinding page chose). Names are
compared in one spelling (`signoff.config.environment.host_value`: lower case, no trailing
dot, IPv6 in brackets).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from signoff.config.environment import INBOX_ALLOWED_HOSTS_ENV, INBOX_URL_ENV, host_value
from signoff.text.neutral import neutralise

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
"""How a browser on this machine names a server that listens on loopback (or everywhere)."""
_DEFAULT_PORTS = {"http": 80, "https": 443}
_SHOWN_CHARS = 100


def bound_socket(host: str, port: int) -> socket.socket:
    """A socket bound to `host:port` (port 0: a free one), to hand to uvicorn's `serve(sockets=...)`.

    Raises:
        OSError: the address cannot be bound (taken, or not this machine's).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError:
        sock.close()
        raise
    return sock


def _split(value: str) -> tuple[str, int | None]:
    """`name:port` as (name, port); an IPv6 name keeps its brackets."""
    name, _, port = value.rpartition(":") if not value.endswith("]") else (value, "", "")
    if not name or (not value.startswith("[") and ":" in name):
        return value, None
    return name, int(port) if port else None


@dataclass(frozen=True)
class AllowedHosts:
    """The `Host` values a server answers for.

    Attributes:
        exact: `name:port` values that match only on that port.
        names: names that match on any port (a configured name without a port).
    """

    exact: frozenset[str] = frozenset()
    names: frozenset[str] = frozenset()

    @classmethod
    def of(cls, listening: tuple[str, int], public_url: str | None = None, extra: Sequence[str] = ()) -> AllowedHosts:
        """The hosts of a server bound to `listening` (address and port, as its socket says),
        reached at `public_url` (`SIGNOFF_INBOX_URL`) and under the names of `extra`
        (`SIGNOFF_INBOX_ALLOWED_HOSTS`, already checked)."""
        exact = set(_own_hosts(*listening))
        names: set[str] = set()
        for value in [*extra, *([_url_host(public_url)] if public_url else [])]:
            if not value:
                continue
            name, port = _split(value)
            if port is None:
                names.add(name)
            else:
                exact.add(value)
        return cls(frozenset(exact), frozenset(names))

    def admits(self, host: str | None) -> bool:
        """Whether a request whose `Host` is `host` is for this server."""
        value = host_value(host) if host else None
        if value is None:
            return False
        name, port = _split(value)
        if name in self.names or value in self.exact:
            return True
        return port is None and any(f"{name}:{p}" in self.exact for p in _DEFAULT_PORTS.values())

    def admits_origin(self, origin: str) -> bool:
        """Whether a browser's `Origin` names this server (`null`, or another site's: no)."""
        parts = urlsplit(origin.strip())
        if parts.scheme not in _DEFAULT_PORTS or not parts.netloc or "@" in parts.netloc:
            return False
        value = host_value(parts.netloc)
        if value is None:
            return False
        name, port = _split(value)
        return self.admits(value) or (port is None and self.admits(f"{name}:{_DEFAULT_PORTS[parts.scheme]}"))

    def describe(self) -> str:
        """`127.0.0.1:8765, localhost:8765, [::1]:8765, inbox.example.com (any port)`."""
        return ", ".join([*sorted(self.exact), *(f"{n} (any port)" for n in sorted(self.names))])


def _own_hosts(address: str, port: int) -> list[str]:
    """The `Host` values naming a socket bound to `address:port` (see the module)."""
    try:
        ip = ipaddress.ip_address(address.strip("[]").split("%")[0])
    except ValueError:
        return [f"{LOOPBACK_NAMES[1]}:{port}"] if address == LOOPBACK_NAMES[1] else []
    if ip.is_loopback or ip.is_unspecified:
        return [f"{name}:{port}" for name in LOOPBACK_NAMES]
    return [f"[{ip.compressed}]:{port}" if ip.version == 6 else f"{ip}:{port}"]


def _url_host(url: str) -> str | None:
    """The `Host` a browser sends for `url`: its host, and its port unless it is the scheme's default."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        return None
    if not parts.hostname:
        return None
    name = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    given = port if port is not None and port != _DEFAULT_PORTS.get(parts.scheme) else None
    return host_value(name if given is None else f"{name}:{given}")


def misdirected(host: str | None) -> str:
    """The 421's message: what was asked for, and where the names it answers for come from."""
    shown = "no Host" if not host else f"host {neutralise(host[:_SHOWN_CHARS])!r}"
    return (
        f"421 Misdirected Request: this server does not answer for {shown}. It answers for the address it "
        f"listens on, the host of {INBOX_URL_ENV} and the names in {INBOX_ALLOWED_HOSTS_ENV} (comma-separated): "
        "add the name people use to reach it there.\n"
    )


class HostCheck:
    """ASGI middleware: a request whose `Host` is not one of `hosts` gets 421 and reaches nothing.

    Args:
        open_paths: paths answered whatever the `Host` (a health check that says `ok` and
            nothing else, for probes that name the server by a pod's address).
    """

    def __init__(self, app: ASGIApp, hosts: AllowedHosts, open_paths: Sequence[str] = ()) -> None:
        self.app, self.hosts, self.open_paths = app, hosts, frozenset(open_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope["path"] in self.open_paths:
            await self.app(scope, receive, send)
            return
        given = [value.decode("latin-1") for name, value in scope["headers"] if name == b"host"]
        host = given[0] if len(given) == 1 else None  # two Host headers name no one server
        if self.hosts.admits(host):
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
        else:
            await PlainTextResponse(misdirected(host), status_code=421)(scope, receive, send)


__all__ = ["LOOPBACK_NAMES", "AllowedHosts", "HostCheck", "bound_socket", "misdirected"]
