"""One real worker, one scripted model server, many generated runs: what each fuzz case checks.

A `Harness` owns an event loop in a thread of its own with a Temporal client, one worker
(the fuzz agent, `agent.py`) and one scripted model server answering every run from its
case. A case (`strategies.Case`) starts a run, sends its decisions while the run waits,
then denies whatever still waits (as an allowed approver) until the run closes, and
checks the promise "every run either finishes or fails clearly":

- the run's history has no `WorkflowTaskFailed` (none retried, none wedged);
- it closed within a deadline: completed, or failed with a non-retryable application
  error of a kind the contract names (`InvalidInput`, `PayloadTooLarge`); a
  `ProviderError` means the transcript broke OpenAI's rules (the scripted server is strict);
- its queries answer while it waits and once it has closed (the last by replaying the
  whole history on the worker: a determinism check too);
- every update it refused was refused non-retryably, without a traceback;
- no model turn was requested twice (a retried chat activity is another paid request);
- in its result, every tool call of an assistant message has exactly one tool message, in order.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import shutil
import tempfile
import threading
import uuid
from collections import Counter
from collections.abc import Coroutine
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import WorkflowTaskFailedCause
from temporalio.client import (
    Client,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.common import RawValue
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import ApplicationError
from temporalio.runtime import LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from signoff.approval.identity import ApproverKeys
from signoff.chat.config import LLMConfig
from signoff.chat.openai import OpenAIChatClient
from signoff.contract import AgentRunInput, AgentRunResult
from signoff.messages import ChatMessage, ToolCall
from signoff.runtime.settings import WorkerSettings
from signoff.runtime.storage import PayloadStore, close_storage, data_converter
from signoff.runtime.worker import build_worker
from signoff.testing import Reply, ScriptedModelServer, ScriptedRequest
from tests.approver_keys import signed
from tests.fuzz.agent import AGENT, fuzz_agent
from tests.fuzz.strategies import Case, Deciding, Raw, Resumed, Send, Turn

T = TypeVar("T")
CASE_SECONDS = 60.0
"""The most one case may take: a run still open after it counts as wedged."""
ALLOWED_FAILURES = frozenset({"InvalidInput", "PayloadTooLarge", "UnknownAgent"})
UPDATES = {"update": "submit_tool_approval", "extend": "extend_deadline", "revoke": "revoke_grant"}
CONTINUE_AS_NEW_EVENTS = 40
UNHANDLED_COMMAND = WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND
PAYLOAD_THRESHOLD = 4096
FINISH = {"call_id": "*", "approved": False, "approver": "alice", "reason": "fuzz: the case is over"}
SECRET = "fuzz-approver-secret-of-at-least-32-bytes!"


class Finding(AssertionError):
    """A case broke the promise; the message says how."""


@dataclass
class Seen:
    """What one case's run did, for its checks."""

    rounds: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    checked: float = 0.0


