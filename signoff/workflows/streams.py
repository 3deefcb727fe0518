"""The run's Workflow Stream (`temporalio.contrib.workflow_streams`, CONTRACT v4 "Sessions and streams").

Every `AgentRun` hosts one: an offset-addressed log that readers follow with polling
updates (`WorkflowStreamClient.subscribe`). Topic `events` has the run's events as the
`events` query answers them (the workflow publishes each as it records it: no command, the
log lives in the workflow's memory and history replays it); topic `tokens` has the model's
text deltas, which the chat activity publishes with signals (activities/tokens.py) when the
run names the model turn (`ChatInput.stream_turn`).

Across continue-as-new the stream carries its state (`StreamCarry`): its offsets go on
where they were, and its log is cut to where the latest turn began (a session's latest
message, or another run's latest model turn) but one: a reader that was following, even a
turn behind, has had everything before it (the run releases their polls before it moves),
and one that comes back from an older offset starts at the log's base. Before the run finishes or moves, the
stream releases its polls (`detach`), so no reader holds the run open.
"""

from __future__ import annotations

from typing import Any

from temporalio.contrib.workflow_streams import WorkflowStream

from signoff.contract import TOPIC_EVENTS
from signoff.workflows.run_input import StreamCarry


class RunStream:
    """The run's stream, what it published, and where its latest turn began."""

    def __init__(self, carry: StreamCarry | None) -> None:
        """Built from the workflow's `__init__` (the stream registers its handlers there)."""
        self._stream = WorkflowStream(carry.state if carry else None)
        self._events = self._stream.topic(TOPIC_EVENTS)
        self.model_turns = carry.model_turns if carry else 0
        self.turn_offset = carry.turn_offset if carry else 0
        self._previous_offset = carry.state.base_offset if carry else 0

    def offset(self) -> int:
        """The offset the next item gets (the stream's own offset query answers the same)."""
        return self._stream._on_offset()

    def event(self, kept: dict[str, Any]) -> None:
        """Publish an event as the `events` query keeps it."""
        self._events.publish(kept)

    def model_turn(self) -> int:
        """A model turn begins: its number, for the `tokens` items the chat activity publishes."""
        self.model_turns += 1
        return self.model_turns

    def turn_begins(self) -> None:
        """A turn begins: the log is cut where the turn before it began when the run moves."""
        self._previous_offset, self.turn_offset = self.turn_offset, self.offset()

    def detach(self) -> None:
        """Release the readers' polls and refuse new ones on this run (it finishes or moves)."""
        self._stream.detach_pollers()

    def carried(self) -> StreamCarry:
        """The state the next run takes up: the log from where the turn before the latest began."""
        self._stream.truncate(self._previous_offset)
        return StreamCarry(state=self._stream.get_state(), model_turns=self.model_turns, turn_offset=self.turn_offset)
