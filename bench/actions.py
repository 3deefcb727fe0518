"""Billable Temporal Cloud Actions per run, counted from the run's real history.

Temporal Cloud bills by Actions, as its docs define them ("Temporal Cloud Actions",
https://docs.temporal.io/cloud/actions, each kind with the history event it maps to; "Estimate
Actions from Workflow Execution Histories", https://docs.temporal.io/cloud/migrate/estimate-actions):

- the workflow's start (`WORKFLOW_EXECUTION_STARTED`), a continue-as-new, an options update, a
  child workflow (two: the intent and the start), a Nexus operation scheduled or cancelled;
- each activity scheduled, and each retry (`ACTIVITY_TASK_STARTED.attempt - 1`);
- local activities: "all RecordMarkers from each Workflow Task" count as one Action (a
  `workflow.patched` marker too: the docs say all, and the server's own `action` metric counts
  it), and local activities' retries
  (`WORKFLOW_TASK_COMPLETED.metering_metadata.nonfirst_local_activity_execution_attempts`);
- each timer started, signal received and update accepted (a rejected update is billed too, but
  never written to history: the benches send none);
- each search-attribute upsert, except one that sets only `TemporalChangeVersion` (the SDK's
  record of `workflow.patched`), which the docs exempt; attributes given at start are not billed.

Not in a history: activity heartbeats that reach the server (billed; `bench.peers` reads them
from the dev server's `action` metric), queries (none sent), schedules and exports (not used).
`DescribeWorkflowExecution` and other reads are not Actions.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Sequence

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent

from bench.common import BenchError, frontend_counter

E = EventType
# Actions per event, by the docs' "Usage Name" of each (one Action each unless said).
ONE_PER_EVENT = {
    E.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED: "Start Workflow",
    E.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW: "Continue As New Workflow",
    E.EVENT_TYPE_WORKFLOW_EXECUTION_OPTIONS_UPDATED: "Update Workflow Options",
    E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED: "Schedule Activity",
    E.EVENT_TYPE_TIMER_STARTED: "Start Timer",
    E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED: "Signal Workflow",
    E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED: "Accept Workflow Update",
    E.EVENT_TYPE_NEXUS_OPERATION_SCHEDULED: "Schedule Nexus Operation",
    E.EVENT_TYPE_NEXUS_OPERATION_CANCEL_REQUESTED: "Request Nexus Operation Cancellation",
}
CHILD_WORKFLOW = E.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED  # two Actions
CHANGE_VERSION = "TemporalChangeVersion"


def billable_actions(events: Sequence[HistoryEvent]) -> Counter[str]:
    """The run's billable Actions by kind (the docs' usage names); `sum(...values())` is the total."""
    found: Counter[str] = Counter()
    marker_tasks: set[int] = set()  # workflow tasks (by their completed event) that recorded a marker
    for event in events:
        kind = event.event_type
        if kind in ONE_PER_EVENT:
            found[ONE_PER_EVENT[kind]] += 1
        elif kind == CHILD_WORKFLOW:
            found["Start Child Workflow"] += 2
        elif kind == E.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            found["Retry Activity"] += max(0, event.activity_task_started_event_attributes.attempt - 1)
        elif kind == E.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
            keys = set(event.upsert_workflow_search_attributes_event_attributes.search_attributes.indexed_fields)
            found["Upsert Workflow Search Attributes"] += int(keys != {CHANGE_VERSION})
        elif kind == E.EVENT_TYPE_MARKER_RECORDED:
            marker_tasks.add(event.marker_recorded_event_attributes.workflow_task_completed_event_id)
        elif kind == E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            metering = event.workflow_task_completed_event_attributes.metering_metadata
            found["Retry Local Activity"] += metering.nonfirst_local_activity_execution_attempts
    found["Record Activity Markers"] += len(marker_tasks)
    return +found  # kinds with no Action left out


def total(events: Sequence[HistoryEvent]) -> int:
    return sum(billable_actions(events).values())


def exempt_upserts(events: Sequence[HistoryEvent]) -> int:
    """Upserts of `TemporalChangeVersion` alone: the server's `action` metric counts them, the
    docs exempt them from billing."""
    return sum(
        1
        for e in events
        if e.event_type == E.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES
        and set(e.upsert_workflow_search_attributes_event_attributes.search_attributes.indexed_fields)
        == {CHANGE_VERSION}
    )


# --- the dev server's own count ---------------------------------------------------------------
# The server's `action` counter (the frontend's, by `action_type`), which Temporal's migration
# docs use to estimate Cloud Actions from a self-hosted server. It sees what a history does not:
# activity heartbeats that reached the server.
HEARTBEAT = "grpc_RecordActivityTaskHeartbeat"
REPORT_EVERY = 1.0  # the dev server reports its metrics about once a second


async def server_actions(metrics_url: str) -> Counter[str]:
    """The dev server's `action` counter so far, by action type."""
    return await frontend_counter(metrics_url, "action", "action_type")


async def settled(metrics_url: str, timeout: float = 30.0) -> Counter[str]:
    """The counter once it has not moved for 1.5 reporting intervals (nothing still to land)."""
    last, since = await server_actions(metrics_url), time.perf_counter()
    deadline = since + timeout
    while time.perf_counter() - since < 1.5 * REPORT_EVERY:
        if time.perf_counter() > deadline:
            raise BenchError(f"the server's action counter did not settle in {timeout}s")
        await asyncio.sleep(0.25)
        now = await server_actions(metrics_url)
        if now != last:
            last, since = now, time.perf_counter()
    return last
