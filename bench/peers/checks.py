"""Checking every run of the side-by-side bench from outside the systems measured.

Two witnesses that no system's own result can fake: the scripted model's record of what it was
sent (the run's tag is in its prompt), and the tools' call log (`bench.tool_calls`, one line per
call, `<workflow id> <tool>`).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from bench.common import BenchError
from bench.tool_calls import calls
from signoff.testing import ScriptedModelServer, ScriptedRequest


class Checks:
    """What the model saw and which tools ran, checked run by run and at the end."""

    def __init__(self, model: ScriptedModelServer, log: Path) -> None:
        self.model, self.log = model, log
        self.runs: Counter[str] = Counter()  # checked runs, by what was checked
        self._seen = 0  # requests already sorted into conversations
        self._conversations: dict[str, list[ScriptedRequest]] = {}

    def conversation(self, tag: str) -> list[ScriptedRequest]:
        """Every request of the run whose prompt ends with `tag`, in order."""
        requests = self.model.requests
        for request in requests[self._seen :]:
            prompt = next(m.content for m in request.messages if m.role == "user") or ""
            self._conversations.setdefault(prompt.rsplit(" ", 1)[-1], []).append(request)
        self._seen = len(requests)
        return self._conversations.get(tag, [])

    def run(self, workflow_id: str, tag: str, tool: str, tool_message: str, tool_calls: int, what: str) -> None:
        """One model turn before the tool and one after it, whose transcript ends with
        `tool_message` as the only tool message; the tool ran `tool_calls` times (0 or 1)."""
        requests = self.conversation(tag)
        if len(requests) != 2:
            raise BenchError(f"{workflow_id}: the model was asked {len(requests)} times, not 2")
        seen = [m.content for m in requests[1].messages if m.role == "tool"]
        if seen != [tool_message]:
            raise BenchError(f"{workflow_id}: the model's second turn saw tool messages {seen}, not [{tool_message!r}]")
        ran = calls(self.log)[workflow_id, tool]
        if ran != tool_calls:
            raise BenchError(f"{workflow_id}: {tool} ran {ran} times, not {tool_calls}")
        self.runs[what] += 1

    def totals(self, expected: dict[str, int]) -> dict[str, int]:
        """Every tool call in the log, by system (its workflow ids start with the system's
        name): each run's tool ran at most once, and each system ran exactly `expected` tools."""
        found = calls(self.log)
        twice = [key for key, n in found.items() if n > 1]
        if twice:
            raise BenchError(f"tools ran more than once: {twice[:5]}")
        by_system = {kind: sum(n for (wid, _), n in found.items() if wid.startswith(f"{kind}-")) for kind in expected}
        if by_system != expected:
            raise BenchError(f"tool calls by system {by_system} != expected {expected}")
        return by_system
