"""What the inbox reads: the namespace's waiting calls, and one call with its run around it.

Waiting runs come from the visibility store (`SignoffStatus` `AwaitingApproval` or `AwaitingInput`, as
`signoff pending` finds them), a page of runs at a time; each is asked for its `status`
(pending calls, who requested the run). A call page adds the run's `agent_snapshot` (the
tool's schema, for edited arguments), its recent transcript (`messages`) and, once the call
is no longer waiting, how it was decided (the `audit` query).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import TypeAdapter
from temporalio.client import Client
from temporalio.service import RPCError

from signoff.activities.lineage import ancestors
from signoff.approval.requests import ApprovalRecord, ToolApprovalRequest
from signoff.contract import QUERY_MESSAGES, SA_AGENT, SA_PENDING_TOOLS
from signoff.errors import CommandError
from signoff.messages import ChatMessage
from signoff.operator import run_client
from signoff.operator.edits import tool_schema
from signoff.operator.waiting import WAITING_QUERY, bounded
from signoff.signing.derived import RunFacts
from signoff.views.render import decided_by
from signoff.workflows.feed import SIGNOFF_PENDING_TOOLS

PAGE_RUNS = 50
TRANSCRIPT_KEPT = 12
Sort = Literal["newest", "deadline"]
_PLAIN = re.compile(r"[^\"'\\\x00-\x1f\x7f]{1,256}")
_MESSAGES = TypeAdapter(list[ChatMessage])


def call_key(workflow_id: str, call_id: str, digest: str) -> str:
    """A short id for one call as it is now (its run, id and arguments digest), safe in HTML."""
    return hashlib.sha256(f"{workflow_id}\0{call_id}\0{digest}".encode()).hexdigest()[:24]


@dataclass(frozen=True)
class WaitingCall:
    """A call waiting for people, with what the inbox needs around it.

    Attributes:
        run: what the server says of the run (its type, task queue, chain), shown beside
            the call; None when it could not be asked.
    """

    workflow_id: str
    agent: str
    request: ToolApprovalRequest
    requested_by: str | None = None
    run: RunFacts | None = None
    ancestors: tuple[str, ...] = ()
    """A sub-agent's call: the runs above the one that waits, the top first (the server's word)."""

    @property
    def top(self) -> str | None:
        """The top run of a sub-agent's call (None: the call is a top run's own)."""
        return self.ancestors[0] if self.ancestors else None

    @property
    def path(self) -> list[str]:
        """The top run, the runs down to the one that waits, the tool (empty for a top run's own call)."""
        return [*self.ancestors, self.workflow_id, self.request.name] if self.ancestors else []

    @property
    def key(self) -> str:
        return call_key(self.workflow_id, self.request.call_id, self.request.arguments_digest)


@dataclass(frozen=True)
class Filters:
    """What the list shows: by agent, tool and run (a top run's filter shows its sub-agents'
    calls too), newest first or by deadline."""

    agent: str = ""
    tool: str = ""
    run: str = ""
    sort: Sort = "newest"

    @classmethod
    def of(cls, agent: str = "", tool: str = "", run: str = "", sort: str = "newest") -> Filters:
        """Filters from a request's query string; a value that cannot be a name is ignored."""

        def plain(value: str) -> str:
            value = value.strip()
            return value if _PLAIN.fullmatch(value) else ""

        return cls(plain(agent), plain(tool), plain(run), "deadline" if sort == "deadline" else "newest")

    def query(self) -> str:
        """The visibility query of the waiting runs these filters select."""
        parts = [WAITING_QUERY]
        parts += [f'{SA_AGENT}="{self.agent}"'] if self.agent else []
        parts += [f'{SA_PENDING_TOOLS}="{self.tool}"'] if self.tool else []
        parts += [f'(WorkflowId="{self.run}" OR RootWorkflowId="{self.run}")'] if self.run else []
        return " AND ".join(parts)

    def admits(self, call: WaitingCall) -> bool:
        return (
            (not self.agent or call.agent == self.agent)
            and (not self.tool or call.request.name == self.tool)
            and (not self.run or call.workflow_id == self.run or self.run in call.ancestors)
        )

    def order(self, calls: Sequence[WaitingCall]) -> list[WaitingCall]:
        far = datetime.max.replace(tzinfo=UTC)
        if self.sort == "deadline":  # soonest first; calls without a deadline last
            return sorted(calls, key=lambda c: (c.request.expires_at or far, c.workflow_id, c.request.call_id))
        early = datetime.min.replace(tzinfo=UTC)
        return sorted(
            calls, key=lambda c: (c.request.requested_at or early, c.workflow_id, c.request.call_id), reverse=True
        )

    def params(self) -> dict[str, str]:
        given = {"agent": self.agent, "tool": self.tool, "run": self.run}
        return {k: v for k, v in given.items() if v} | ({"sort": "deadline"} if self.sort == "deadline" else {})


@dataclass(frozen=True)
class Page:
    """One page of waiting runs' calls; `silent` names runs no worker answered for."""

    calls: list[WaitingCall]
    next_token: bytes | None = None
    silent: list[tuple[str, list[str]]] = field(default_factory=list)


async def run_calls(client: Client, workflow_id: str, run: RunFacts | None = None) -> list[WaitingCall]:
    """The waiting calls of one run (CommandError when it cannot answer), with `run`, what the
    server says of it (asked here when not given)."""
    if run is None:
        run = await run_client.run_facts(client, workflow_id)
    status = await run_client.status(client.get_workflow_handle(workflow_id))
    # A sub-agent's waiting call is listed once, by the run that waits (a waiting run itself), where
    # its page, its decision and a signature bound to it go; its ancestors' status lists it too.
    own = [r for r in status.pending if not r.path]
    above = tuple(await ancestors(client, run.parent_id)) if own and run.parent_id else ()
    return [WaitingCall(workflow_id, status.agent, r, status.requested_by, run, above) for r in own]


async def list_page(client: Client, filters: Filters, token: bytes | None = None, size: int = PAGE_RUNS) -> Page:
    """One page of waiting runs, newest started first (the visibility store's order), their
    calls ordered as the filters say.

    Raises:
        CommandError: the visibility store refused the query (search attributes missing).
    """
    try:
        listing = client.list_workflows(filters.query(), page_size=size, next_page_token=token)
        await listing.fetch_next_page()
    except RPCError as exc:
        raise CommandError(
            f"cannot list runs: {exc.message} (signoff's search attributes are registered by the worker when it starts)"
        ) from None
    executions = list(listing.current_page or [])
    answers = await bounded(
        [lambda e=e: run_calls(client, e.id, run_client.facts_of(e.raw_info)) for e in executions]  # type: ignore[misc]
    )
    calls: list[WaitingCall] = []
    silent: list[tuple[str, list[str]]] = []
    for execution, answer in zip(executions, answers, strict=True):
        if isinstance(answer, BaseException):
            silent.append((execution.id, list(execution.typed_search_attributes.get(SIGNOFF_PENDING_TOOLS) or [])))
            continue
        calls += [c for c in answer if filters.admits(c)]
    return Page(filters.order(calls), listing.next_page_token or None, silent)


async def every_waiting_call(client: Client, limit: int) -> tuple[list[WaitingCall], bool]:
    """All waiting calls of the namespace, up to `limit` (True when there were more)."""
    calls: list[WaitingCall] = []
    token: bytes | None = None
    while True:
        page = await list_page(client, Filters(), token)
        calls += page.calls
        token = page.next_token
        if token is None or len(calls) >= limit:
            return calls[:limit], token is not None or len(calls) > limit


@dataclass(frozen=True)
class Decided:
    """How a call that no longer waits was settled (`text`: `approved by alice (verified)`).

    Attributes:
        arguments, edited_arguments: the model's arguments and, when the approval edited
            them, the ones that ran instead (from the audit record; None when unknown).
        approver: who decided (the audit record's approver; None for a timeout or unknown).
    """

    text: str
    approved: bool | None = None
    reason: str | None = None
    at: datetime | None = None
    arguments: Any = None
    edited_arguments: dict[str, Any] | None = None
    approver: str | None = None

    @classmethod
    def of(cls, record: ApprovalRecord) -> Decided:
        verb = "approved" if record.approved else "denied"
        if record.timed_out:
            verb = f"timed out ({'approved' if record.approved else 'denied'} by its policy)"
        by = decided_by(record)
        text = f"{verb} by {by}" if by and not record.timed_out else verb
        edited = " with edited arguments" if record.approved and record.edited_arguments is not None else ""
        return cls(
            text + edited,
            record.approved,
            record.reason,
            record.decided_at,
            record.arguments,
            record.edited_arguments if record.approved else None,
            None if record.timed_out else record.approver,
        )


async def how_decided(client: Client, workflow_id: str, call_id: str, digest: str | None) -> Decided:
    """The audit record of a call that was decided, or what is known when there is none.

    Args:
        digest: the arguments digest of the call as it was seen (a record of the same call id
            for other arguments is another call); None: the latest record of that call id.
    """
    try:
        trail = await run_client.audit_trail(client.get_workflow_handle(workflow_id))
    except CommandError as exc:
        return Decided(f"no longer waiting ({exc})")
    for record in reversed(trail.records):
        if record.call_id == call_id and (digest is None or record.arguments_digest in ("", digest)):
            return Decided.of(record)
    return Decided("no longer waiting (the run moved on without a decision on record: cancelled or changed)")


@dataclass(frozen=True)
class CallView:
    """One call page: the call (None once it no longer waits), its tool's schema, the
    run's recent transcript, and how the call was decided (once it was)."""

    workflow_id: str
    call_id: str
    call: WaitingCall | None
    schema: dict[str, object] | None = None
    transcript: list[ChatMessage] = field(default_factory=list)
    earlier: int = 0
    decided: Decided | None = None
    problem: str | None = None


async def call_view(client: Client, workflow_id: str, call_id: str) -> CallView:
    """Everything the call page shows; a run that cannot answer is a `problem`, not an error."""
    handle = client.get_workflow_handle(workflow_id)
    try:
        calls = await run_calls(client, workflow_id)
    except CommandError as exc:
        return CallView(workflow_id, call_id, None, problem=str(exc))
    call = next((c for c in calls if c.request.call_id == call_id), None)
    schema = await tool_schema(client, workflow_id, call.request.name) if call else None
    transcript, earlier = await recent_transcript(handle)
    decided = None if call else await how_decided(client, workflow_id, call_id, None)
    return CallView(workflow_id, call_id, call, schema, transcript, earlier, decided)


async def recent_transcript(handle: run_client.Handle) -> tuple[list[ChatMessage], int]:
    """The last messages of the run's transcript, and how many came before them."""
    try:
        messages = _MESSAGES.validate_python(await run_client.query(handle, QUERY_MESSAGES))
    except (CommandError, ValueError):
        return [], 0
    return messages[-TRANSCRIPT_KEPT:], max(0, len(messages) - TRANSCRIPT_KEPT)
