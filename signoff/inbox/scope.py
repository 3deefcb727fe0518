"""What a viewer sees: every waiting call of the namespace, or only the calls they may decide.

`SIGNOFF_INBOX_SCOPE=all` (the default) shows everyone the inbox knows every waiting call, as
`signoff pending` does. `mine` limits each viewer to the calls they may decide, by the run's
own rules (`signoff.approval.authority.refusal`: approvers and groups, escalation, verified,
`separate_requester`), applied to the call's policy as the run holds it: the list, a call's
page (its arguments, preview and the run's transcript), the rows that arrive live, the event
stream (waiting calls, and how the calls it showed were decided) and every decision. A call
another viewer may decide is, to them, a call that is not there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from signoff.approval.authority import refusal
from signoff.inbox.calls import WaitingCall
from signoff.inbox.decide import viewer_as_person
from signoff.inbox.who import Viewer

ScopeName = Literal["all", "mine"]


@dataclass(frozen=True)
class Scope:
    """Which calls each viewer sees.

    Attributes:
        name: `all` or `mine` (`SIGNOFF_INBOX_SCOPE`).
        signing: whether the inbox signs decisions (its viewers then decide as verified,
            with their groups; otherwise as a claimed name, as the run sees them).
    """

    name: ScopeName = "all"
    signing: bool = False

    def shows(self, call: WaitingCall, viewer: Viewer) -> bool:
        """Whether `viewer` sees `call`."""
        if self.name == "all":
            return True
        return refusal(call.request, viewer_as_person(viewer, self.signing), call.requested_by) is None

    def refusal(self, call: WaitingCall, viewer: Viewer) -> str | None:
        """Why `viewer` may not decide `call` because they cannot see it, or None."""
        if self.shows(call, viewer):
            return None
        return f"no call {call.request.call_id!r} waits for you in run {call.workflow_id!r}"
