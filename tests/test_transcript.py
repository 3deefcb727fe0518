"""The by-reference transcript protocol (signoff/loop/transcript.py, activities/memory.py), unit level."""

from __future__ import annotations

import pytest
from temporalio.exceptions import ApplicationError

from signoff.activities.memory import RunMemory
from signoff.loop.transcript import GENESIS_HEAD, Copy, Sender, chain, from_full
from signoff.messages import ChatMessage

USER = ChatMessage.user("hi")
ANSWER = ChatMessage.assistant("let me look")
TOOL = ChatMessage.tool("out", "call_1")
LATER = ChatMessage.user("and then?")


class Run:
    """A sender and the run's whole transcript, as the workflow holds them."""

    def __init__(self) -> None:
        self.sender, self.messages, self.asked = Sender(), [USER], 0

    async def ask(self) -> list[ChatMessage]:
        self.asked += 1
        return list(self.messages)

    async def turn(self, memory: RunMemory, key: str = "wf/run-1", epoch: int = 0) -> list[ChatMessage]:
        delta = self.sender.delta(self.messages, epoch)
        seen = await memory.transcript(delta, key, self.ask)
        memory.keep_answer(ANSWER, key)
        self.sender.sent_with_answer(delta, ANSWER)
        self.messages += [ANSWER, TOOL]
        return seen


async def test_a_worker_that_saw_the_run_gets_only_new_messages() -> None:
    memory, run = RunMemory(), Run()
    assert await run.turn(memory) == [USER]
    delta = run.sender.delta(run.messages, 0)
    assert (delta.base, delta.messages) == (2, [TOOL])
    assert await run.turn(memory) == [USER, ANSWER, TOOL]
    assert run.asked == 0


async def test_another_worker_reads_the_run_and_checks_it() -> None:
    run = Run()
    await run.turn(RunMemory())
    assert await run.turn(RunMemory()) == [USER, ANSWER, TOOL]  # a second worker: no copy
    assert run.asked == 1


async def test_a_stale_copy_is_never_used() -> None:
    """A worker whose attempt timed out kept its own answer; the run recorded another
    worker's. Counting messages would use the wrong answer; the digest does not."""
    memory, run = RunMemory(), Run()
    await run.turn(memory)  # this worker keeps ANSWER
    other = ChatMessage.assistant("the retry on another worker said this")
    run.messages[1] = other  # ...but the run recorded the other attempt's answer
    run.sender.head = chain(GENESIS_HEAD, [USER, other])
    assert await run.turn(memory) == [USER, other, TOOL]
    assert run.asked == 1


async def test_a_run_that_disagrees_with_what_it_sent_fails_the_attempt() -> None:
    memory, run = RunMemory(), Run()
    await run.turn(RunMemory())
    run.messages[0] = ChatMessage.user("rewritten")  # the run's answer no longer matches the digest
    with pytest.raises(ApplicationError, match="does not match what the run sent"):
        await run.turn(memory)


async def test_eviction_costs_a_query_not_a_wrong_answer() -> None:
    memory, first, second = RunMemory(size=1), Run(), Run()
    await first.turn(memory, "wf/a")
    await second.turn(memory, "wf/b")  # evicts wf/a
    assert await first.turn(memory, "wf/a") == [USER, ANSWER, TOOL]
    assert first.asked == 1


async def test_a_rewrite_or_a_new_run_resends_everything() -> None:
    memory, run = RunMemory(), Run()
    await run.turn(memory)
    delta = run.sender.delta(run.messages, epoch=1)  # older messages were elided
    assert (delta.base, len(delta.messages)) == (0, 3)
    continued = Run()  # continue-as-new: a fresh sender under a new run id
    continued.messages = list(run.messages)
    assert await continued.turn(memory, key="wf/run-2") == [USER, ANSWER, TOOL]
    assert continued.asked == 0


def test_a_copy_knows_which_prefixes_it_holds() -> None:
    copy = Copy([USER, ANSWER])
    sender = Sender()
    assert copy.holds(sender.delta([USER, ANSWER, TOOL], 0))
    assert from_full([USER, ANSWER], sender.delta([USER, ANSWER, TOOL], 0)) is None  # wrong length
