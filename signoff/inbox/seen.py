"""What each viewer opened: a call its list row cuts is decided in bulk only once its page was opened.

A list row shows a call's arguments on one line, cut at `view.SUMMARY_CHARS` characters: a
700-character command that ends in `; rm -rf ~` shows no `rm -rf` there. So such a row is
marked as cut, and its checkbox stays off until the person has opened the call's page, where
the arguments are shown whole. The server holds the same rule whatever a page sends: a bulk
decision naming a cut call that this viewer has not opened is refused for that call, with the
reason, and the others are decided. (Marking beats showing the row's tail: what matters may
sit in the middle of a long command.)

What was opened is kept per viewer and per call *as it was shown* (the key holds the
arguments digest, so a call that changed since must be opened again), in this inbox process
only (after a restart, or on another replica, the person opens it again), the latest
`OPENED_KEPT`.
"""

from __future__ import annotations

from collections import OrderedDict

from signoff.approval.names import name_key
from signoff.inbox.calls import WaitingCall
from signoff.inbox.view import fits

OPENED_KEPT = 50_000


def cut(call: WaitingCall) -> bool:
    """Whether the call's list row cuts its arguments."""
    return not fits(call.request.arguments)


class Opened:
    """The calls each viewer opened (their page was served to them whole)."""

    def __init__(self, kept: int = OPENED_KEPT) -> None:
        self.kept = kept
        self._opened: OrderedDict[tuple[str, str], None] = OrderedDict()

    def note(self, viewer: str, call: WaitingCall) -> None:
        key = (name_key(viewer), call.key)
        self._opened[key] = None
        self._opened.move_to_end(key)
        while len(self._opened) > self.kept:
            self._opened.popitem(last=False)

    def unseen(self, viewer: str, call: WaitingCall) -> bool:
        """Whether the viewer would decide `call` unseen from the list: its row cuts it and
        they have not opened it as it is now."""
        return cut(call) and (name_key(viewer), call.key) not in self._opened

    def refusal(self, viewer: str, call: WaitingCall) -> str | None:
        """Why a bulk decision may not include `call` for this viewer, or None."""
        if not self.unseen(viewer, call):
            return None
        return (
            f"call {call.request.call_id!r} ({call.request.name}) is longer than its row in the list: open it and "
            "read it whole before deciding it (nothing was decided for it)"
        )
