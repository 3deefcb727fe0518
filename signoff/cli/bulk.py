"""`signoff approve | deny --query '<visibility query>' [--tool T] [--older-than AGE]`.

Decisions across runs, each still bound: the runs the query matches *and* that wait for
approval are asked for their pending calls, filtered by tool and age, and listed whole
(run, call, tool, age, digest, arguments). After a yes (a terminal, or `--yes`), each run
gets one update naming exactly the listed calls with their digests; a call that changed
meanwhile makes its run refuse, and the report says so per run.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from temporalio.client import Client

from signoff.approval.requests import ToolApprovalRequest, ToolApprovalResponse
from signoff.cli.calls import render_ack
from signoff.cli.input import terminal_asker
from signoff.cli.runs import waiting_runs
from signoff.cli.shown import show
from signoff.cli.style import print_json
from signoff.cli.who import Who
from signoff.contract import DecisionAck
from signoff.errors import CommandError
from signoff.operator import run_client
from signoff.operator.waiting import bounded
from signoff.views.text import safe

if TYPE_CHECKING:
    from signoff.cli.main import CommandContext

Listed = list[tuple[str, list[ToolApprovalRequest]]]


def _wanted(request: ToolApprovalRequest, args: argparse.Namespace, now: datetime) -> bool:
    if args.tool and request.name != args.tool:
        return False
    waited = now - request.requested_at if request.requested_at else None
    return not args.older_than or (waited is not None and waited >= args.older_than)


async def matching_calls(client: Client, args: argparse.Namespace) -> Listed:
    """The waiting runs the query matches, each with its pending calls that pass the filters."""
    ids = sorted({run.workflow_id for run in await waiting_runs(client, args.query) if not run.paused})
    answers = await bounded([lambda i=i: run_client.pending(client.get_workflow_handle(i)) for i in ids])  # type: ignore[misc]
    now = datetime.now(UTC)
    listed: Listed = []
    for workflow_id, answer in zip(ids, answers, strict=True):
        if isinstance(answer, BaseException):
            continue  # decided, finished or paused since it was listed, or no worker: nothing to decide there
        calls = [r for r in answer if _wanted(r, args, now)]
        if calls:
            listed.append((workflow_id, calls))
    return listed


async def decide_by_query(args: argparse.Namespace, ctx: CommandContext, fields: dict[str, Any], who: Who) -> int:
    """List what the query selects, ask, then decide exactly that, one update per run."""
    verb, console = args.command, ctx.console
    client = await ctx.connect()
    listed = await matching_calls(client, args)
    if not listed:
        console.print("No pending call matches.")
        return 0
    count = sum(len(calls) for _, calls in listed)
    console.print(console.style.paint(f"Will {verb} {count} call(s) in {len(listed)} run(s):", "bold"), "")
    for workflow_id, calls in listed:
        show(ctx, workflow_id, calls, record=console.tty)
    if not args.yes:
        ask = terminal_asker(console.write)
        if ask is None:
            raise CommandError(f"nothing decided: no terminal to confirm; to {verb} these, add --yes", 2)
        if not ask(f"{verb.capitalize()} these {count} call(s)?"):
            raise CommandError("nothing decided", 1)
    return await _decide_each(ctx, client, listed, fields, who, args.json)


async def _decide_each(
    ctx: CommandContext, client: Client, listed: Listed, fields: dict[str, Any], who: Who, as_json: bool
) -> int:
    async def one_run(workflow_id: str, calls: list[ToolApprovalRequest]) -> DecisionAck:
        run = await run_client.run_facts(client, workflow_id) if any(who.signs(r) for r in calls) else None
        responses = [
            who.decision(r, ToolApprovalResponse(call_id=r.call_id, arguments_digest=r.arguments_digest, **fields), run)
            for r in calls
        ]
        return await run_client.submit(client.get_workflow_handle(workflow_id), responses)

    jobs = [lambda w=w, calls=calls: one_run(w, calls) for w, calls in listed]
    refused, answers = 0, []
    for (workflow_id, _), outcome in zip(listed, await bounded(jobs), strict=True):
        console = ctx.console
        if isinstance(outcome, BaseException):
            refused += 1
            answers.append({"workflow_id": workflow_id, "refused": str(outcome)})
            if not as_json:
                console.print(f"{safe(workflow_id)}: {console.style.paint('refused', 'red')}: {safe(str(outcome))}")
            continue
        answers.append({"workflow_id": workflow_id, **outcome.model_dump(mode="json")})
        if not as_json:
            ack = render_ack(outcome, console.style, console.width)
            console.print(f"{safe(workflow_id)}:", *("  " + line for line in ack))
    if as_json:
        print_json(answers)
    return 1 if refused else 0
