"""The transcript budget: what the model must see stays within a size, oldest results first.

When the transcript grows past its budget, the oldest tool results are elided: each
message stays (every tool call keeps its answer) and its content says what was elided
and how large it was. Elision goes down to three quarters of the budget, so it happens
once in a while rather than on every round.
"""

from __future__ import annotations

from signoff.messages import ChatMessage

ELIDED_PREFIX = "[elided: "


def message_size(message: ChatMessage) -> int:
    """Bytes of a message's text and tool-call arguments (UTF-8)."""
    size = len((message.content or "").encode())
    for call in message.tool_calls or ():
        size += len(call.arguments.encode()) + len(call.name) + len(call.id)
    return size


def elide_to_budget(messages: list[ChatMessage], budget: int) -> int:
    """Elide the oldest tool results in place while the transcript is over `budget`;
    returns how many were elided."""
    total = sum(message_size(m) for m in messages)
    if total <= budget:
        return 0
    target, elided = budget * 3 // 4, 0
    for index, message in enumerate(messages):
        if total <= target:
            break
        if message.role != "tool" or (message.content or "").startswith(ELIDED_PREFIX):
            continue
        before = message_size(message)
        note = (
            f"{ELIDED_PREFIX}a tool result of {len(message.content or ''):,} characters was removed to keep "
            f"the transcript within its budget of {budget:,} bytes]"
        )
        messages[index] = message.model_copy(update={"content": note})
        total += message_size(messages[index]) - before
        elided += 1
    return elided


def elide_turns(messages: list[ChatMessage], budget: int) -> int:
    """A session's transcript still over `budget` once tool results are elided: elide the texts
    of the oldest user and assistant messages (never the last message: the one to answer) down to
    three quarters of it; returns how many were elided. Every message stays, so every tool call
    keeps its answer."""
    total = sum(message_size(m) for m in messages)
    if total <= budget:
        return 0
    target, elided = budget * 3 // 4, 0
    for index, message in enumerate(messages[:-1]):
        if total <= target:
            break
        content = message.content or ""
        if message.role not in ("user", "assistant") or not content or content.startswith(ELIDED_PREFIX):
            continue
        before = message_size(message)
        note = f"{ELIDED_PREFIX}an earlier {message.role} message of {len(content):,} characters was removed]"
        messages[index] = message.model_copy(update={"content": note})
        total += message_size(messages[index]) - before
        elided += 1
    return elided
