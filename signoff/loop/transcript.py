"""The by-reference transcript: a run sends each message to the model's worker once.

A model request needs the whole transcript; putting it in every activity input would
make a run's history grow with the square of its conversation. So the sender (the
workflow) sends only what the receiver (the worker running the chat activity) has not
seen, and names what it assumes the receiver holds:

    TranscriptDelta(base=n, base_head=h, messages=[...])
        "the first n messages, whose chained digest is h, and then these"

The receiver keeps, per run, the messages it has seen and the chained digest after
each. It answers from its copy when the copy has n messages and the same digest at n;
otherwise (another worker, a restart, an eviction, or a copy gone stale) it asks the
run for the whole transcript and checks it against `base_head` before using it. A
digest over the messages, not a count, is what makes a stale copy impossible to use.

The receiver also keeps the model's answer it produced, so the sender counts it as
seen (`Sender.sent_with_answer`). When earlier messages are rewritten (the transcript
budget elides old tool results) or the run continues as new (a new run id), the
sender starts over from `base=0`, which replaces the receiver's copy.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import BaseModel, Field

from signoff.approval.digest import canonical_json, sha256_hex
from signoff.messages import ChatMessage
from signoff.text.wire import Compact

GENESIS_HEAD = "0" * 64


def chain(head: str, messages: Iterable[ChatMessage]) -> str:
    """The chained digest after `messages`, starting from `head`."""
    for message in messages:
        head = sha256_hex(head + canonical_json(message.model_dump(mode="json")))
    return head


class TranscriptDelta(Compact):
    """What a chat activity is sent: the receiver's assumed prefix, and what is new."""

    base: int = 0
    base_head: str = GENESIS_HEAD
    messages: list[ChatMessage] = Field(default_factory=list)


class Sender(BaseModel):
    """The sender's side (workflow state): how much the receiver has seen, and its digest."""

    sent: int = 0
    head: str = GENESIS_HEAD
    epoch: int = 0

    def delta(self, transcript: Sequence[ChatMessage], epoch: int) -> TranscriptDelta:
        """What to send for `transcript`; a new `epoch` (rewritten messages) resends it all."""
        if epoch != self.epoch or self.sent > len(transcript):
            self.sent, self.head, self.epoch = 0, GENESIS_HEAD, epoch
        return TranscriptDelta(base=self.sent, base_head=self.head, messages=list(transcript[self.sent :]))

    def sent_with_answer(self, delta: TranscriptDelta, answer: ChatMessage) -> None:
        """The receiver now holds the delta and the model's answer too."""
        self.head = chain(delta.base_head, [*delta.messages, answer])
        self.sent = delta.base + len(delta.messages) + 1


class Copy:
    """The receiver's copy of one run's transcript, with the chained digest after each message."""

    def __init__(self, messages: Sequence[ChatMessage] = ()) -> None:
        self.messages: list[ChatMessage] = []
        self.heads = [GENESIS_HEAD]
        self.extend(messages)

    def extend(self, messages: Iterable[ChatMessage]) -> None:
        for message in messages:
            self.heads.append(chain(self.heads[-1], [message]))
            self.messages.append(message)

    def holds(self, delta: TranscriptDelta) -> bool:
        """Whether this copy has exactly the prefix the delta assumes."""
        return len(self.messages) >= delta.base and self.heads[delta.base] == delta.base_head

    def applied(self, delta: TranscriptDelta) -> Copy:
        """A new copy: this one's first `base` messages, then the delta's."""
        copy = Copy()
        copy.messages, copy.heads = self.messages[: delta.base], self.heads[: delta.base + 1]
        copy.extend(delta.messages)
        return copy


def from_full(full: Sequence[ChatMessage], delta: TranscriptDelta) -> Copy | None:
    """A copy from the run's whole transcript, if it agrees with the delta; else None."""
    if len(full) != delta.base + len(delta.messages):
        return None
    copy = Copy(full[: delta.base])
    if copy.heads[-1] != delta.base_head:
        return None
    copy.extend(delta.messages)
    return copy
