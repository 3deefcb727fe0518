"""Reading a run's Workflow Stream: its model text (`tokens`) and its events (`events`).

Every poll is an update, recorded in the run's history: one reader per run and place is the
rule (the inbox's server reads once per run and fans out). `follow` yields each item once,
in offset order, from `from_offset` on, across continue-as-new, and ends after the run
closes (the closed run's rest is read by query). A reader that was cut off comes back with
the offset after the last item it had (`StreamItem.offset + 1`) and misses nothing, unless
the run continued as new and cut its log before that offset (workflows/streams.py): then it
starts at what the log still holds.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from temporalio.client import Client
from temporalio.contrib.workflow_streams import WorkflowStreamClient

from signoff.contract import TOPIC_EVENTS, TOPIC_TOKENS

BOTH_TOPICS = (TOPIC_TOKENS, TOPIC_EVENTS)
POLL_COOLDOWN = timedelta(milliseconds=100)
"""The least time between two polls of a reader that is caught up (each poll is history)."""


@dataclass(frozen=True)
class StreamItem:
    """One item of a run's stream: its topic, its JSON, its offset in the stream."""

    topic: str
    data: dict[str, Any]
    offset: int


async def follow(
    client: Client,
    workflow_id: str,
    from_offset: int = 0,
    topics: Sequence[str] = BOTH_TOPICS,
    poll_cooldown: timedelta = POLL_COOLDOWN,
) -> AsyncIterator[StreamItem]:
    """The run's stream items of `topics`, from `from_offset`, until the run has closed."""
    reader = WorkflowStreamClient.create(client, workflow_id)
    async for item in reader.subscribe(list(topics), from_offset, poll_cooldown=poll_cooldown):
        data = item.data if isinstance(item.data, dict) else {"value": item.data}
        yield StreamItem(item.topic, data, item.offset)


async def stream_offset(client: Client, workflow_id: str) -> int:
    """The offset the run's next stream item gets (a query: nothing recorded)."""
    return await WorkflowStreamClient.create(client, workflow_id).get_offset()


class TurnText:
    """The model's text per turn, from `tokens` items: a retried attempt starts its turn over."""

    def __init__(self) -> None:
        self.texts: dict[int, str] = {}
        self._attempts: dict[int, int] = {}

    def add(self, data: dict[str, Any]) -> tuple[int, str, bool]:
        """Take an item; returns its turn, its text, and whether the turn started over."""
        turn, text, attempt = int(data.get("turn", 0)), str(data.get("text", "")), int(data.get("attempt", 1))
        over = turn in self._attempts and attempt > self._attempts[turn]
        if turn in self._attempts and attempt < self._attempts[turn]:
            return turn, "", False  # an older attempt's text, superseded
        if over or turn not in self.texts:
            self.texts[turn] = ""
        self._attempts[turn] = attempt
        self.texts[turn] += text
        return turn, text, over


__all__ = ["BOTH_TOPICS", "POLL_COOLDOWN", "StreamItem", "TurnText", "follow", "stream_offset"]