class Harness:
    """A dev server, a worker, a model server and a client, in an event loop of their own (see the module).

    The dev server suggests continue-as-new early (`CONTINUE_AS_NEW_EVENTS`), so runs carry their state
    across it mid-case; worker and client keep payloads of `PAYLOAD_THRESHOLD` bytes or more in a file
    store, so large answers, inputs and carried state go through it (and forged references meet it).
    """

    def __init__(self, max_cached_workflows: int | None = None, save_to: Path | None = None) -> None:
        """`max_cached_workflows`: the worker's cache (0: every workflow task replays the whole
        history, so a live run that differs from its replay fails a task at once); `save_to`:
        where the histories of a finding's chain are written (`<workflow id>/<run id>.json`)."""
        self._max_cached_workflows = max_cached_workflows
        self._save_to = save_to
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fuzz-harness", daemon=True)
        self._thread.start()
        self._workspace = tempfile.TemporaryDirectory(prefix="signoff-fuzz-")
        self._answers: dict[str, list[Reply]] = {}
        self._seen: dict[str, Seen] = {}
        self._lock = threading.Lock()
        self._numbers = itertools.count(1)
        self.task_queue = f"fuzz-{uuid.uuid4().hex[:8]}"
        self.cases = 0
        self.tally: Counter[str] = Counter()
        """What the cases did: how runs ended, how many waited, decisions sent by each way."""
        self._call(self._start())

    def _call(self, coroutine: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        future: Future[T] = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        return future.result(timeout)

    async def _start(self) -> None:
        self._env = await _dev_server()
        store = PayloadStore((Path(self._workspace.name) / "payloads").as_uri(), PAYLOAD_THRESHOLD)
        self.client = await Client.connect(
            self._env.client.service_client.config.target_host,
            data_converter=data_converter(store),
            runtime=_quiet_runtime(),
        )
        self._model = ScriptedModelServer(self._script).start()
        config = LLMConfig(base_url=self._model.base_url, model="scripted")
        (workspace := Path(self._workspace.name) / "workspace").mkdir()
        self.key_file = Path(self._workspace.name) / "approver.key"
        self.key_file.write_text(SECRET)
        self.key_file.chmod(0o600)  # a secret is its owner's alone, or no worker reads it
        agents = {AGENT: fuzz_agent(workspace)}
        self._worker = build_worker(
            self.client,
            agents,
            self.task_queue,
            default_client=lambda: OpenAIChatClient(config),
            settings=WorkerSettings(verifier=ApproverKeys.load(self.key_file)),
            **({} if self._max_cached_workflows is None else {"max_cached_workflows": self._max_cached_workflows}),
        )
        self._running = asyncio.ensure_future(self._worker.run())

    def close(self) -> None:
        self._call(self._stop(), 60)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._workspace.cleanup()

    async def _stop(self) -> None:
        await self._worker.shutdown()
        await asyncio.gather(self._running, return_exceptions=True)
        self._model.stop()
        await close_storage(self.client.data_converter)
        await self._env.shutdown()

    # --- the model -----------------------------------------------------------------------

    def _script(self, request: ScriptedRequest) -> Reply:
        prompt = next((m.content or "" for m in request.messages if m.role == "user"), "")
        with self._lock:
            answers = self._answers.get(prompt, [])
            seen = self._seen.setdefault(prompt, Seen())
            seen.rounds.append(request.round)
        return answers[request.round - 1] if request.round <= len(answers) else Reply.text("done")

    # --- a case ----------------------------------------------------------------------------

    def run(self, case: Case) -> None:
        """Run one case; Finding when the run broke the promise."""
        self.cases += 1
        self._call(asyncio.wait_for(self._case(case), CASE_SECONDS + 30), CASE_SECONDS + 60)

    async def _case(self, case: Case) -> None:
        prompt = f"fuzz case {next(self._numbers)}"
        self.tally[f"start: {type(case.start).__name__}"] += 1
        with self._lock:
            self._answers[prompt] = [_reply(turn) for turn in case.turns]
        seen = self._seen.setdefault(prompt, Seen())
        try:
            handle = await self.client.start_workflow(
                "AgentRun",
                _start_input(case.start, prompt),
                id=f"{prompt.replace(' ', '-')}-{uuid.uuid4().hex[:6]}",
                task_queue=self.task_queue,
            )
        except RPCError:  # the server refused the start itself (a payload over its limit): no run to check
            return
        result = asyncio.ensure_future(handle.result())
        try:
            for send in case.sends:
                if not await self._waiting(handle, result, seen):
                    break
                self.tally[f"sent by {send.via}"] += 1
                await self._send(handle, send, seen)
            await self._finish(handle, result, seen)
            await self._check(handle, result, seen)
        except Finding:
            await self._save(handle)
            raise
        finally:
            result.cancel()
            with self._lock:
                self._answers.pop(prompt, None)
                self._seen.pop(prompt, None)

    async def _save(self, handle: WorkflowHandle[Any, Any]) -> None:
        """Write the histories of `handle`'s chain, and the payloads they reference, under `save_to`."""
        if self._save_to is None:
            return
        out = self._save_to / handle.id
        out.mkdir(parents=True, exist_ok=True)
        run_id = handle.first_execution_run_id or handle.run_id
        while run_id:
            history = await self.client.get_workflow_handle(handle.id, run_id=run_id).fetch_history()
            (out / f"{run_id}.json").write_text(history.to_json())
            run_id = next(
                (
                    e.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
                    for e in history.events
                    if e.HasField("workflow_execution_continued_as_new_event_attributes")
                ),
                None,
            )
        payloads = Path(self._workspace.name) / "payloads"
        if payloads.is_dir():
            shutil.copytree(payloads, out / "payloads", dirs_exist_ok=True)
        print(f"histories of {handle.id}: {out} (payload store: {(out / 'payloads').as_uri()})", flush=True)

    async def _waiting(self, handle: WorkflowHandle[Any, Any], result: asyncio.Future[Any], seen: Seen) -> bool:
        """Wait until the run waits for a decision (True) or has closed (False)."""
        deadline = self._loop.time() + 10
        while not result.done() and self._loop.time() < deadline:
            status = await self._query(handle, "status", seen)
            if isinstance(status, dict) and status.get("pending"):
                return True
            await self._not_wedged(handle, seen)
            await asyncio.wait({result}, timeout=0.02)
        return not result.done()

    async def _not_wedged(self, handle: WorkflowHandle[Any, Any], seen: Seen) -> None:
        """Finding as soon as the run's workflow task has failed (checked at most once a second)."""
        if self._loop.time() - seen.checked < 1:
            return
        seen.checked = self._loop.time()
        if failures := await _task_failures(self.client, handle):
            raise Finding(f"workflow task failed {len(failures)} time(s): {failures[0][:500]}")

    async def _query(self, handle: WorkflowHandle[Any, Any], name: str, seen: Seen) -> Any:
        try:
            return await handle.query(name, rpc_timeout=_seconds(10))
        except (RPCError, ValueError) as exc:  # a worker busy under load may time out; a failing task shows below
            seen.problems.append(f"query {name} failed: {exc}")
            return None

    async def _send(self, handle: WorkflowHandle[Any, Any], send: Send, seen: Seen) -> None:
        pending = await self._query(handle, "pending_approvals", seen)
        if not isinstance(pending, list):
            seen.checked = 0.0
            await self._not_wedged(handle, seen)
            raise Finding(f"pending_approvals answered {pending!r}, not a list ({seen.problems[-1:]})")
        payload = _payload(send.payload, pending, self.key_file)
        if send.copies > 1:
            payload = [payload] * send.copies
        arg = _sendable(payload)
        try:
            if send.via == "signal":
                await handle.signal("tool_approval", arg)
                return
            await handle.execute_update(UPDATES[send.via], arg, rpc_timeout=_seconds(15))
        except WorkflowUpdateFailedError as exc:
            _check_refusal(exc)
            self.tally["updates refused"] += 1
        except WorkflowUpdateRPCTimeoutOrCancelledError:
            seen.problems.append(f"update {send.via} was not answered within 15 s")
        except RPCError as exc:  # e.g. a payload over the server's limit: refused before the run saw it
            seen.problems.append(f"{send.via}: {exc.message[:200]}")

    async def _finish(self, handle: WorkflowHandle[Any, Any], result: asyncio.Future[Any], seen: Seen) -> None:
        """Deny whatever waits, as an allowed approver, until the run closes (or the case's time is up)."""
        deadline = self._loop.time() + CASE_SECONDS
        while not result.done():
            if self._loop.time() > deadline:
                failures = await _task_failures(self.client, handle)
                raise Finding(
                    f"the run did not close within {CASE_SECONDS:.0f} s; workflow task failures: "
                    f"{failures[:3]}; other problems: {seen.problems[:5]}"
                )
            pending = await self._query(handle, "pending_approvals", seen)
            if pending:
                await handle.signal("tool_approval", _denials(pending, self.key_file))
            await self._not_wedged(handle, seen)
            await asyncio.wait({result}, timeout=0.05 if pending is None else 0.02)

    async def _check(self, handle: WorkflowHandle[Any, Any], result: asyncio.Future[Any], seen: Seen) -> None:
        runs: list[str] = []
        failures = await _task_failures(self.client, handle, runs)
        self.tally[f"runs in the chain: {len(runs)}"] += 1
        if failures:
            raise Finding(f"workflow task failed {len(failures)} time(s): {failures[0][:500]}")
        error = result.exception()
        if error is None:
            done = AgentRunResult.model_validate(result.result())
            _check_transcript(done)
            self.tally[f"finished {done.finish_reason.value}"] += 1
            self.tally["decided calls"] += len(done.approvals)
            self.tally["decided calls, verified"] += sum(a.verified for a in done.approvals)
        elif isinstance(error, WorkflowFailureError):
            cause = error.cause
            kind = cause.type if isinstance(cause, ApplicationError) else type(cause).__name__
            self.tally[f"failed {kind}"] += 1
            if not isinstance(cause, ApplicationError) or not cause.non_retryable or kind not in ALLOWED_FAILURES:
                raise Finding(f"the run failed unclearly: {kind}: {cause}")
        else:
            raise Finding(f"the run's result could not be read: {type(error).__name__}: {error}")
        closed = await handle.query("pending_approvals", rpc_timeout=_seconds(30))  # replays the whole history
        if closed != []:
            raise Finding(f"a closed run answered pending_approvals with {closed!r}")
        retried = sorted({r for r in seen.rounds if seen.rounds.count(r) > 1})
        if retried:
            raise Finding(f"model turn(s) {retried} requested more than once: the chat activity was retried")


# --- building what is sent ------------------------------------------------------------------


def _reply(turn: Turn) -> Reply:
    calls = tuple(ToolCall(id=c.id, name=c.name, arguments=c.arguments) for c in turn.calls)
    return Reply(content=turn.content, calls=calls, chunks=turn.chunks, finish_reason=turn.finish)


def _start_input(start: Any, prompt: str) -> Any:
    """The generated start input (JSON or raw, or a transcript to resume), or a normal one for this case's prompt."""
    if start is None:
        return AgentRunInput(agent=AGENT, prompt=prompt)
    if isinstance(start, Resumed):
        calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in start.calls]
        answers = [{"role": "tool", "content": "an earlier answer", "tool_call_id": i} for i in start.answered]
        messages = [{"role": "user", "content": prompt}, {"role": "assistant", "tool_calls": calls}, *answers]
        options = {**start.options, "tool_approval_responses": list(start.responses)}
        return _sendable({"agent": AGENT, "messages": messages, "options": options})
    return _sendable(start)


