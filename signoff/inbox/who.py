"""Who is deciding: the person a trusted proxy vouches for, or the one local user.

The inbox authenticates nobody itself. Behind an authenticating reverse proxy (oauth2-proxy,
a company SSO gateway) it reads the user and their groups from headers the proxy sets
(`SIGNOFF_INBOX_USER_HEADER`, `SIGNOFF_INBOX_GROUPS_HEADER`), and only on connections *from*
the proxy (`SIGNOFF_INBOX_TRUSTED_PROXIES`, addresses or CIDRs): the same header from anyone
else is ignored, as anyone can send it. For one person on one machine, `--local-user NAME`
names everyone who reaches the port (so it listens on loopback only); it is one or the
other, never both, so a connection that bypasses the proxy is never someone by default.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from signoff.approval.names import name_problem
from signoff.config.environment import (
    DEFAULT_INBOX_GROUPS_HEADER,
    DEFAULT_INBOX_USER_HEADER,
    INBOX_GROUPS_HEADER_ENV,
    INBOX_TRUSTED_PROXIES_ENV,
    INBOX_USER_HEADER_ENV,
    Environment,
    Network,
)
from signoff.errors import ConfigError

MAX_GROUPS = 100


@dataclass(frozen=True)
class Viewer:
    """The person using the page.

    Attributes:
        name: who they are (the proxy's user header, or `--local-user`).
        groups: their groups (the proxy's groups header; none for a local user).
        via: how the inbox knows: `proxy`, `local`, or `slack` (a Slack user id mapped by
            `SIGNOFF_SLACK_USERS`, in a request Slack signed).
    """

    name: str
    groups: tuple[str, ...] = ()
    via: Literal["proxy", "local", "slack"] = "local"


def _header_name(value: str, env: str) -> str:
    name = value.strip()
    if not name or not all(c.isalnum() or c in "-_" for c in name):
        raise ConfigError(f"{env}: {value!r} is not an HTTP header name")
    return name.lower()


def _person(value: str) -> str | None:
    """`value` when it can name a person (`signoff.approval.names`: printable, at most 256, not
    `group:...`), else None."""
    value = value.strip()
    return value if name_problem("user", value) is None else None


class WhoIsAsking:
    """Tells the viewer of each request from its peer address and headers."""

    def __init__(
        self,
        proxies: Sequence[Network] = (),
        user_header: str = DEFAULT_INBOX_USER_HEADER,
        groups_header: str = DEFAULT_INBOX_GROUPS_HEADER,
        local_user: str | None = None,
    ) -> None:
        self.proxies = tuple(proxies)
        self.user_header = _header_name(user_header, INBOX_USER_HEADER_ENV)
        self.groups_header = _header_name(groups_header, INBOX_GROUPS_HEADER_ENV)
        self.local_user = None if local_user is None else _person(local_user)
        if local_user is not None and self.local_user is None:
            raise ConfigError(f"--local-user {local_user!r} cannot name a person: {name_problem('user', local_user)}")
        if self.proxies and self.local_user is not None:
            raise ConfigError(
                f"choose one way to know who is deciding: {INBOX_TRUSTED_PROXIES_ENV} (a proxy) or "
                "--local-user (one person on this machine), not both"
            )
        if not self.proxies and self.local_user is None:
            raise ConfigError(
                f"the inbox must know who is deciding: put it behind an authenticating proxy and set "
                f"{INBOX_TRUSTED_PROXIES_ENV} (the proxy's address) and {INBOX_USER_HEADER_ENV} "
                f"(default {DEFAULT_INBOX_USER_HEADER}), "
                "or, for one person on this machine, pass --local-user NAME"
            )

    @classmethod
    def from_env(cls, env: Environment, local_user: str | None = None) -> WhoIsAsking:
        """The proxies and headers of `SIGNOFF_INBOX_*`, or `local_user` (`--local-user`)."""
        return cls(
            env.read(INBOX_TRUSTED_PROXIES_ENV),
            env.read(INBOX_USER_HEADER_ENV),
            env.read(INBOX_GROUPS_HEADER_ENV),
            local_user,
        )

    def trusts(self, peer: str | None) -> bool:
        """Whether `peer` (the connection's address) is one of the proxies."""
        if peer is None:
            return False
        try:
            address = ipaddress.ip_address(peer)
        except ValueError:
            return False
        return any(address in network for network in self.proxies)

    def viewer(self, peer: str | None, headers: Mapping[str, Sequence[str]]) -> Viewer | None:
        """Who is asking, or None when nobody the inbox trusts says.

        Args:
            peer: the address the request came from (the proxy's, behind one).
            headers: the request's header values by lower-case name (all values of each).
        """
        if self.local_user is not None:
            return Viewer(self.local_user, (), "local")
        if self.trusts(peer):
            users = headers.get(self.user_header, [])
            if len(users) != 1 or (name := _person(users[0])) is None:
                return None  # the proxy did not say who (or said it twice): nobody
            return Viewer(name, _groups(headers.get(self.groups_header, [])), "proxy")
        return None  # not from the proxy: its headers say nothing

    def describe(self) -> str:
        if self.local_user is not None:
            return f"everyone who reaches it is {self.local_user!r} (--local-user)"
        proxies = ", ".join(str(n) for n in self.proxies)
        return f"users from header {self.user_header} (groups: {self.groups_header}) sent by {proxies} only"


def _groups(values: Sequence[str]) -> tuple[str, ...]:
    """`sre, release` (oauth2-proxy joins groups with commas): each usable name, at most 100."""
    names = [g.strip() for value in values for g in value.split(",")]
    usable = [g for g in names if g and name_problem("group", g) is None]
    return tuple(dict.fromkeys(usable))[:MAX_GROUPS]
