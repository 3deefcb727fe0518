"""`FloorRun`: the least a hand-written Temporal workflow does for the same conversation.

Model activity → tool activities → model activity, until the model stops; a gated call
waits for a minimal `approve` update (or `deny`, whose reason becomes the tool message, as
signoff's `Rejected: <reason>`). No snapshot, search attributes, events, queries
or heartbeats: what is left is Temporal's own cost, the floor signoff is measured against.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from bench.floor import FloorChatInput, FloorInput, FloorResult, chat, tool
    from signoff.messages import ChatMessage, ToolCall

GATED = "gated_noop"


@workflow.defn(name="FloorRun")
class FloorRun:
    def __init__(self) -> None:
        self._approved: set[str] = set()
        self._denied: dict[str, str] = {}

    @workflow.run
    async def run(self, input: FloorInput) -> FloorResult:
        messages = [ChatMessage.user(input.prompt)]
        for _ in range(input.max_rounds):
            reply: ChatMessage = await workflow.execute_activity(
                chat, FloorChatInput(messages=messages), start_to_close_timeout=timedelta(minutes=10)
            )
            messages.append(reply)
            if not reply.tool_calls:
                break
            for call in reply.tool_calls:
                messages.append(ChatMessage.tool(await self._tool(call), call.id))
        return FloorResult(text=messages[-1].content, messages=messages)

    async def _tool(self, call: ToolCall) -> str:
        if call.name == GATED:
            await workflow.wait_condition(lambda: call.id in self._approved or call.id in self._denied)
            if call.id in self._denied:
                return f"Rejected: {self._denied[call.id]}"
        return await workflow.execute_activity(tool, call, start_to_close_timeout=timedelta(minutes=30))

    @workflow.update(name="approve")
    def approve(self, call_id: str) -> None:
        self._approved.add(call_id)

    @workflow.update(name="deny")
    def deny(self, call_id: str, reason: str) -> None:
        self._denied[call_id] = reason
