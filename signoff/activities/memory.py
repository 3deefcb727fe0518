"""The receiver's side of the by-reference transcript (`signoff.loop.transcript`), per run.

Copies are kept by run (workflow id and run id) in an LRU as large as the worker's
workflow cache; a delta this worker's copy cannot serve is served from the run's
`messages` query, checked against the delta's digest before it is used.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable

from temporalio import activity
from temporalio.exceptions import ApplicationError

from signoff.contract import QUERY_MESSAGES
from signoff.loop.transcript import Copy, TranscriptDelta, from_full
from signoff.messages import ChatMessage

RUNS_REMEMBERED = 1000
"""As many as the worker's workflow cache holds by default: a resumed run that fell out
of this memory costs a query."""


class RunMemory:
    """Transcript copies by run, least recently used dropped first."""

    def __init__(self, size: int = RUNS_REMEMBERED) -> None:
        self._size = size
        self._copies: OrderedDict[str, Copy] = OrderedDict()

    async def transcript(
        self,
        delta: TranscriptDelta,
        key: str | None = None,
        ask: Callable[[], Awaitable[list[ChatMessage]]] | None = None,
    ) -> list[ChatMessage]:
        """The whole transcript the delta stands for.

        Args:
            key: the run (default: the current activity's workflow id and run id).
            ask: reads the run's whole transcript (default: its `messages` query).
        """
        key = key or _run_key()
        known = self._copies.get(key)
        if delta.base == 0:
            copy = Copy(delta.messages)
        elif known is not None and known.holds(delta):
            copy = known.applied(delta)
        else:
            copy = from_full(await (ask or _ask_run)(), delta) or _mismatch(key, delta)
        self._store(key, copy)
        return list(copy.messages)

    def keep_answer(self, answer: ChatMessage, key: str | None = None) -> None:
        """Remember the model's answer too: the sender counts it as seen."""
        copy = self._copies.get(key or _run_key())
        if copy is not None:
            copy.extend([answer])

    def _store(self, key: str, copy: Copy) -> None:
        self._copies[key] = copy
        self._copies.move_to_end(key)
        while len(self._copies) > self._size:
            self._copies.popitem(last=False)


def _run_key() -> str:
    info = activity.info()
    return f"{info.workflow_id}/{info.workflow_run_id}"


async def _ask_run() -> list[ChatMessage]:
    info = activity.info()
    handle = activity.client().get_workflow_handle(info.workflow_id or "", run_id=info.workflow_run_id)
    messages: list[ChatMessage] = await handle.query(QUERY_MESSAGES, result_type=list[ChatMessage])
    return messages


def _mismatch(key: str, delta: TranscriptDelta) -> Copy:
    # Retryable: the run answers the query from its state, which cannot disagree with what
    # it sent unless something is wrong; a retry reads it again.
    raise ApplicationError(
        f"the transcript of {key} does not match what the run sent (base {delta.base}); asking again",
        type="TranscriptMismatch",
    )
