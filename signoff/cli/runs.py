"""Commands about runs: `run`, `pending`, `watch`, `result`."""

from __future__ import annotations

import argparse
import asyncio
import json
import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING

from pydantic import ValidationError
from temporalio.api.workflowservice.v1 import ListWorkflowExecutionsRequest
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from signoff.cli.calls import PendingRow, render_pending
from signoff.cli.follow import Prompter, StreamFollower, follow_or_leave
from signoff.cli.render import render_result
from signoff.cli.who import Who
from signoff.cli.workers import RunInfo, describe_run, no_worker, run_info, waiting_for
from signoff.contract import (
    WORKFLOW_TYPE,
    AgentRunInput,
    AgentRunResult,
    RunOptions,
)
from signoff.errors import CommandError, RunPaused
from signoff.operator import run_client
from signoff.operator.run_client import Handle
from signoff.operator.waiting import WAITING_OR_PAUSED_QUERY, WAITING_QUERY
from signoff.views.links import inbox_root
from signoff.workflows.feed import start_attributes
from signoff.workflows.run_input import format_validation_error

if TYPE_CHECKING:
    from signoff.cli.main import CommandContext

SUMMARY_CHARS = 80


def run_summary(run_input: AgentRunInput) -> str:
    """The Web UI's one-line summary of a run: `default: Delete the directory /tmp/logs`."""
    text = " ".join((run_input.prompt or "(a transcript)").split())
    line = f"{run_input.agent}: {text}"
    return line if len(line) <= SUMMARY_CHARS else line[: SUMMARY_CHARS - 1] + "…"


def _run_input(args: argparse.Namespace, requester_token: str | None = None) -> AgentRunInput:
    options = {
        "max_rounds": args.max_rounds,
        "approval_timeout_seconds": args.approval_timeout,
        "requester_token": requester_token,
    }
    try:
        return AgentRunInput(
            agent=args.agent,
            prompt=args.prompt,
            options=RunOptions(**{k: v for k, v in options.items() if v is not None}),
        )
    except ValidationError as exc:
        raise CommandError(format_validation_error(exc), 2) from None


async def start(client: Client, run_input: AgentRunInput, workflow_id: str, task_queue: str) -> Handle:
    """Start an AgentRun with its summary for the Web UI."""
    try:
        return await client.start_workflow(
            WORKFLOW_TYPE,
            run_input,
            id=workflow_id,
            task_queue=task_queue,
            static_summary=run_summary(run_input),
            search_attributes=start_attributes(run_input.agent),  # found by agent from its start, no upsert
        )
    except WorkflowAlreadyStartedError:
        raise CommandError(f"a run with id {workflow_id!r} already exists; choose another --id") from None


def announce(ctx: CommandContext, workflow_id: str) -> None:
    style = ctx.console.style
    ctx.console.print(f"started run {style.paint(workflow_id, 'bold')}")
    if link := ctx.link(workflow_id):
        ctx.console.print(f"Web UI: {style.paint(link, 'cyan')}")


async def cmd_run(args: argparse.Namespace, ctx: CommandContext) -> int:
    """Start an AgentRun (with a key set, as its signed requester); with --wait, follow it and
    answer approvals at the prompt."""
    who = Who.from_args(args, ctx.env)
    workflow_id = args.id or f"signoff-{uuid.uuid4().hex[:8]}"
    run_input = _run_input(args, who.requester(workflow_id))
    client = await ctx.connect()
    handle = await start(client, run_input, workflow_id, args.task_queue or ctx.settings.task_queue)
    announce(ctx, workflow_id)
    if not args.wait:
        return 0
    return await follow_or_leave(handle, ctx, Prompter(ctx.console, who), client)


PAUSED_NOTE = (
    "(paused: it shows its calls again when unpaused; `signoff approve|deny` of a call you were shown "
    "sends the decision by signal, applied then)"
)


async def _rows(
    client: Client, workflow_id: str, listed: RunInfo | None = None, unserved: str | None = None
) -> list[PendingRow]:
    """The run's pending calls; when it cannot answer, what its search attributes say it waits on.

    `unserved`: why no worker will answer (none polls its task queue), so it is not asked."""
    if listed is not None and listed.paused:
        return [PendingRow(workflow_id, note=PAUSED_NOTE, tools=listed.tools, paused=True)]
    if listed is not None and unserved is not None:
        return [PendingRow(workflow_id, note=f"({unserved})", tools=listed.tools)]
    handle = client.get_workflow_handle(workflow_id)
    try:
        return [
            PendingRow(request.workflow_id or workflow_id, request, top=workflow_id if request.path else None)
            for request in await run_client.pending(handle)
        ]
    except RunPaused:
        tools = (listed or await describe_run(client, workflow_id)).tools
        return [PendingRow(workflow_id, note=PAUSED_NOTE, tools=tools, paused=True)]
    except CommandError:
        if listed is None:
            raise
        # No worker answered; the search attribute still names the tools.
        note = f"(no worker answered; is one serving task queue {listed.task_queue!r}?)"
        return [PendingRow(workflow_id, note=note, tools=listed.tools)]


