"""Would these runs resume on the installed code? Replaying saved histories.

A history (JSON from `temporal workflow show -o json`, the Web UI's download, or
`WorkflowHistory.to_json()`) is replayed with Temporal's `Replayer` against the installed
`AgentRun`, with the worker's own sandbox and data converter (the payload store and the
codec keys of this process's environment), so a history saved from an encrypted
namespace or one whose large payloads live in a store replays as a worker would see it.
Each run gets one `ReplayOutcome`:

- `resumes`: the installed code issues the commands the history recorded, so a worker
  of this code would take the run up where it stopped (a parked run: at its wait);
- `would not resume`: it issues other commands (a nondeterminism error), or fails the
  workflow task; said in plain words, with the event where it parts from the history;
- `cannot be checked`: the history holds payloads this process cannot read (no codec
  key for them, no payload store), so nothing was replayed; says what is missing.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import os
import re
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from google.protobuf.message import Message
from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowHistory
from temporalio.converter import DataConverter
from temporalio.runtime import LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter
from temporalio.worker import (
    ExecuteWorkflowInput,
    HandleSignalInput,
    Interceptor,
    Replayer,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)

from signoff.config.environment import Environment
from signoff.contract import SAME_STORE, WORKFLOW_TYPE
from signoff.errors import SignoffError, UsageError
from signoff.runtime.codec import ENCODING, KEY_ID, CodecKeys, EncryptionCodec
from signoff.runtime.guard import NO_STORE_DRIVER, guarded
from signoff.runtime.storage import PayloadStore, data_converter, storage_problem
from signoff.runtime.worker import sandbox_runner
from signoff.workflows.agent_run import AgentRun

_REFERENCE_TYPE = b"temporal.api.sdk.v1.ExternalStorageReference"
_REFERENCE_ENCODINGS = (b"json/external-storage-reference",)
_CLIENT_WRITTEN = {  # events whose payloads a client wrote; a worker writes the others
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ADMITTED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
}
_CODE_DOES = {  # sdk-core's state machine names, as what the installed code does instead
    "Activity": "schedules an activity",
    "Timer": "starts a timer",
    "Fail workflow": "fails the run",
    "Complete workflow": "completes the run",
    "Continue as new workflow": "continues as new",
    "Cancel workflow": "finishes the run as cancelled",
    "Local activity": "runs a local activity",
    "Change": "records a patch marker",
    "Update": "answers an update",
    "Signal external WF": "signals another workflow",
    "Cancel external WF": "cancels another workflow",
    "Child workflow": "starts a child workflow",
}
_MACHINE = re.compile(r"([A-Z][A-Za-z ]+?) machine (?:does not|cannot) handle this event: HistoryEvent\(id: (\d+)")
_NO_COMMAND = re.compile(r"No command scheduled for event HistoryEvent\(id: (\d+)")
_MISMATCH = re.compile(
    r"Activity (type|id) of (?:scheduled event|recorded marker) '([^']*)' does not\s+match "
    r"activity \1 of (?:local )?activity command '([^']*)'"
)
_LOCAL_ACTIVITY = re.compile(r"Missing associated machine for LocalActivity")
_PATCH = re.compile(r"patch marker encountered for change (\S+), but there is no corresponding change command")
_UNREADABLE_TYPE = re.compile(r'r#type: "(PayloadStoreError|PayloadDecryptError|UnresolvablePayload)"')
_EVENT_ID = re.compile(r"HistoryEvent\(id: (\d+)")
_CHANGED = (
    "The workflow code changed since this run started in a way that changes what it does at that point. "
    "Guard such a change with workflow.patched(...), or keep workers of the old code for runs like this "
    "one (docs/deploys.md: Deploys and parked runs)."
)


class ReplayVerdict(str, Enum):
    """What the replay says about one run."""

    RESUMES = "resumes"
    DIVERGES = "would not resume"
    UNREADABLE = "cannot be checked"


@dataclass(frozen=True)
class ReplayOutcome:
    """One saved run, replayed.

    Attributes:
        source: the file it came from, or `workflow-id/run-id` when fetched.
        workflow_id, run_id, events: which run, and how many events were replayed.
        verdict: resumes, would not resume, or cannot be checked.
        reason: why not, in plain words (None when it resumes).
        event_id: the event where the installed code parts from the history, if known.
        error: the SDK's own message, for the record.
        command: a command that shows the event or the whole error.
    """

    source: str
    workflow_id: str
    run_id: str
    events: int
    verdict: ReplayVerdict
    reason: str | None = None
    event_id: int | None = None
    error: str | None = None
    command: str | None = None

    @property
    def resumes(self) -> bool:
        return self.verdict is ReplayVerdict.RESUMES

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "verdict": self.verdict.value}


class HistoryReplayError(SignoffError, AssertionError):
    """Some histories would not resume, or could not be checked; `outcomes` holds them all."""

    def __init__(self, outcomes: Sequence[ReplayOutcome]) -> None:
        self.outcomes = list(outcomes)
        bad = [o for o in outcomes if not o.resumes]
        lines = [f"{len(bad)} of {len(outcomes)} histories would not resume on the installed code:"]
        lines += [f"- {o.source} ({o.verdict.value}): {o.reason}" for o in bad]
        super().__init__("\n".join(lines))


class HistoryFileError(UsageError):
    """A file is not a workflow history (not JSON, no events, not starting with the start)."""


def load_history(path: str | os.PathLike[str]) -> WorkflowHistory:
    """A history from a JSON file; its workflow id from the start event (else the file's name).

    Raises:
        HistoryFileError: naming the file and what is wrong with it.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise HistoryFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise HistoryFileError(
            f"{path} is not JSON ({exc}); save a history with "
            "`temporal workflow show --workflow-id ID --output json > FILE`"
        ) from None
    try:
        history = WorkflowHistory.from_json(path.stem, data)
        started = history.events[0].workflow_execution_started_event_attributes if history.events else None
    except Exception as exc:  # the SDK's parser: a JSON that is not a history
        raise HistoryFileError(f"{path} is not a workflow history: {exc}") from None
    if started is None or not history.events[0].HasField("workflow_execution_started_event_attributes"):
        raise HistoryFileError(
            f"{path} is not a workflow history from its start (its first event must be WorkflowExecutionStarted)"
        )
    return WorkflowHistory(workflow_id=started.workflow_id or path.stem, events=history.events)


def as_its_own_run(history: WorkflowHistory) -> WorkflowHistory:
    """`history` as its own run replays it: a run made by `temporal workflow reset` replays
    with its own run id.

    Temporal's `Replayer` gives a run the id its start event names as the original
    execution's, and a reset run's start event is its first run's, copied; a worker gives it
    its own, which the last reset's failed workflow task names (`new_run_id`). What the run
    draws from its run id (`signoff.workflows.instances`) must replay as it ran."""
    own = next(
        (
            e.workflow_task_failed_event_attributes.new_run_id
            for e in reversed(history.events)
            if e.workflow_task_failed_event_attributes.cause
            == WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW
            and e.workflow_task_failed_event_attributes.new_run_id
        ),
        None,
    )
    if not history.events or own is None or own == history.run_id:
        return history
    first = HistoryEvent()
    first.CopyFrom(history.events[0])
    first.workflow_execution_started_event_attributes.original_execution_run_id = own
    return WorkflowHistory(workflow_id=history.workflow_id, events=[first, *history.events[1:]])


def replay_data_converter(store: PayloadStore | None, keys: CodecKeys | None) -> DataConverter:
    """The data converter of a worker with these settings: its codec lenient, and a payload that is no
    reference at all (a forged signal) read as the worker reads it (`runtime/guard.py`); a reference
    this process cannot resolve says which store it lacks."""
    return guarded(data_converter(store, EncryptionCodec(keys, strict=False) if keys else None), replaying=True)


@dataclass
class HistoryReplayer:
    """Replays histories against `workflows` (the installed `AgentRun`) as a worker would.

    Args:
        converter: the worker's data converter (`replay_data_converter`).
        keys: the codec keys in `converter`, to say which a history needs and lacks.
        workflows: the workflow classes; a test may pass a variant named `AgentRun`.
        show_command: how to show a run's history ("file" or "server" form).
    """

    converter: DataConverter
    keys: CodecKeys | None = None
    workflows: Sequence[type] = (AgentRun,)
    _failures: dict[str, str] = field(default_factory=dict)

    async def replay(self, histories: Iterable[tuple[str, WorkflowHistory]]) -> AsyncIterator[ReplayOutcome]:
        """One outcome per `(source, history)`, in order."""
        pending = [(source, as_its_own_run(history)) for source, history in histories]
        checkable = [
            i for i, (_, h) in enumerate(pending) if _workflow_type(h) == WORKFLOW_TYPE and self._unreadable(h) is None
        ]
        replayed = self._replayer().workflow_replay_iterator(_aiter(pending[i][1] for i in checkable))
        with _sdk_logs_quiet():  # a failing replay is an outcome here, not a traceback on stderr
            async with replayed as results:
                for i, (source, history) in enumerate(pending):
                    if i not in checkable:
                        yield self._skipped(source, history)
                        continue
                    result = await anext(results)
                    yield self._outcome(source, history, result.replay_failure)

    def _replayer(self) -> Replayer:
        quiet = Runtime(
            telemetry=TelemetryConfig(
                logging=LoggingConfig(filter=TelemetryFilter(core_level="ERROR", other_level="ERROR"))
            )
        )
        return Replayer(
            workflows=list(self.workflows),
            workflow_runner=sandbox_runner(),
            data_converter=self.converter,
            interceptors=[_Witness(self._failures)],
            runtime=quiet,
        )

    def _skipped(self, source: str, history: WorkflowHistory) -> ReplayOutcome:
        kind = _workflow_type(history)
        reason = (
            self._unreadable(history)
            if kind == WORKFLOW_TYPE
            else (f"it is a history of {kind!r}, not of {WORKFLOW_TYPE!r}")
        )
        return _outcome(source, history, ReplayVerdict.UNREADABLE, reason=reason)

    def _unreadable(self, history: WorkflowHistory) -> str | None:
        """What this process lacks to read the history's payloads, or None."""
        needed: set[str] = set()
        drivers: set[str] = set()
        for event in history.events:
            for payload in _payloads(event):
                if payload.metadata.get("encoding") == ENCODING and event.event_type not in _CLIENT_WRITTEN:
                    needed.add(payload.metadata.get(KEY_ID, b"").decode("utf-8", "replace"))
                if _is_reference(payload):
                    drivers.add(_driver(payload))
        held = {kid for kid, _ in self.keys.keys} if self.keys else set()
        if needed - held:
            have = f"it holds {', '.join(sorted(held))}" if held else "SIGNOFF_CODEC_KEYS is not set"
            return (
                f"its payloads are encrypted with the key(s) {', '.join(sorted(needed - held))}, which this "
                f"process does not have ({have}): set SIGNOFF_CODEC_KEYS to the workers' key file"
            )
        if drivers and not _has_store(self.converter):
            return (
                f"some of its payloads are kept in an external payload store ({', '.join(sorted(drivers))}), "
                "and this process has none: set SIGNOFF_PAYLOAD_STORE as the workers have it"
            )
        return None

    def _outcome(self, source: str, history: WorkflowHistory, failure: Exception | None) -> ReplayOutcome:
        if failure is None:
            return _outcome(source, history, ReplayVerdict.RESUMES)
        message = str(failure)
        problem = storage_problem(failure) or self._store_problem(message)
        if problem is not None:
            return _outcome(source, history, ReplayVerdict.UNREADABLE, reason=problem, error=message)
        event_id, words = plain_words(message, history)
        raised = self._failures.pop(history.run_id, None)
        if raised:
            words += f" ({raised})"
        if isinstance(failure, workflow.NondeterminismError):
            words += ". " + _CHANGED
        return _outcome(source, history, ReplayVerdict.DIVERGES, reason=words, error=message, event_id=event_id)

    def _store_problem(self, message: str) -> str | None:
        """A stored or encrypted payload the replay could not read (the failure may be encoded)."""
        if SAME_STORE in message:
            return message
        if not _UNREADABLE_TYPE.search(message):
            return None
        storage = self.converter.external_storage
        where = ", ".join(getattr(d, "url", d.name()) for d in storage.drivers) if storage else "none"
        return (
            f"a payload of this history cannot be read: it is not in this process's payload store ({where}), "
            f"or it does not decrypt with its keys. {SAME_STORE}, and the same SIGNOFF_CODEC_KEYS"
        )


def plain_words(message: str, history: WorkflowHistory) -> tuple[int | None, str]:
    """(event id, what happened) for a replay failure's message from the SDK."""
    events = {e.event_id: e for e in history.events}
    if m := _MACHINE.search(message):
        event_id = int(m.group(2))
        does = _CODE_DOES.get(m.group(1), f"issues a {m.group(1).lower()} command")
        return (
            event_id,
            f"where the history records {event_label(events.get(event_id), event_id)}, the installed code {does}",
        )
    if m := _NO_COMMAND.search(message):
        event_id = int(m.group(1))
        return (
            event_id,
            f"the history records {event_label(events.get(event_id), event_id)}, which the installed "
            "code never issues (it does less there, or waits where the run went on)",
        )
    if m := _MISMATCH.search(message):
        what, recorded, now = m.groups()
        kind = "scheduled the activity" if what == "type" else "scheduled activity number"
        return None, f"the history {kind} {recorded!r} where the installed code schedules {now!r}"
    if _LOCAL_ACTIVITY.search(message):
        return None, "the history holds the result of a local activity (a marker) that the installed code never runs"
    if m := _PATCH.search(message):
        return None, (
            f"the history has the patch marker {m.group(1)}, but the installed code no longer calls "
            f"workflow.patched({m.group(1)}) there (retire a patch with workflow.deprecate_patch first)"
        )
    found = _EVENT_ID.search(message)
    first = message.strip().splitlines()[0] if message.strip() else "no message"
    return (int(found.group(1)) if found else None), f"the installed code fails the workflow task: {first[:500]}"


def event_label(event: HistoryEvent | None, event_id: int) -> str:
    """`event 11 (ActivityTaskScheduled: signoff.tool)`."""
    if event is None:
        return f"event {event_id}"
    name = "".join(p.title() for p in EventType.Name(event.event_type).removeprefix("EVENT_TYPE_").split("_"))
    detail = ""
    if event.HasField("activity_task_scheduled_event_attributes"):
        detail = f": {event.activity_task_scheduled_event_attributes.activity_type.name}"
    elif event.HasField("marker_recorded_event_attributes"):
        detail = f": {event.marker_recorded_event_attributes.marker_name}"
    elif event.HasField("workflow_execution_signaled_event_attributes"):
        detail = f": {event.workflow_execution_signaled_event_attributes.signal_name}"
    return f"event {event_id} ({name}{detail})"


def _outcome(source: str, history: WorkflowHistory, verdict: ReplayVerdict, **details: Any) -> ReplayOutcome:
    return ReplayOutcome(
        source=source,
        workflow_id=history.workflow_id,
        run_id=_run_id(history),
        events=len(history.events),
        verdict=verdict,
        **details,
    )


def _run_id(history: WorkflowHistory) -> str:
    try:
        return history.run_id
    except RuntimeError:
        return ""


def _workflow_type(history: WorkflowHistory) -> str:
    return history.events[0].workflow_execution_started_event_attributes.workflow_type.name


def _payloads(message: Message) -> Iterator[Payload]:
    """Every `Payload` inside a history event (payload lists, maps, failures, metadata)."""
    if isinstance(message, Payload):
        yield message
        return
    for descriptor, value in message.ListFields():
        if descriptor.message_type is None:
            continue
        if descriptor.message_type.GetOptions().map_entry:
            values = value.values()
        elif isinstance(value, Message):
            values = [value]
        else:  # a repeated field
            values = value
        for item in values:
            if isinstance(item, Message):
                yield from _payloads(item)


def _has_store(converter: DataConverter) -> bool:
    """Whether `converter` reads from a payload store (a worker without one has only the guard's no-store driver)."""
    storage = converter.external_storage
    return storage is not None and any(driver.name() != NO_STORE_DRIVER for driver in storage.drivers)


def _is_reference(payload: Payload) -> bool:
    encoding = payload.metadata.get("encoding", b"")
    return encoding in _REFERENCE_ENCODINGS or (
        encoding == b"json/protobuf" and payload.metadata.get("messageType") == _REFERENCE_TYPE
    )


def _driver(payload: Payload) -> str:
    try:
        return str(json.loads(payload.data).get("driverName") or "unknown driver")
    except (ValueError, AttributeError):
        return "unknown driver"


@contextlib.contextmanager
def _sdk_logs_quiet() -> Iterator[None]:
    logger = logging.getLogger("temporalio.worker")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


async def _aiter(items: Iterable[WorkflowHistory]) -> AsyncIterator[WorkflowHistory]:
    for item in items:
        yield item


class _Witness(Interceptor):
    """Notes, by run id, what the replayed code raised from the run or a signal handler, so a
    divergence can say why (e.g. the installed code fails the run at its first step)."""

    def __init__(self, failures: dict[str, str]) -> None:
        self._failures = failures

    def workflow_interceptor_class(self, input: WorkflowInterceptorClassInput) -> type[WorkflowInboundInterceptor]:
        failures = self._failures

        class Witness(WorkflowInboundInterceptor):
            async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
                try:
                    return await super().execute_workflow(input)
                except workflow.ContinueAsNewError:
                    raise
                except Exception as exc:  # not the SDK's eviction of the replayed run (a BaseException)
                    failures[workflow.info().run_id] = _exception_text(exc)
                    raise

            async def handle_signal(self, input: HandleSignalInput) -> None:
                try:
                    await super().handle_signal(input)
                except Exception as exc:
                    failures[workflow.info().run_id] = _exception_text(exc)
                    raise

        return Witness


def _exception_text(exc: BaseException) -> str:
    kind = getattr(exc, "type", None) or type(exc).__name__
    return f"{kind}: {getattr(exc, 'message', None) or exc}"[:500]


HistorySource = str | os.PathLike[str] | WorkflowHistory


def replay_histories(
    *histories: HistorySource | Iterable[HistorySource],
    workflows: Sequence[type] = (AgentRun,),
    codec_keys: CodecKeys | str | os.PathLike[str] | None = None,
    payload_store: PayloadStore | str | None = None,
    check: bool = True,
) -> list[ReplayOutcome]:
    """Replay saved histories against the installed code, for pytest (`signoff.testing`).

    Args:
        histories: JSON files, directories (their `*.json`), glob patterns, or
            `WorkflowHistory` objects; any mix, or iterables of them.
        workflows: the workflow classes to replay with (default the installed `AgentRun`).
        codec_keys: the key file (or keys) of an encrypted namespace; default
            `SIGNOFF_CODEC_KEYS` of the environment.
        payload_store: the payload store (`file:///...`, `s3://...`) large payloads were
            kept in; default `SIGNOFF_PAYLOAD_STORE` of the environment.
        check: raise `HistoryReplayError` (an AssertionError that names each run that
            would not resume, and why) unless every history resumes.

    Returns:
        One `ReplayOutcome` per history, in order.

    Raises:
        HistoryFileError: a file is not a history; HistoryReplayError (with `check`).
    """
    sources = list(_sources(histories))
    keys = CodecKeys.read(Path(codec_keys)) if isinstance(codec_keys, (str, os.PathLike)) else codec_keys
    keys = keys if codec_keys is not None else CodecKeys.from_env(Environment())
    store = PayloadStore(payload_store) if isinstance(payload_store, str) else payload_store
    store = store if payload_store is not None else PayloadStore.from_env(Environment())
    replayer = HistoryReplayer(replay_data_converter(store, keys), keys, workflows)

    async def collect() -> list[ReplayOutcome]:
        return [outcome async for outcome in replayer.replay(sources)]

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        outcomes = asyncio.run(collect())
    else:  # called from async code (an async test): replay on a loop of its own
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            outcomes = pool.submit(asyncio.run, collect()).result()
    if check and not all(o.resumes for o in outcomes):
        raise HistoryReplayError(outcomes)
    return outcomes


def _sources(items: Iterable[Any]) -> Iterator[tuple[str, WorkflowHistory]]:
    for item in items:
        if isinstance(item, WorkflowHistory):
            yield f"{item.workflow_id}/{_run_id(item)}", item
        elif isinstance(item, (str, os.PathLike)):
            path = Path(item)
            if path.is_dir():
                yield from ((str(p), load_history(p)) for p in sorted(path.glob("*.json")))
            elif any(c in str(item) for c in "*?["):
                matched = (
                    sorted(Path().glob(str(item)))
                    if not path.is_absolute()
                    else sorted(Path(path.anchor).glob(str(path.relative_to(path.anchor))))
                )
                if not matched:
                    raise HistoryFileError(f"no history matches {str(item)!r}")
                yield from ((str(p), load_history(p)) for p in matched)
            else:
                yield str(path), load_history(path)
        else:
            yield from _sources(item)
