"""The activities of an agent run, bound to the worker's agents and settings.

Everything that touches the machine happens in an activity, worker-side, so its answer
is recorded in history:

| activity | module | what |
| --- | --- | --- |
| `signoff.chat` | `chat.py` | one model turn; the first takes the agent's snapshot |
| `signoff.tool` | `tool.py` | one tool call, checked against the run before it runs |
| `signoff.prepare` | `prepare.py` | a resumed transcript's snapshot and gated calls |
| `signoff.identify` | `identify.py` | who a token vouches for (local activity) |
| `signoff.seal` | `state.py` | seal the state a run continues as new with (local activity) |
| `signoff.unseal` | `state.py` | check the seal of the state a continued run starts from (local activity) |
| `signoff.notify` | `notify.py` | one notice POSTed to one notification channel (`slack.py`: the Slack app's channel) |
| `signoff.auto_evaluate` | `auto.py` | auto mode's verdict on one waiting call |
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from temporalio import activity
from temporalio.plugin import SimplePlugin

from signoff.activities.agents import ServedAgents
from signoff.activities.auto import AutoSettings, evaluate
from signoff.activities.chat import model_turn
from signoff.activities.identify import identify
from signoff.activities.memory import RunMemory
from signoff.activities.models import (
    AUTO_ACTIVITY,
    CHAT_ACTIVITY,
    IDENTIFY_ACTIVITY,
    NOTIFY_ACTIVITY,
    PREPARE_ACTIVITY,
    SEAL_ACTIVITY,
    TOOL_ACTIVITY,
    TOOL_ANSWER_ACTIVITY,
    UNSEAL_ACTIVITY,
    AutoInput,
    AutoOutput,
    ChatInput,
    ChatTurn,
    IdentifyInput,
    IdentifyOutput,
    NotifyInput,
    NotifyOutput,
    PrepareInput,
    PrepareOutput,
    SealInput,
    SealOutput,
    ToolAnswerInput,
    ToolInput,
    ToolOutput,
    UnsealInput,
    UnsealOutput,
)
from signoff.activities.needs import ActivitySettings
from signoff.activities.notify import deliver
from signoff.activities.observe import model_turn_done, tool_call_done
from signoff.activities.prepare import prepare_run
from signoff.activities.spent import SpentSignatures
from signoff.activities.state import seal, unseal
from signoff.activities.tool import Callers, SignOffs, answer_call, run_call
from signoff.agent.builder import ChatClientAgent
from signoff.chat.base import ChatClient
from signoff.loop.limits import DEFAULT_PAYLOAD_BUDGET

if __name__ != "signoff.activities":  # the repository's top-level `activities/` is a link to this folder
    raise ImportError(
        f"import signoff.activities, not {__name__}: the top-level `activities/` is a link to signoff/activities/ "
        "(the layout of Temporal's samples), and importing it by another name would load a second copy"
    )

__all__ = ["AgentActivities"]


class AgentActivities:
    """The activities, bound to the worker's agents and settings.

    Args:
        agents: the agents this worker serves, by name.
        default_client: a factory for the chat client of agents that bring none.
        settings: the worker's: limits, policies, approver keys, state key, notification channels.
        payload_budget: the largest payload a run may write; None when an external payload
            store keeps large payloads out of history.
    """

    def __init__(
        self,
        agents: Mapping[str, ChatClientAgent],
        default_client: Callable[[], ChatClient] | None = None,
        *,
        settings: ActivitySettings,
        payload_budget: int | None = DEFAULT_PAYLOAD_BUDGET,
    ) -> None:
        self.settings = settings
        self.served = ServedAgents(agents, default_client, settings, payload_budget)
        self._memory = RunMemory()
        self._callers = Callers()
        self._signoffs = SignOffs(self.settings.verifier, SpentSignatures(self.settings.signature_max_age))

    @activity.defn(name=PREPARE_ACTIVITY)
    async def prepare(self, input: PrepareInput) -> PrepareOutput:
        """Snapshot the agent for a resumed transcript, and gate its open calls."""
        return await prepare_run(self.served, input)

    @activity.defn(name=CHAT_ACTIVITY)
    async def chat(self, input: ChatInput) -> ChatTurn:
        """One model turn, streamed; which of its calls need approval."""
        turn = await model_turn(self.served, self._memory, self._callers, input, self.served.payload_budget)
        model_turn_done(input.agent, turn.response)
        return turn

    @activity.defn(name=TOOL_ACTIVITY)
    async def tool(self, input: ToolInput) -> ToolOutput:
        """Run one tool call; its own failure is the message `Error: ...`."""
        output = await run_call(self.served, self._callers, self._signoffs, input)
        tool_call_done(input.agent, input.call.name, output.content)
        return output

    @activity.defn(name=TOOL_ANSWER_ACTIVITY)
    async def tool_answer(self, input: ToolAnswerInput) -> ToolOutput:
        """Send a person's answer to an MCP server's question back with its call."""
        output = await answer_call(self.served, self._callers, self._signoffs, input)
        tool_call_done(input.agent, input.call.name, output.content)
        return output

    @activity.defn(name=IDENTIFY_ACTIVITY)
    async def identify(self, input: IdentifyInput) -> IdentifyOutput:
        """Who a token vouches for, or why it does not."""
        return identify(self.settings.verifier, input)

    @activity.defn(name=SEAL_ACTIVITY)
    async def seal(self, input: SealInput) -> SealOutput:
        """Seal the state this run continues as new with (local activity only)."""
        return seal(self.settings.state_key, input)

    @activity.defn(name=UNSEAL_ACTIVITY)
    async def unseal(self, input: UnsealInput) -> UnsealOutput:
        """Check the seal of the state this continued run starts from (local activity only)."""
        return await unseal(self.settings.state_key, input)

    @activity.defn(name=NOTIFY_ACTIVITY)
    async def notify(self, input: NotifyInput) -> NotifyOutput:
        """POST one notice to one channel (retried by Temporal; see notify.py)."""
        return await deliver(self.settings.notify, input)

    @activity.defn(name=AUTO_ACTIVITY)
    async def auto_evaluate(self, input: AutoInput) -> AutoOutput:
        """Auto mode's verdict on one waiting call (escalate on any failure; see auto.py)."""
        return await evaluate(self.served, self.settings.auto or AutoSettings(), input)

    @property
    def all(self) -> list[Callable[..., Any]]:
        return [
            self.prepare,
            self.chat,
            self.tool,
            self.tool_answer,
            self.identify,
            self.seal,
            self.unseal,
            self.notify,
            self.auto_evaluate,
        ]

    def plugin(self) -> SimplePlugin:
        """A worker plugin that closes the MCP sessions (stopping stdio servers) when the worker stops."""
        return SimplePlugin("signoff.mcp_sessions", run_context=self._sessions_open)

    @contextlib.asynccontextmanager
    async def _sessions_open(self) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await self.served.aclose()
