"""AG-UI 1.0 on the inbox's server: `POST /ag-ui` (CONTRACT v4 "Sessions and streams").

A `RunAgentInput` (the `ag-ui-protocol` package's type) names a thread; the thread is the
session `ag-ui-<threadId>` (an `AgentRun` with `options.session`). The answer is
`text/event-stream` in AG-UI's events (the package's encoder), one AG-UI run per request:

- `RUN_STARTED`; then what the run's Workflow Stream has from the moment the request came
  (operator/stream.py): the model's text as `TEXT_MESSAGE_START` / `_CONTENT` / `_END` (one
  message per model turn), its tool calls as `TOOL_CALL_START` / `_ARGS` / `_END` and their
  results as `TOOL_CALL_RESULT`;
- `RUN_FINISHED` once the turn settles: outcome `success`, or, when it waits for decisions,
  outcome `interrupt` with one interrupt per waiting call (id = the call's id, `toolCallId`
  the same, the arguments and digest in `metadata`, `responseSchema` the answer's shape);
- `RUN_ERROR` with the reason when the input or a decision is refused (nothing else is done).

What the request does, by its input:

- `resume` entries (`{"interruptId", "status", "payload": {"approved", "reason"?,
  "arguments"?, "arguments_digest"?}}`) are decisions, made for the authenticated viewer
  exactly as the inbox's pages make them (its proxy identity, its signer): an unknown id, a
  changed digest, an expired call or a viewer the policy refuses is `RUN_ERROR`. A call that
  was decided already, the same way (another client of the thread was first), is settled:
  not an error. `status: "cancelled"` is a denial.
- otherwise, when its `messages` hold one user message more than the session's transcript,
  the last one is sent (`send_message`, the session started with it if need be:
  update-with-start); when they hold none more, the request only reconnects: the session's
  transcript as `MESSAGES_SNAPSHOT`, then the turn as it stands (pending calls as interrupts).

Who may: anyone the inbox knows (`SIGNOFF_INBOX_*`'s identity); a page of another site may
not (the `Origin` check of the inbox's reads, and a JSON body no form can send).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from ag_ui.core import (
    AssistantMessage,
    BaseEvent,
    EventType,
    FunctionCall,
    Interrupt,
    MessagesSnapshotEvent,
    ResumeEntry,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    ToolMessage,
    UserMessage,
)
from ag_ui.core import ToolCall as AgUiToolCall
from ag_ui.encoder import EventEncoder
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from temporalio.client import (
    Client,
    WithStartWorkflowOperation,
    WorkflowUpdateFailedError,
    WorkflowUpdateStage,
)
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from signoff.approval.requests import ToolApprovalRequest
from signoff.contract import (
    SESSION_MOVING,
    STATUS_AWAITING,
    TOPIC_EVENTS,
    TOPIC_TOKENS,
    TURN_RUNNING,
    UPDATE_SEND_MESSAGE,
    WORKFLOW_TYPE,
    AgentRunInput,
    RunOptions,
    SessionView,
)
from signoff.errors import CommandError
from signoff.inbox.calls import how_decided, run_calls
from signoff.inbox.decide import Choice, InboxDecisions, SeenCall
from signoff.inbox.guard import RequestGuard
from signoff.inbox.who import Viewer
from signoff.messages import ChatMessage
from signoff.operator import run_client
from signoff.operator.stream import StreamItem, follow, stream_offset
from signoff.runtime.codec_server import read_body

THREAD_PREFIX = "ag-ui-"
MAX_THREAD_ID = 200
MAX_INPUT_BYTES = 4 * 1024 * 1024
SETTLE_POLL = 0.1
"""Seconds between `session` queries while a resumed turn runs (queries are not history)."""
RESPONSE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean"},
        "reason": {"type": "string"},
        "arguments": {"type": "object", "description": "edited arguments, to run instead (approve only)"},
        "arguments_digest": {"type": "string", "description": "the digest of the arguments as shown"},
    },
    "required": ["approved"],
}
"""What a resume entry's `payload` answers an approval interrupt with: approve, deny, edit, reason."""


class TurnRefused(Exception):
    """What ends an AG-UI run with `RUN_ERROR`: the message says why."""


def thread_workflow_id(thread_id: str) -> str:
    """The session of an AG-UI thread: `ag-ui-<threadId>`."""
    if not thread_id or len(thread_id) > MAX_THREAD_ID or not thread_id.isprintable():
        raise TurnRefused(f"threadId must be 1 to {MAX_THREAD_ID} printable characters")
    return THREAD_PREFIX + thread_id


