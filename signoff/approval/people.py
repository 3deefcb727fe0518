"""A person: whoever asks for a run, decides a call, or votes on one. Pure, no I/O.

One type for all of them: a name, the groups they belong to, and whether a token vouched
for both. A name that was only claimed (the Temporal UI, the CLI, plain JSON) is an
unverified person with no groups, since claimed groups are never trusted.

Types that carry more than a person hold or produce one, so its fields are declared once:
`signoff.approval.authority.Decider` (a person and the token that vouched for them),
`Identity.person()` (a verified token's content), `Vote.by(...)` and `Grant.person()` (an
approval's record), `Requester` (a person, and whether their token is bound to the run)
and `IdentifyOutput.person()` (the identify activity's recorded answer). Their wire
field names stay as they always were (`approver`, `subject`, ...).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Person(BaseModel):
    """Someone who asks, decides or votes.

    Attributes:
        name: who they are: a verified subject, or a claimed name (None: anonymous).
        groups: their groups, from a verified token (empty when only claimed).
        verified: whether a token vouched for `name` and `groups`.
    """

    model_config = ConfigDict(frozen=True)

    name: str | None = None
    groups: tuple[str, ...] = ()
    verified: bool = False

    @classmethod
    def claimed(cls, name: str | None) -> Person:
        """Someone only named (an empty name is nobody in particular, as None is)."""
        return cls(name=name or None)


__all__ = ["Person"]