def _payload(payload: Any, pending: list[dict[str, Any]], key_file: Path) -> Any:
    """A decision filled in for the calls pending now (by position, with their digest, signed when
    asked), or as generated."""
    if isinstance(payload, list):
        return [_payload(item, pending, key_file) for item in payload]
    if not isinstance(payload, Deciding):
        return payload
    target = pending[payload.target % len(pending)] if pending and payload.target is not None else None
    if target and payload.signed:
        return signed(key_file, target, "alice", approved=payload.approved)
    decision: dict[str, Any] = {"call_id": target["call_id"] if target else "*", "approved": payload.approved}
    decision.update(payload.fields)
    if target and payload.digest != "none":
        decision["arguments_digest"] = target["arguments_digest"] if payload.digest == "right" else "0" * 64
    return decision


def _denials(pending: list[dict[str, Any]], key_file: Path) -> Any:
    """What ends a case's wait: `*` denied by alice, or (a verified call waits) each call denied, signed."""
    if not any(p.get("policy", {}).get("verified") for p in pending):
        return FINISH
    return [
        signed(key_file, p, "alice", approved=False)
        if p["policy"].get("verified")
        else {"call_id": p["call_id"], "approved": False, "approver": "alice"}
        for p in pending
    ]


def _sendable(payload: Any) -> Any:
    """`payload` as the client sends it; JSON that pydantic cannot encode (a lone surrogate) goes as
    the raw JSON text a client in another language could send."""
    if isinstance(payload, Raw):
        return RawValue(Payload(metadata=payload.metadata, data=payload.data))
    try:
        pydantic_data_converter.payload_converter.to_payloads([payload])
    except Exception:
        text = json.dumps(payload, allow_nan=True, default=str).encode()
        return RawValue(Payload(metadata={"encoding": b"json/plain"}, data=text))
    return payload