class AgUi:
    """The `/ag-ui` endpoint of the inbox."""

    def __init__(
        self,
        client: Client,
        decisions: InboxDecisions,
        guard: RequestGuard,
        task_queue: str,
        viewer: Any,
    ) -> None:
        self.client, self.decisions, self.guard, self.task_queue = client, decisions, guard, task_queue
        self._viewer = viewer

    async def endpoint(self, request: Request) -> Response:
        viewer: Viewer | None = self._viewer(request)
        if viewer is None:
            return PlainTextResponse("the inbox does not know who you are", status_code=401)
        if (problem := self.guard.read_problem(request)) is not None:
            return PlainTextResponse(problem, status_code=403)
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return PlainTextResponse("send a RunAgentInput as application/json", status_code=415)
        body = await read_body(request, MAX_INPUT_BYTES)
        if body is None:
            return PlainTextResponse(f"at most {MAX_INPUT_BYTES} bytes of input", status_code=413)
        try:
            given = RunAgentInput.model_validate_json(body)
        except ValidationError as exc:
            return PlainTextResponse(f"not a RunAgentInput: {_first_error(exc)}", status_code=422)
        encoder = EventEncoder(accept=request.headers.get("accept", "text/event-stream"))
        events = self._run(viewer, given)
        return StreamingResponse(
            (encoder.encode(event) async for event in events),
            media_type=encoder.get_content_type(),
            headers={"cache-control": "no-store", "x-accel-buffering": "no"},
        )

    async def _run(self, viewer: Viewer, given: RunAgentInput) -> AsyncIterator[BaseEvent]:
        ids = {"thread_id": given.thread_id, "run_id": given.run_id}
        yield RunStartedEvent(type=EventType.RUN_STARTED, **ids)
        try:
            async for event in self._turn(viewer, given, ids):
                yield event
        except TurnRefused as exc:
            yield RunErrorEvent(type=EventType.RUN_ERROR, message=str(exc), code="refused")
        except CommandError as exc:
            yield RunErrorEvent(type=EventType.RUN_ERROR, message=str(exc), code="run")

    async def _turn(self, viewer: Viewer, given: RunAgentInput, ids: dict[str, str]) -> AsyncIterator[BaseEvent]:
        workflow_id = thread_workflow_id(given.thread_id)
        handle = self.client.get_workflow_handle(workflow_id)
        start = await _offset(self.client, workflow_id)
        if given.resume:
            await self._resume(viewer, workflow_id, given.resume)
            settle: asyncio.Future[SessionView] = asyncio.ensure_future(_settled(handle))
        else:
            text, count = _last_user_text(given)
            known = await _user_messages(handle) if start is not None else 0
            if text is None or count <= known:  # a reconnect: the session as it stands
                if start is None:
                    raise TurnRefused(f"thread {given.thread_id!r} has no session yet: send a user message")
                yield MessagesSnapshotEvent(
                    type=EventType.MESSAGES_SNAPSHOT, messages=_snapshot(await run_client.transcript(handle))
                )
                settle = asyncio.ensure_future(_settled(handle))
            else:
                settle = await self._send(viewer, workflow_id, text)
        translator = Translator(workflow_id)
        try:
            async for event in _until_settled(self.client, workflow_id, start or 0, settle, translator):
                yield event
        finally:
            settle.cancel()
        view = settle.result()
        outcome: RunFinishedInterruptOutcome | RunFinishedSuccessOutcome = RunFinishedSuccessOutcome()
        if view.status == STATUS_AWAITING and view.pending:
            outcome = RunFinishedInterruptOutcome(interrupts=[_interrupt(r) for r in view.pending])
        yield RunFinishedEvent(thread_id=ids["thread_id"], run_id=ids["run_id"], outcome=outcome)

    async def _send(self, viewer: Viewer, workflow_id: str, text: str) -> asyncio.Future[SessionView]:
        """Send the message (starting the session with it if it has not begun); the turn's answer."""
        start: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
            WORKFLOW_TYPE,
            AgentRunInput(prompt=None, options=RunOptions(session=True, requested_by=viewer.name)),
            id=workflow_id,
            task_queue=self.task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        )
        for _ in range(run_client.MOVING_RETRIES):
            try:
                taken = await self.client.start_update_with_start_workflow(
                    UPDATE_SEND_MESSAGE,
                    {"text": text},
                    start_workflow_operation=start,
                    wait_for_stage=WorkflowUpdateStage.ACCEPTED,
                )
            except WorkflowUpdateFailedError as exc:
                cause = exc.cause
                if isinstance(cause, ApplicationError) and cause.type == SESSION_MOVING:
                    await asyncio.sleep(0.2)
                    start = WithStartWorkflowOperation(
                        WORKFLOW_TYPE,
                        AgentRunInput(prompt=None, options=RunOptions(session=True, requested_by=viewer.name)),
                        id=workflow_id,
                        task_queue=self.task_queue,
                        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                    )
                    continue
                raise TurnRefused(run_client.failure_text(exc)) from None
            except RPCError as exc:
                raise TurnRefused(f"{workflow_id}: {exc.message}") from None

            async def answered(taken: Any = taken) -> SessionView:
                await taken.result()
                return await run_client.session(self.client.get_workflow_handle(workflow_id))

            return asyncio.ensure_future(answered())
        raise TurnRefused(f"{workflow_id}: the session kept moving to a new run; send the message again")

    async def _resume(self, viewer: Viewer, workflow_id: str, entries: Sequence[ResumeEntry]) -> None:
        """Each entry as the viewer's decision; the first refusal raises, naming the call."""
        try:
            waiting = {c.request.call_id: c for c in await run_calls(self.client, workflow_id)}
        except CommandError as exc:
            raise TurnRefused(str(exc)) from None
        for entry in entries:
            call_id = entry.interrupt_id
            payload = entry.payload if isinstance(entry.payload, dict) else {}
            if entry.status == "cancelled":
                choice = Choice(False, "the AG-UI client cancelled the interrupt")
            else:
                approved = payload.get("approved")
                if not isinstance(approved, bool):
                    raise TurnRefused(f"interrupt {call_id!r}: payload.approved must be true or false")
                reason, arguments = payload.get("reason"), payload.get("arguments")
                if reason is not None and not isinstance(reason, str):
                    raise TurnRefused(f"interrupt {call_id!r}: payload.reason must be a string")
                if arguments is not None and (not isinstance(arguments, dict) or not approved):
                    raise TurnRefused(f"interrupt {call_id!r}: payload.arguments must be an object, with an approval")
                choice = Choice(approved, reason, arguments)
            call = waiting.get(call_id)
            if call is None:
                decided = await how_decided(self.client, workflow_id, call_id, None)
                if decided.approved is not None and decided.approved == choice.approved:
                    continue  # settled already, this way: another client of the thread was first
                raise TurnRefused(
                    f"interrupt {call_id!r}: {decided.text}"
                    if decided.approved is not None
                    else f"interrupt {call_id!r} is not a call this thread waits for"
                )
            digest = payload.get("arguments_digest") or call.request.arguments_digest
            if digest != call.request.arguments_digest:
                raise TurnRefused(
                    f"interrupt {call_id!r}: the call's arguments changed since they were shown (digest "
                    f"{call.request.arguments_digest[:12]}..., not {str(digest)[:12]}...): nothing was decided"
                )
            result = await self.decisions.decide(viewer, SeenCall(workflow_id, call_id, digest), choice)
            if result.outcome == "refused":
                raise TurnRefused(result.message)


