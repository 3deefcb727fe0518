"""Commands about runs: `run`, `pending`, `watch`, `result`."""

from __future__ import annotations

import argparse
import asyncio
import json
import uuid
from typing import TYPE_CHECKING

from pydantic import ValidationError
from temporalio.client import Client, WorkflowExecution, WorkflowFailureError
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError

from signoff.cli import talk
from signoff.cli.calls import PendingRow, render_pending
from signoff.cli.follow import Prompter, follow_or_leave
from signoff.cli.render import render_result
from signoff.cli.talk import CommandError, Handle
from signoff.cli.who import Who
from signoff.contract import (
    SA_STATUS,
    STATUS_AWAITING,
    WORKFLOW_TYPE,
    AgentRunInput,
    AgentRunResult,
    RunOptions,
)
from signoff.links import inbox_root
from signoff.workflows.record import SIGNOFF_PENDING_TOOLS
from signoff.workflows.run_input import format_validation_error

if TYPE_CHECKING:
    from signoff.cli.main import Context

WAITING_QUERY = f'WorkflowType="{WORKFLOW_TYPE}" AND ExecutionStatus="Running" AND {SA_STATUS}="{STATUS_AWAITING}"'
SUMMARY_CHARS = 80


def summary(run_input: AgentRunInput) -> str:
    """The Web UI's one-line summary of a run: `default: Delete the directory /tmp/logs`."""
    text = " ".join((run_input.prompt or "(a transcript)").split())
    line = f"{run_input.agent}: {text}"
    return line if len(line) <= SUMMARY_CHARS else line[: SUMMARY_CHARS - 1] + "…"


def _run_input(args: argparse.Namespace, requester_token: str | None = None) -> AgentRunInput:
    options = {"max_rounds": args.max_rounds, "approval_timeout_seconds": args.approval_timeout,
               "requester_token": requester_token}  # fmt: skip
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
        return await client.start_workflow(WORKFLOW_TYPE, run_input, id=workflow_id, task_queue=task_queue,
                                           static_summary=summary(run_input))
    except WorkflowAlreadyStartedError:
        raise CommandError(f"a run with id {workflow_id!r} already exists; choose another --id") from None


def announce(ctx: Context, workflow_id: str) -> None:
    style = ctx.console.style
    ctx.console.print(f"started run {style.paint(workflow_id, 'bold')}")
    if link := ctx.link(workflow_id):
        ctx.console.print(f"Web UI: {style.paint(link, 'cyan')}")


async def cmd_run(args: argparse.Namespace, ctx: Context) -> int:
    """Start an AgentRun (with a key set, as its signed requester); with --wait, follow it and
    answer approvals at the prompt."""
    who = Who.from_args(args)
    workflow_id = args.id or f"signoff-{uuid.uuid4().hex[:8]}"
    run_input = _run_input(args, who.requester(workflow_id))
    client = await ctx.connect()
    handle = await start(client, run_input, workflow_id, args.task_queue or ctx.settings.task_queue)
    announce(ctx, workflow_id)
    if not args.wait:
        return 0
    return await follow_or_leave(handle, ctx, Prompter(ctx.console, who))


async def _rows(client: Client, workflow_id: str, execution: WorkflowExecution | None = None) -> list[PendingRow]:
    handle = client.get_workflow_handle(workflow_id)
    try:
        return [PendingRow(workflow_id, request) for request in await talk.pending(handle)]
    except CommandError:
        if execution is None:
            raise
        # No worker answered; the search attribute still names the tools.
        tools = execution.typed_search_attributes.get(SIGNOFF_PENDING_TOOLS) or []
        note = f"(no worker answered; is one serving task queue {execution.task_queue!r}?)"
        return [PendingRow(workflow_id, note=note, tools=list(tools))]


def _requested(row: PendingRow) -> float:
    at = row.request.requested_at if row.request else None
    return at.timestamp() if at else 0.0


async def waiting_runs(client: Client, query: str = WAITING_QUERY) -> list[WorkflowExecution]:
    try:
        return [e async for e in client.list_workflows(query)]
    except RPCError as exc:
        raise CommandError(f"cannot list runs: {exc.message}\n(signoff's search attributes are registered "
                           "by `python worker.py` when it starts)") from None


async def cmd_pending(args: argparse.Namespace, ctx: Context) -> int:
    """Every call awaiting approval (of one run, or across the namespace: visibility lags a little)."""
    client = await ctx.connect()
    if args.run:
        rows = await _rows(client, args.run)
    else:
        groups = await asyncio.gather(*(_rows(client, e.id, e) for e in await waiting_runs(client)))
        rows = sorted((r for g in groups for r in g), key=_requested)
    ctx.shown.record_all((r.workflow_id, r.request) for r in rows if r.request)
    if args.json:
        data = [{"workflow_id": r.workflow_id, **(r.request.model_dump(mode="json") if r.request else
                 {"name": ",".join(r.tools) or None, "note": r.note})} for r in rows]  # fmt: skip
        ctx.console.print(json.dumps(data, indent=2, ensure_ascii=True))
    else:
        ctx.console.print(*render_pending(rows, ctx.console.style, ctx.console.width, inbox=inbox_root()))
    return 0


async def cmd_watch(args: argparse.Namespace, ctx: Context) -> int:
    """Follow a run's events until it finishes, without deciding anything."""
    handle = (await ctx.connect()).get_workflow_handle(args.run)
    return await follow_or_leave(handle, ctx, None)


async def cmd_result(args: argparse.Namespace, ctx: Context) -> int:
    """Wait for a run's result; print it readably, or as the raw JSON with --json."""
    handle = (await ctx.connect()).get_workflow_handle(args.run)
    result = asyncio.ensure_future(handle.result())
    while not result.done():
        await ctx.console.spinner.wait(3600, f"waiting for {args.run} to finish", until=result)
    try:
        raw = result.result()
    except WorkflowFailureError as exc:
        raise CommandError(f"the run failed: {talk.failure_text(exc)}") from None
    except RPCError as exc:
        raise CommandError(talk.rpc_text(exc, args.run)) from None
    if args.json:
        ctx.console.print(json.dumps(raw, indent=2, ensure_ascii=True))
    else:
        ctx.console.print(*render_result(AgentRunResult.model_validate(raw), ctx.console.style, ctx.console.width))
    return 0
