"""Who a Slack user is to signoff: `SIGNOFF_SLACK_USERS`, a file mapping user ids to people.

```json
{"U012ABCDEF": {"sub": "alice", "groups": ["sre"]},
 "W0456GHIJK": {"sub": "bob"}}
```
or the same in TOML (`[U012ABCDEF]` with `sub = "alice"` and `groups = ["sre"]`). The key is
Slack's user id, the one thing in a click that Slack vouches for (the request is signed with
the app's signing secret); a display name or a user name never counts, as anyone can change
their own. `sub` is the signoff subject the inbox signs the decision for, `groups` the groups
it signs (what `group:<name>` approvers match). A user id not in the file decides nothing.

The file is read again when it changes (its modification time and size), so taking someone
out of it takes effect at their next click; a file that no longer reads keeps nobody.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from signoff.approval.names import name_problem
from signoff.config.environment import SLACK_USERS_ENV
from signoff.config.smallfile import ExposedSecret, read_small_file
from signoff.errors import ConfigError
from signoff.inbox.who import MAX_GROUPS, Viewer

MAX_FILE_BYTES = 4 * 1024 * 1024
USER_ID = re.compile(r"[UW][A-Z0-9]{2,31}")
"""Slack's user ids: `U...` (or `W...` in an Enterprise Grid), upper-case letters and digits."""


@dataclass(frozen=True)
class SlackPerson:
    sub: str
    groups: tuple[str, ...] = ()

    def viewer(self) -> Viewer:
        return Viewer(self.sub, self.groups, "slack")


def parse_users(data: Any, where: str) -> dict[str, SlackPerson]:
    """The mapping in `data` (a parsed file).

    Raises:
        ConfigError: an entry is not `{"sub": str, "groups": [str]}` under a Slack user id.
    """
    if not isinstance(data, dict):
        raise ConfigError(f'{SLACK_USERS_ENV}: {where} must map Slack user ids to {{"sub", "groups"}}')
    people: dict[str, SlackPerson] = {}
    for user, entry in data.items():
        if not isinstance(user, str) or not USER_ID.fullmatch(user):
            raise ConfigError(f"{SLACK_USERS_ENV}: {where}: {str(user)[:40]!r} is not a Slack user id (U0123ABCD)")
        if not isinstance(entry, dict) or set(entry) - {"sub", "groups"}:
            raise ConfigError(f'{SLACK_USERS_ENV}: {where}: {user} must be {{"sub": NAME, "groups": [NAME, ...]}}')
        sub, groups = entry.get("sub"), entry.get("groups", [])
        if not isinstance(sub, str) or (problem := name_problem("user", sub)) is not None:
            raise ConfigError(f"{SLACK_USERS_ENV}: {where}: {user}'s sub: {problem or 'must be a string'}")
        if not isinstance(groups, list) or len(groups) > MAX_GROUPS or not all(isinstance(g, str) for g in groups):
            raise ConfigError(f"{SLACK_USERS_ENV}: {where}: {user}'s groups must be a list of names")
        for group in groups:
            if (problem := name_problem("group", group)) is not None:
                raise ConfigError(f"{SLACK_USERS_ENV}: {where}: {user}'s group {group[:40]!r}: {problem}")
        people[user] = SlackPerson(sub, tuple(dict.fromkeys(groups)))
    return people


def read_users(path: Path) -> dict[str, SlackPerson]:
    """Read and check the file (JSON, or TOML for a `.toml` name).

    Raises:
        ConfigError: the file cannot be read or is not such a mapping.
    """
    try:
        text = read_small_file(path, MAX_FILE_BYTES, private=False).decode("utf-8")  # it names, it hides nothing
    except ExposedSecret as exc:  # whoever may change it may map themselves to an approver
        raise ConfigError(f"{SLACK_USERS_ENV}: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{SLACK_USERS_ENV}: cannot read {path}: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{SLACK_USERS_ENV}: {path} is {exc}") from None
    try:
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(
            f"{SLACK_USERS_ENV}: {path} is not valid {path.suffix.lstrip('.') or 'JSON'}: {exc}"
        ) from None
    return parse_users(data, str(path))


class SlackUsers:
    """The mapping, read again whenever the file changes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp: tuple[int, int] | None = None
        self._people = read_users(path)  # a file that cannot work is refused at start
        self._stamp = self._stat()
        self.problem: str | None = None

    def _stat(self) -> tuple[int, int] | None:
        try:
            stat = self.path.stat()
        except OSError:
            return None
        return stat.st_mtime_ns, stat.st_size

    def person(self, user_id: str) -> SlackPerson | None:
        """Who `user_id` is (None: nobody signoff knows)."""
        stamp = self._stat()
        if stamp != self._stamp:
            self._stamp = stamp
            try:
                self._people, self.problem = read_users(self.path), None
            except ConfigError as exc:  # a broken edit keeps nobody, and says why
                self._people, self.problem = {}, str(exc)
        return self._people.get(user_id)

    def __len__(self) -> int:
        return len(self._people)
