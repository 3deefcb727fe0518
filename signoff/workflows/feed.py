"""What a run shows of itself: its event feed, its status, and where operators find it.

Events are numbered and the newest are kept (each with its large texts cut), so the
`events` query and continue-as-new stay small. The status is advertised in search
attributes only while the run waits for people (`SignoffStatus`, `SignoffPendingTools`):
each upsert is a visibility write, the largest cost of a run at scale (bench/README.md),
and a closed run's state is its ExecutionStatus. The Web UI's current details show the
pending calls and how to decide them.

`SignoffAgent` is set on every run. signoff's own clients give it with the start
(`start_attributes`), which costs nothing (the start is one Action whatever it carries); a run
started without it (a plain `temporal workflow start`, another SDK) writes it in an upsert of its
own at its first task, one billable Action (bench/README.md, "Billable Actions").
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from temporalio import workflow
from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes

from signoff.approval.requests import ToolApprovalRequest
from signoff.contract import (
    SA_AGENT,
    SA_PENDING_TOOLS,
    SA_STATUS,
    STATUS_AWAITING,
    STATUS_AWAITING_INPUT,
    STATUS_RUNNING,
)
from signoff.loop.limits import rough_json_size
from signoff.messages import AgentEvent
from signoff.workflows.details import describe_pending

SIGNOFF_STATUS = SearchAttributeKey.for_keyword(SA_STATUS)
SIGNOFF_AGENT = SearchAttributeKey.for_keyword(SA_AGENT)
SIGNOFF_PENDING_TOOLS = SearchAttributeKey.for_keyword_list(SA_PENDING_TOOLS)
SEARCH_ATTRIBUTE_KEYS = (SIGNOFF_STATUS, SIGNOFF_AGENT, SIGNOFF_PENDING_TOOLS)


def start_attributes(agent: str) -> TypedSearchAttributes:
    """The search attributes a client gives an `AgentRun` at its start: `SignoffAgent`, so the
    run needs no upsert of its own to be found by agent (`client.start_workflow(...,
    search_attributes=start_attributes(run_input.agent))`)."""
    return TypedSearchAttributes([SearchAttributePair(SIGNOFF_AGENT, agent)])


def advertise_agent(agent: str, carried: bool) -> None:
    """Set `SignoffAgent` on the run, unless its client gave it at the start (`start_attributes`).

    Whether it did is read from the run's start event, so a replay decides as the run did: a
    history recorded before signoff's clients gave it (none did) upserts it, as it did then. A
    run continued as new (`carried`) upserts it as before: its start holds the attributes of the
    run it continues, which upserted it, and its recorded histories upsert it again (rare: once
    per continue-as-new, not per run)."""
    if carried or workflow.info().typed_search_attributes.get(SIGNOFF_AGENT) != agent:
        workflow.upsert_search_attributes([SIGNOFF_AGENT.value_set(agent)])


EVENTS_KEPT = 200
EVENT_TEXT_KEPT = 2_000
"""Characters of a tool result or model text kept in an event (the transcript has it all)."""
EVENT_VALUE_KEPT = 4_000
"""Characters of JSON kept for other large values in an event (arguments, ignored payloads)."""


class RunRecord:
    """The run's event feed and advertised status."""

    def __init__(self, events: list[dict[str, Any]] | None = None, seq: int = 0) -> None:
        self.events: list[dict[str, Any]] = list(events or [])
        self.seq = seq
        self.status = STATUS_RUNNING
        self._tools: list[str] | None = None  # advertised in search attributes
        self._advertised: str | None = None  # the waiting status advertised with them
        self._details = ""
        self.published: Callable[[dict[str, Any]], None] | None = None
        """Where each event goes as it is kept, too (the run's stream, topic `events`)."""

    def add(self, event: AgentEvent) -> dict[str, Any]:
        """Number and keep an event; returns it as kept."""
        kept = {"seq": self.seq, **_trimmed(event.model_dump(mode="json"))}
        self.events.append(kept)
        self.seq += 1
        del self.events[:-EVENTS_KEPT]
        if self.published is not None:
            self.published(kept)
        return kept

    def since(self, seq: int) -> list[dict[str, Any]]:
        return [e for e in self.events if e["seq"] >= seq]

    def set_status(self, status: str, pending: list[ToolApprovalRequest]) -> None:
        """Record the status; advertise a wait, and only a wait, in search attributes.

        Search attributes are written only when what they say changes (a visibility write
        each); the Web UI details whenever the pending calls change (votes, deadlines)."""
        waiting = status == STATUS_AWAITING
        if waiting and pending and all(r.asks_input for r in pending):
            status = STATUS_AWAITING_INPUT  # only MCP servers' questions wait: answers, not approvals
        tools = sorted({r.name for r in pending}) if waiting else None
        if (tools, status if waiting else None) != (self._tools, self._advertised):
            workflow.upsert_search_attributes(
                [SIGNOFF_STATUS.value_set(status), SIGNOFF_PENDING_TOOLS.value_set(tools)]
                if tools is not None
                else [SIGNOFF_STATUS.value_unset(), SIGNOFF_PENDING_TOOLS.value_unset()]
            )
            self._tools, self._advertised = tools, status if waiting else None
        details = describe_pending(workflow.info().workflow_id, pending) if waiting else ""
        if details != self._details:
            workflow.set_current_details(details)
            self._details = details
        self.status = status


def _trimmed(data: dict[str, Any]) -> dict[str, Any]:
    """An event with its long texts cut, saying how much: the feed is for following a run."""
    for key in ("content", "text"):
        value = data.get(key)
        if isinstance(value, str) and len(value) > EVENT_TEXT_KEPT:
            data[key] = value[:EVENT_TEXT_KEPT] + f"\n[... {len(value) - EVENT_TEXT_KEPT:,} more characters]"
    for key in ("payload", "request", "record", "call"):
        if (
            key in data
            and rough_json_size(data[key], EVENT_VALUE_KEPT) > EVENT_VALUE_KEPT
            and len(json.dumps(data[key], default=str)) > EVENT_VALUE_KEPT
        ):
            data[key] = _shrunk(data[key])
    return data


def _shrunk(value: Any) -> Any:
    if not isinstance(value, dict):
        text = json.dumps(value, default=str)
        return {"elided": f"{len(text):,} characters of JSON", "start": text[:200]}
    shrunk = dict(value)
    for key, item in value.items():
        text = json.dumps(item, default=str)
        if len(text) > EVENT_VALUE_KEPT // 4:
            shrunk[key] = {"elided": f"{len(text):,} characters of JSON", "start": text[:200]}
    return shrunk
