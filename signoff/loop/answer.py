"""The model's answer, checked before anything acts on it (CONTRACT v3 "Input limits").

A model is untrusted input. Before its answer is gated, recorded or shown, this module
makes it something every later step can handle:

- Each tool call has a unique id of the shape `[A-Za-z0-9_.:-]{1,128}`: a call whose id
  is empty, `*` (the wildcard of decisions), outside that shape, or shared with another
  call of the answer gets one of signoff's (`call_<turn>_<position>`). People decide,
  and the audit records, by that id. What the model sent is kept as `model_id` and is
  what the model is shown again (`signoff.chat.openai` maps its ids back), so the
  transcript it reads stays the one it wrote.
- No text holds a lone surrogate (JSON escapes such as `\\ud800` with no pair): such a
  string cannot be written to history at all, so each becomes U+FFFD.

Arguments are left as the model wrote them: calls whose arguments are not strict JSON
(`signoff.text.strict_json`) are answered `Error: invalid JSON arguments ...` by the loop.
The per-turn limit is applied by the loop too; `within_limit` is what a driver gates.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from signoff.messages import ChatMessage, ChatResponse, ToolCall
from signoff.text.strict_json import without_surrogates

CALL_ID = re.compile(r"[A-Za-z0-9_.:-]{1,128}")
"""The ids signoff keeps as the model gave them."""


def checked_answer(response: ChatResponse, turn: int) -> ChatResponse:
    """`response` with its texts recordable and its calls' ids unique and well formed.

    Args:
        turn: where the answer stands in its transcript (the number of messages before
            it), so that the ids signoff gives differ from turn to turn.
    """
    message = response.message
    content = without_surrogates(message.content) if message.content else message.content
    calls = with_call_ids(message.tool_calls or [], turn)
    checked = message.model_copy(update={"content": content, "tool_calls": calls or None})
    return response.model_copy(update={"message": checked})


def with_call_ids(calls: Sequence[ToolCall], turn: int) -> list[ToolCall]:
    """The calls with recordable texts, each id unique and of the kept shape (see the module)."""
    clean = [_recordable(call) for call in calls]
    counts = Counter(call.id for call in clean)
    taken = {call.id for call in clean if counts[call.id] == 1 and CALL_ID.fullmatch(call.id)}
    checked = []
    for position, call in enumerate(clean):
        if call.id in taken:
            checked.append(call)
            continue
        new_id = f"call_{turn}_{position}"
        while new_id in taken:  # the model chose an id of this shape itself
            new_id += "_"
        taken.add(new_id)
        checked.append(call.model_copy(update={"id": new_id, "model_id": call.model_id or call.id or None}))
    return checked


def within_limit(message: ChatMessage, limit: int) -> list[ToolCall]:
    """The calls of an answer that the loop takes up: the first `limit` (the rest it
    answers `Error: too many tool calls ...` without looking at them)."""
    return (message.tool_calls or [])[:limit]


def _recordable(call: ToolCall) -> ToolCall:
    fields = {"id": call.id, "name": call.name, "arguments": call.arguments}
    cleaned = {key: without_surrogates(value) for key, value in fields.items()}
    return call if cleaned == fields else call.model_copy(update=cleaned)
