"""`signoff extend | grants | revoke`: a waiting call's deadline, and a run's grants."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from pydantic import ValidationError

from signoff.approval.requests import Grant, ToolApprovalRequest
from signoff.cli.style import Style, print_json
from signoff.cli.who import Who
from signoff.contract import (
    UPDATE_EXTEND_DEADLINE,
    UPDATE_REARM,
    UPDATE_REVOKE_GRANT,
    DeadlineAck,
    DeadlineExtension,
    GrantRevocation,
    Rearm,
)
from signoff.errors import CommandError
from signoff.operator import run_client
from signoff.views.text import format_deadline, safe
from signoff.workflows.run_input import format_validation_error

if TYPE_CHECKING:
    from signoff.cli.main import CommandContext


async def cmd_extend(args: argparse.Namespace, ctx: CommandContext) -> int:
    """Move a waiting call's deadline later (allowed approvers only; signed for a verified call
    when a key is set)."""
    who = Who.from_args(args, ctx.env)
    client = await ctx.connect()
    handle = client.get_workflow_handle(args.run)
    request = next((r for r in await run_client.pending(handle) if r.call_id == args.call), None) if who.key else None
    run = await run_client.run_facts(client, args.run) if who.signs(request) else None
    approver, token = who.extension(request, args.seconds, run)
    try:
        ask = DeadlineExtension(call_id=args.call, seconds=args.seconds, approver=approver, token=token)
    except ValidationError as exc:
        raise CommandError(format_validation_error(exc), 2) from None
    ack: DeadlineAck = await run_client.update(
        handle, UPDATE_EXTEND_DEADLINE, ask.model_dump(mode="json", exclude_none=True), DeadlineAck
    )
    if args.json:
        print_json(ack.model_dump(mode="json"))
    else:
        ctx.console.print(f"{safe(ack.call_id)} now waits until {format_deadline(ack.expires_at)}")
    return 0


async def cmd_rearm(args: argparse.Namespace, ctx: CommandContext) -> int:
    """Re-open an expired call (`on_timeout = "hold"`) with a new deadline (allowed approvers only)."""
    approver, token = Who.from_args(args, ctx.env).identity()
    seconds = args.deadline.total_seconds() if args.deadline else None
    try:
        ask = Rearm(call_id=args.call, deadline_seconds=seconds, approver=approver, token=token)
    except ValidationError as exc:
        raise CommandError(format_validation_error(exc), 2) from None
    handle = (await ctx.connect()).get_workflow_handle(args.run)
    payload = ask.model_dump(mode="json", exclude_none=True)
    request: ToolApprovalRequest = await run_client.update(handle, UPDATE_REARM, payload, ToolApprovalRequest)
    if args.json:
        print_json(request.model_dump(mode="json"))
    else:
        until = format_deadline(request.expires_at) if request.expires_at else "a decision (no deadline)"
        ctx.console.print(f"{safe(request.call_id)} ({safe(request.name)}) is open again; it waits until {until}")
    return 0


def grant_lines(grants: list[Grant], style: Style, now: datetime | None = None) -> list[str]:
    """One line per grant: id, state, what it approves, who granted it, its limits."""
    if not grants:
        return ["No grant in this run."]
    now = now or datetime.now(UTC)
    lines = []
    for grant in grants:
        state = style.paint("live", "green") if grant.live(now) else style.paint("ended", "dim")
        what = (
            f"calls of {safe(grant.tool)} with arguments {grant.arguments_digest}"
            if grant.arguments_digest
            else f"any call of {safe(grant.tool)}"
        )
        what = f"calls like {safe(grant.pattern)}" if grant.pattern else what
        who = f"{safe(grant.approver or '?')}{' (verified)' if grant.verified else ''}"
        limits = [f"{grant.uses_left} use(s) left"] if grant.uses_left is not None else []
        limits += [f"until {format_deadline(grant.expires_at, now)}"] if grant.expires_at else ["no expiry"]
        lines.append(
            f"{safe(grant.grant_id)}  {state}  {what}; granted by {who} on {safe(grant.from_call)}; "
            + ", ".join(limits)
        )
    return lines


async def cmd_grants(args: argparse.Namespace, ctx: CommandContext) -> int:
    """List the run's grants (live and ended)."""
    grants = await run_client.grants((await ctx.connect()).get_workflow_handle(args.run))
    if args.json:
        ctx.console.print(json.dumps([g.model_dump(mode="json") for g in grants], indent=2, ensure_ascii=True))
    else:
        ctx.console.print(*grant_lines(grants, ctx.console.style))
    return 0


async def cmd_revoke(args: argparse.Namespace, ctx: CommandContext) -> int:
    """End a grant at once: later calls it would have matched wait for a person again."""
    handle = (await ctx.connect()).get_workflow_handle(args.run)
    payload = GrantRevocation(grant_id=args.grant_id).model_dump(mode="json")
    grant: Grant = await run_client.update(handle, UPDATE_REVOKE_GRANT, payload, Grant)
    ctx.console.print(
        f"revoked {safe(grant.grant_id)} ({'any call' if not grant.arguments_digest else 'calls'} "
        f"of {safe(grant.tool)})"
    )
    return 0