def _once(rows: Iterable[PendingRow]) -> list[PendingRow]:
    """Each waiting call once: a sub-agent's call is listed by its own run and by its ancestors
    (kept: as the top run lists it, with its path)."""
    kept: dict[tuple[str, str | None], PendingRow] = {}
    for item in rows:
        key = (item.workflow_id, item.request.call_id if item.request else None)
        known = kept.get(key)
        if known is None or (
            item.request and known.request and len(item.request.path or []) > len(known.request.path or [])
        ):
            kept[key] = item
    return list(kept.values())


def _depth(row: PendingRow) -> int:
    return len(row.request.path or []) if row.request else 0


def _requested(row: PendingRow) -> float:
    at = row.request.requested_at if row.request else None
    return at.timestamp() if at else 0.0


async def waiting_runs(client: Client, within: str | None = None) -> list[RunInfo]:
    """Every run waiting for approval, paused ones included (`within`: a visibility query to narrow it).

    Read from visibility directly: the SDK's listing cannot read a paused run's status."""
    try:
        try:
            return await _list(client, _narrowed(WAITING_OR_PAUSED_QUERY, within))
        except RPCError as exc:
            if exc.status != RPCStatusCode.INVALID_ARGUMENT:
                raise
            return await _list(client, _narrowed(WAITING_QUERY, within))  # a server that knows no Paused status
    except RPCError as exc:
        raise CommandError(
            f"cannot list runs: {exc.message}\n(signoff's search attributes are registered "
            "by `python worker.py` when it starts)"
        ) from None


def _narrowed(query: str, within: str | None) -> str:
    return f"({within}) AND {query}" if within else query


async def _list(client: Client, query: str) -> list[RunInfo]:
    runs, token = [], b""
    while True:
        request = ListWorkflowExecutionsRequest(namespace=client.namespace, query=query, next_page_token=token)
        page = await client.workflow_service.list_workflow_executions(request)
        runs += [run_info(info) for info in page.executions]
        token = page.next_page_token
        if not token:
            return runs


async def cmd_pending(args: argparse.Namespace, ctx: CommandContext) -> int:
    """Every call awaiting approval (of one run, or across the namespace: visibility lags a little)."""
    client = await ctx.connect()
    if args.run:
        rows = await _rows(client, args.run)
    else:
        runs = await waiting_runs(client)
        # A run whose task queue no worker polls would keep its query waiting for seconds: it is not asked.
        queues = sorted({r.task_queue for r in runs})
        unserved = dict(zip(queues, await asyncio.gather(*(no_worker(client, q) for q in queues)), strict=True))
        groups = await asyncio.gather(*(_rows(client, r.workflow_id, r, unserved[r.task_queue]) for r in runs))
        rows = sorted(_once(r for g in groups for r in g), key=_requested)
    ctx.shown.record_all((r.workflow_id, r.request) for r in rows if r.request)
    if args.json:
        data = [
            {
                "workflow_id": r.workflow_id,
                **({"top": r.top} if r.top else {}),
                **(
                    r.request.model_dump(mode="json")
                    if r.request
                    else {"name": ",".join(r.tools) or None, "note": r.note, "paused": r.paused}
                ),
            }
            for r in rows
        ]
        ctx.console.print(json.dumps(data, indent=2, ensure_ascii=True))
    else:
        ctx.console.print(*render_pending(rows, ctx.console.style, ctx.console.width, inbox=inbox_root(ctx.env)))
    return 0


async def cmd_watch(args: argparse.Namespace, ctx: CommandContext) -> int:
    """Follow a run until it finishes, without deciding anything: the model's text as it comes and
    the events, from the run's Workflow Stream."""
    client = await ctx.connect()
    await describe_run(client, args.run)  # a mistyped id says so at once, not "still waiting"
    return await follow_or_leave(client.get_workflow_handle(args.run), ctx, None, client, StreamFollower)


async def cmd_result(args: argparse.Namespace, ctx: CommandContext) -> int:
    """Print a run's result, readably or (--json) as raw JSON; for a run still going, say what it waits
    for, then wait (or, with --no-wait, stop: exit 1)."""
    client = await ctx.connect()
    info = await describe_run(client, args.run)
    handle = client.get_workflow_handle(args.run)
    if info.open:
        waits = f"run {args.run} has not finished: it waits for {await waiting_for(client, handle, info)}"
        if args.no_wait:
            raise CommandError(waits)
        ctx.console.note(f"{waits}. Waiting for its result (Ctrl-C to stop; --no-wait returns at once).")
    result = asyncio.ensure_future(handle.result())
    while not result.done():
        await ctx.console.spinner.wait(3600, f"waiting for {args.run} to finish", until=result)
    try:
        raw = result.result()
    except WorkflowFailureError as exc:
        raise CommandError(f"the run failed: {run_client.failure_text(exc)}") from None
    except RPCError as exc:
        raise CommandError(run_client.rpc_text(exc, args.run)) from None
    if args.json:
        ctx.console.print(json.dumps(raw, indent=2, ensure_ascii=True))
    else:
        ctx.console.print(*render_result(AgentRunResult.model_validate(raw), ctx.console.style, ctx.console.width))
    return 0