class Translator:
    """Stream items as AG-UI events: a text message per model turn, tool calls and results."""

    def __init__(self, workflow_id: str) -> None:
        self.workflow_id = workflow_id
        self._open: str | None = None
        self._attempts: dict[int, int] = {}

    def events(self, item: StreamItem) -> list[BaseEvent]:
        data = item.data
        if item.topic == TOPIC_TOKENS:
            turn, attempt, text = int(data.get("turn", 0)), int(data.get("attempt", 1)), str(data.get("text", ""))
            if attempt < self._attempts.get(turn, attempt) or not text:
                return []
            self._attempts[turn] = attempt
            message_id = f"{self.workflow_id}:{turn}" + (f".{attempt}" if attempt > 1 else "")
            out: list[BaseEvent] = []
            if self._open != message_id:
                out += self.close()
                out.append(
                    TextMessageStartEvent(type=EventType.TEXT_MESSAGE_START, message_id=message_id, role="assistant")
                )
                self._open = message_id
            out.append(TextMessageContentEvent(type=EventType.TEXT_MESSAGE_CONTENT, message_id=message_id, delta=text))
            return out
        if item.topic != TOPIC_EVENTS:
            return []
        kind = data.get("type")
        if kind == "tool_call" and isinstance(call := data.get("call"), dict):
            parent = self._open
            out = self.close()
            call_id, args = str(call.get("id", "")), call.get("arguments", "")
            out.append(
                ToolCallStartEvent(
                    type=EventType.TOOL_CALL_START,
                    tool_call_id=call_id,
                    tool_call_name=str(call.get("name", "")),
                    parent_message_id=parent,
                )
            )
            if args:
                text = args if isinstance(args, str) else json.dumps(args)
                out.append(ToolCallArgsEvent(type=EventType.TOOL_CALL_ARGS, tool_call_id=call_id, delta=text))
            out.append(ToolCallEndEvent(type=EventType.TOOL_CALL_END, tool_call_id=call_id))
            return out
        if kind == "tool_result":
            call_id = str(data.get("call_id", ""))
            return [
                *self.close(),
                ToolCallResultEvent(
                    type=EventType.TOOL_CALL_RESULT,
                    message_id=f"{self.workflow_id}:result:{call_id}",
                    tool_call_id=call_id,
                    content=str(data.get("content", "")),
                    role="tool",
                ),
            ]
        if kind == "finish":
            return self.close()
        return []

    def close(self) -> list[BaseEvent]:
        if self._open is None:
            return []
        message_id, self._open = self._open, None
        return [TextMessageEndEvent(type=EventType.TEXT_MESSAGE_END, message_id=message_id)]