def _check_refusal(exc: WorkflowUpdateFailedError) -> None:
    cause = exc.cause
    if not isinstance(cause, ApplicationError) or not cause.non_retryable:
        raise Finding(f"an update was refused retryably: {type(cause).__name__}: {cause}")
    if cause.failure is not None and cause.failure.stack_trace:
        raise Finding(f"an update refusal carries a traceback: {cause.failure.stack_trace[:300]}")


def _check_transcript(result: AgentRunResult) -> None:
    """Each assistant message's calls are answered by one tool message each, right after it, in order."""
    messages: list[ChatMessage] = result.messages
    for index, message in enumerate(messages):
        if message.role != "assistant" or not message.tool_calls:
            continue
        answers = [m.tool_call_id for m in messages[index + 1 : index + 1 + len(message.tool_calls)]]
        if answers != [c.id for c in message.tool_calls]:
            raise Finding(f"message {index}'s calls are answered {answers[:5]}..., not in their order")
        if len({c.id for c in message.tool_calls}) != len(message.tool_calls):
            raise Finding(f"message {index} has two calls with one id")


async def _task_failures(client: Client, handle: WorkflowHandle[Any, Any], runs: list[str] | None = None) -> list[str]:
    """The WorkflowTaskFailed messages of every run of the chain, following continue-as-new
    (`runs`, if given, gets each run's id).

    Not counted: a task the *server* failed because a signal arrived while the workflow was
    completing or continuing as new (cause UNHANDLED_COMMAND). That is Temporal keeping the
    signal: the task runs again with it, at once; the workflow's code did not fail."""
    failures: list[str] = []
    run_id: str | None = handle.first_execution_run_id or handle.run_id
    while run_id:
        if runs is not None:
            runs.append(run_id)
        current, run_id = run_id, None
        async for event in client.get_workflow_handle(handle.id, run_id=current).fetch_history_events():
            failed = event.workflow_task_failed_event_attributes
            if event.HasField("workflow_task_failed_event_attributes") and failed.cause != UNHANDLED_COMMAND:
                failures.append(failed.failure.message)
            if event.HasField("workflow_execution_continued_as_new_event_attributes"):
                run_id = event.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
    return failures


async def _dev_server() -> WorkflowEnvironment:
    from tests.conftest import start_dev_server

    early = f"limit.historyCount.suggestContinueAsNew={CONTINUE_AS_NEW_EVENTS}"
    return await start_dev_server("--log-level", "error", "--dynamic-config-value", early)


def _quiet_runtime() -> Runtime:
    """A runtime whose core logs only errors: a fuzz run's thousands of refused inputs are not news."""
    quiet = TelemetryFilter(core_level="ERROR", other_level="ERROR")
    return Runtime(telemetry=TelemetryConfig(logging=LoggingConfig(filter=quiet)))


def _seconds(value: float) -> timedelta:
    return timedelta(seconds=value)
