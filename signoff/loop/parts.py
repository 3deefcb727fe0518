"""What the parts of the tool loop (`AgentLoop` and its mixins) call on each other.

`AgentLoop` (signoff/loop/agent_loop.py) is assembled from `Decisions` (loop_decisions.py), `Timers`
(loop_timers.py) and `Resume` (loop_resume.py); each mixin derives from `LoopParts`, so
a method one part provides and another calls is declared here once, and implemented by
exactly one part.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from signoff.approval.authority import Decider, Decision
from signoff.approval.requests import ToolApprovalRequest, ToolApprovalResponse
from signoff.loop.messages import AgentEvent, ToolCall
from signoff.loop.state import LoopState, PendingCall


class LoopParts:
    state: LoopState

    # AgentLoop (loop.py)
    def _emit(self, event: AgentEvent) -> None:
        raise NotImplementedError

    def _answer(self, entry: PendingCall, content: str) -> None:
        raise NotImplementedError

    def _waiting(self) -> list[PendingCall]:
        raise NotImplementedError

    def _entry(self, call_id: str) -> PendingCall | None:
        raise NotImplementedError

    def pending_requests(self) -> list[ToolApprovalRequest]:
        raise NotImplementedError

    def _open_round(
        self,
        calls: list[ToolCall],
        gated: set[str],
        now: datetime,
        *,
        previews: Mapping[str, str],
        answered: Mapping[str | None, str] | None = None,
    ) -> None:
        raise NotImplementedError

    # Decisions (loop_decisions.py)
    def decide(self, decisions: Sequence[ToolApprovalResponse | Decision], now: datetime) -> list[str]:
        raise NotImplementedError

    def _why_not_pending(self, call_id: str) -> str:
        raise NotImplementedError

    def _settle_decision(
        self,
        entry: PendingCall,
        response: ToolApprovalResponse,
        now: datetime,
        *,
        decider: Decider | None = None,
        grant_id: str | None = None,
        timed_out: bool = False,
        outcome: str | None = None,
    ) -> None:
        raise NotImplementedError
