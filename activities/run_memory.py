"""What a worker remembers of the runs it serves, so payloads carry only what is new.

A model request needs the whole transcript and the agent snapshot; sending both in
every activity input would make history grow with the square of the conversation.
Instead the workflow sends the new messages and the snapshot's digest, and this
memory supplies the rest. A worker that has not seen the run (another worker, a
restart, an eviction) reads it from the workflow with a query: slower, never wrong.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

from temporalio import activity
from temporalio.exceptions import ApplicationError

from signoff.contract import QUERY_MESSAGES, QUERY_SNAPSHOT, AgentSnapshotModel
from signoff.messages import ChatMessage

# As many as the worker's workflow cache holds (1,000 by default): a resumed run that
# fell out of this memory costs a query.
DEFAULT_RUNS_REMEMBERED = 1000


class RunMemory:
    """An LRU of transcripts by run, and the snapshots seen by digest."""

    def __init__(self, serve: Callable[[str], object], size: int = DEFAULT_RUNS_REMEMBERED):
        """`serve(agent)` builds the worker's own snapshot of an agent and remembers it here."""
        self._serve = serve
        self._size = size
        self._transcripts: OrderedDict[str, list[ChatMessage]] = OrderedDict()
        self._snapshots: dict[str, AgentSnapshotModel] = {}

    def remember_snapshot(self, digest: str, snapshot: AgentSnapshotModel) -> None:
        self._snapshots[digest] = snapshot

    async def snapshot(self, agent: str, digest: str) -> AgentSnapshotModel:
        """The snapshot the run started with (the worker's config may have changed since)."""
        if digest not in self._snapshots:
            self._serve(agent)
        if digest not in self._snapshots:  # the worker's config changed since the run started
            self._snapshots[digest] = await _query(QUERY_SNAPSHOT, AgentSnapshotModel)
        return self._snapshots[digest]

    async def transcript(self, base: int, new: list[ChatMessage]) -> list[ChatMessage]:
        """The whole transcript: what this worker saw of the run, plus `new`."""
        key = _run_key()
        known = self._transcripts.get(key)
        if base == 0:  # a run's first turn (or first after continue-as-new) sends it all
            full = list(new)
        elif known is not None and len(known) >= base:
            full = known[:base] + new
        else:
            full = await _query(QUERY_MESSAGES, list[ChatMessage])
            if len(full) != base + len(new):
                raise ApplicationError(f"transcript of {key} has {len(full)} messages, expected {base + len(new)}")
        self._store(key, full)
        return full

    def append(self, message: ChatMessage) -> None:
        """Remember the model's answer too: the workflow will not send it back."""
        known = self._transcripts.get(_run_key())
        if known is not None:
            known.append(message)

    def _store(self, key: str, transcript: list[ChatMessage]) -> None:
        self._transcripts[key] = list(transcript)
        self._transcripts.move_to_end(key)
        while len(self._transcripts) > self._size:
            self._transcripts.popitem(last=False)


def _run_key() -> str:
    info = activity.info()
    return f"{info.workflow_id}/{info.workflow_run_id}"


async def _query(name: str, result_type: type) -> object:
    info = activity.info()
    handle = activity.client().get_workflow_handle(info.workflow_id or "", run_id=info.workflow_run_id)
    return await handle.query(name, result_type=result_type)
