"""How people are named: what a name may hold, and when two names name the same person.

A name (an `approver`, a `requested_by`, a token's `sub`, a policy's approver entry) is
recorded as it was given, but compared by `name_key`: Unicode NFKC, case folded,
whitespace runs made one space. So `Alice` and `alice`, or `bob` and its fullwidth form, are one
person to a quorum and to separation of duties. What no key can settle is refused
outright: control and format characters (a zero-width space makes `eve` and `eve` + U+200B
look alike), and `group:` at the start of a person's name, which reads as a group entry.
Confusable letters of other scripts (a Cyrillic a for a Latin one) stay distinct names: an unverified
name is attribution, never authority (docs/threat-model.md).
"""

from __future__ import annotations

import unicodedata

GROUP_PREFIX = "group:"
MAX_NAME_CHARS = 256
"""The longest approver, requester or token subject (CONTRACT: `approver` ≤ 256)."""


def name_key(name: str) -> str:
    """What `name` is compared by: NFKC, case folded (NFKC again after), whitespace collapsed."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())
    return " ".join(folded.split())


def same_name(a: str | None, b: str | None) -> bool:
    """Whether two names (None: nobody) name the same person."""
    return a is not None and b is not None and name_key(a) == name_key(b)


def is_group_entry(entry: str) -> bool:
    """Whether an approver entry names a group (`group:<name>`, in any case)."""
    return name_key(entry).startswith(GROUP_PREFIX)


def group_of(entry: str) -> str:
    """The group an entry names, as a key (`group:SRE` → `sre`)."""
    return name_key(entry).removeprefix(GROUP_PREFIX).strip()


def _hidden(value: str) -> str | None:
    """The first character of `value` that is not printable (control, format, separator), as U+XXXX."""
    for char in value:
        if not char.isprintable():
            return f"U+{ord(char):04X} ({unicodedata.category(char)})"
    return None


def name_problem(what: str, value: object, *, group_entry: bool = False) -> str | None:
    """Why `value` cannot be a name, or None when it can.

    Args:
        what: how the message calls it ("approver", "subject", "group", ...).
        group_entry: `group:<name>` is allowed (a policy's approver list); otherwise a
            name starting with `group:` is refused.
    """
    if not isinstance(value, str) or not value.strip():
        return f"the {what} must be a non-empty string, not {_short(value)}"
    if len(value) > MAX_NAME_CHARS:
        return f"the {what} {_short(value)} is longer than {MAX_NAME_CHARS} characters"
    if (hidden := _hidden(value)) is not None:
        return f"the {what} {_short(value)} holds the invisible or control character {hidden}; names may not"
    if is_group_entry(value):
        if not group_entry:
            return f"the {what} {_short(value)} starts with {GROUP_PREFIX!r}, which names a group, not a person"
        if not group_of(value):
            return f"the {what} {_short(value)} names no group after {GROUP_PREFIX!r}"
    return None


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


__all__ = ["GROUP_PREFIX", "MAX_NAME_CHARS", "group_of", "is_group_entry", "name_key", "name_problem", "same_name"]
