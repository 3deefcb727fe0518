"""The activities of an agent run, bound to the worker's agents and settings.

Everything that touches the machine happens in an activity, worker-side, so its answer
is recorded in history:

| activity | module | what |
| --- | --- | --- |
| `signoff.chat` | `chat.py` | one model turn; the first takes the agent's snapshot |
| `signoff.tool` | `tool.py` | one tool call, checked against the run before it runs |
| `signoff.prepare` | `prepare.py` | a resumed transcript's snapshot and gated calls |
| `signoff.identify` | `identify.py` | who a token vouches for (local activity) |
| `signoff.notify` | `notify.py` | one notice POSTed to one notification channel |
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from temporalio import activity

from signoff.activities.chat import model_turn
from signoff.activities.identify import Verifier, identify
from signoff.activities.memory import RunMemory
from signoff.activities.models import (
    ChatInput,
    ChatTurn,
    IdentifyInput,
    IdentifyOutput,
    NotifyInput,
    NotifyOutput,
    PrepareInput,
    PrepareOutput,
    ToolInput,
    ToolOutput,
)
from signoff.activities.notify import NotifyConfig, deliver
from signoff.activities.prepare import prepare_run
from signoff.activities.served import ServedAgents
from signoff.activities.tool import Callers, run_call
from signoff.agent import ChatClientAgent
from signoff.chat.base import ChatClient
from signoff.limits import DEFAULT_PAYLOAD_BUDGET, Limits
from signoff.policy import PolicyBook

PAYLOAD_BUDGET = DEFAULT_PAYLOAD_BUDGET


class AgentActivities:
    """The activities, bound to the worker's agents and its defaults.

    Args:
        agents: the agents this worker serves, by name.
        default_client: a factory for the chat client of agents that bring none.
        limits: the worker's limits (`SIGNOFF_MAX_*`), snapshotted by each run.
        policies: the worker's approval policies (`SIGNOFF_POLICY_FILE`).
        payload_budget: the largest result an activity may return (None when an
            external payload store keeps large payloads out of history).
        verifier: checks approvers' and requesters' tokens (`SIGNOFF_APPROVER_KEYS`).
        notify: the notification channels (`SIGNOFF_NOTIFY_URLS`); runs snapshot them.
    """

    def __init__(
        self,
        agents: Mapping[str, ChatClientAgent],
        default_client: Callable[[], ChatClient] | None = None,
        limits: Limits | None = None,
        policies: PolicyBook | None = None,
        payload_budget: int | None = PAYLOAD_BUDGET,
        verifier: Verifier | None = None,
        notify: NotifyConfig | None = None,
    ) -> None:
        plan = notify.plan if notify else None
        self.served = ServedAgents(agents, default_client, limits, policies, payload_budget, plan)
        self._verifier = verifier
        self._notify = notify
        self._memory = RunMemory()
        self._callers = Callers()
        self._budget = payload_budget

    @activity.defn(name="signoff.prepare")
    async def prepare(self, input: PrepareInput) -> PrepareOutput:
        """Snapshot the agent for a resumed transcript, and gate its open calls."""
        return await prepare_run(self.served, input)

    @activity.defn(name="signoff.chat")
    async def chat(self, input: ChatInput) -> ChatTurn:
        """One model turn, streamed; which of its calls need approval."""
        return await model_turn(self.served, self._memory, input, self._budget)

    @activity.defn(name="signoff.tool")
    async def tool(self, input: ToolInput) -> ToolOutput:
        """Run one tool call; its own failure is the message `Error: ...`."""
        return await run_call(self.served, self._callers, input)

    @activity.defn(name="signoff.identify")
    async def identify(self, input: IdentifyInput) -> IdentifyOutput:
        """Who a token vouches for, or why it does not."""
        return identify(self._verifier, input)

    @activity.defn(name="signoff.notify")
    async def notify(self, input: NotifyInput) -> NotifyOutput:
        """POST one notice to one channel (retried by Temporal; see notify.py)."""
        return await deliver(self._notify, input)

    @property
    def all(self) -> list[Callable[..., Any]]:
        return [self.prepare, self.chat, self.tool, self.identify, self.notify]