async def _until_settled(
    client: Client, workflow_id: str, start: int, settle: asyncio.Future[SessionView], translator: Translator
) -> AsyncIterator[BaseEvent]:
    """The stream's items from `start` as AG-UI events, until the turn has settled and every item
    published before it has come."""
    queue: asyncio.Queue[StreamItem] = asyncio.Queue()

    async def read() -> None:
        async for item in follow(client, workflow_id, start):
            queue.put_nowait(item)

    reader = asyncio.ensure_future(read())
    end: int | None = None
    seen = start
    try:
        while end is None or seen < end:
            getter = asyncio.ensure_future(queue.get())
            waits: set[asyncio.Future[Any]] = {getter, reader} | ({settle} if end is None else set())
            done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            if getter in done:
                item = getter.result()
                seen = item.offset + 1
                for event in translator.events(item):
                    yield event
                continue
            getter.cancel()
            if settle in done and end is None:
                settle.result()  # its failure is the request's
                end = await _offset(client, workflow_id) or 0
                continue
            if reader in done:  # the run closed and its stream was read to the end
                reader.result()
                if end is None:
                    await settle
                break
        for event in translator.close():
            yield event
    finally:
        reader.cancel()
        with contextlib.suppress(BaseException):
            await reader


async def _settled(handle: Any) -> SessionView:
    """The session once its turn is not running (a decision was taken; the turn goes on)."""
    while True:
        view = await run_client.session(handle)
        if view.status != TURN_RUNNING:
            return view
        await asyncio.sleep(SETTLE_POLL)


async def _offset(client: Client, workflow_id: str) -> int | None:
    """The stream's next offset; None when the thread has no session yet."""
    try:
        return await stream_offset(client, workflow_id)
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            return None
        raise CommandError(f"{workflow_id}: {exc.message}") from None
    except Exception as exc:  # a query the run could not answer (a closed run's worker gone, say)
        raise CommandError(f"{workflow_id}: its stream cannot be read: {exc}") from None


async def _user_messages(handle: Any) -> int:
    return sum(m.role == "user" for m in await run_client.transcript(handle))


def _last_user_text(given: RunAgentInput) -> tuple[str | None, int]:
    users = [m for m in given.messages if m.role == "user"]
    if not users:
        return None, 0
    content = users[-1].content
    if isinstance(content, str):
        return content, len(users)
    parts = [getattr(part, "text", None) for part in content]
    text = "".join(p for p in parts if isinstance(p, str))
    if not text:
        raise TurnRefused("the last user message has no text (only text is taken)")
    return text, len(users)


def _interrupt(request: ToolApprovalRequest) -> Interrupt:
    return Interrupt(
        id=request.call_id,
        reason="tool_approval",
        message=f"{request.name} waits for approval" + (f": {request.description}" if request.description else ""),
        tool_call_id=request.call_id,
        response_schema=RESPONSE_SCHEMA,
        expires_at=request.expires_at.isoformat() if request.expires_at else None,
        metadata={
            "tool": request.name,
            "arguments": request.arguments,
            "arguments_digest": request.arguments_digest,
            "quorum": request.policy.quorum,
        },
    )


def _snapshot(messages: list[ChatMessage]) -> list[Any]:
    """The session's transcript as AG-UI messages (ids by position)."""
    out: list[Any] = []
    for i, message in enumerate(messages):
        mid = f"m{i}"
        if message.role == "user":
            out.append(UserMessage(id=mid, role="user", content=message.content or ""))
        elif message.role == "assistant":
            calls = [
                AgUiToolCall(id=c.id, type="function", function=FunctionCall(name=c.name, arguments=c.arguments))
                for c in message.tool_calls or []
            ]
            out.append(AssistantMessage(id=mid, role="assistant", content=message.content, tool_calls=calls or None))
        elif message.role == "tool":
            out.append(
                ToolMessage(id=mid, role="tool", content=message.content or "", tool_call_id=message.tool_call_id or "")
            )
    return out


def _first_error(exc: ValidationError) -> str:
    error = exc.errors(include_url=False)[0]
    return f"{'.'.join(str(p) for p in error['loc']) or 'input'}: {error['msg']}"
