"""Decisions by signal, when the run cannot take the update (CONTRACT v3 "Input limits").

A paused run (`temporal workflow pause`) refuses queries and updates; a run with 10
updates in flight refuses an eleventh; with no worker serving it, a query fails and an
update waits. A signal is always accepted: the run applies it when it goes on, or
records it as ignored. So `signoff approve|deny` sends the same decisions, each bound to
the call's digest as the operator was shown it, by signal, and says so. A run that cannot
answer cannot show its calls, so only calls the operator was shown before (or names
with the whole `--digest`) can be decided then.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from signoff.approval.requests import ToolApprovalResponse
from signoff.cli.style import print_json
from signoff.cli.who import Who
from signoff.errors import CommandError
from signoff.operator import run_client
from signoff.operator.run_client import Handle
from signoff.views.text import safe

if TYPE_CHECKING:
    from signoff.cli.main import CommandContext


def shown_responses(
    ctx: CommandContext, args: argparse.Namespace, fields: dict[str, Any], who: Who, why: str
) -> list[ToolApprovalResponse]:
    """The decisions a run that cannot answer (`why`) can be sent: calls the operator was shown, or
    named with the whole digest. They go unsigned: what a verified call's token must bind (its
    `binding`) is in the pending request, which the run cannot show now."""
    if fields.get("arguments") is not None:
        raise CommandError(f"{why}: the tool's schema cannot be read to check --edit; nothing decided", 2)
    shown = ctx.shown.digests(args.run)
    if args.call and args.digest and len(args.digest) == 64:
        bound = {args.call: args.digest}
    elif args.call and args.call in shown:
        bound = {args.call: shown[args.call]}
    elif args.all and shown:
        bound = shown
    else:
        raise CommandError(
            f"{why}, so it cannot show its pending calls: only a call you were shown before can be "
            "decided now. Name it (signoff approve|deny RUN CALL), or give its whole --digest; "
            "nothing decided",
            2,
        )
    return [
        who.decision(None, ToolApprovalResponse(call_id=call, arguments_digest=digest, **fields))
        for call, digest in bound.items()
    ]


async def send_by_signal(
    ctx: CommandContext, args: argparse.Namespace, handle: Handle, responses: list[ToolApprovalResponse], why: str
) -> int:
    """Send `responses` by signal and say why, and how to see what came of them."""
    await run_client.signal(handle, responses)
    if getattr(args, "json", False):
        sent = [r.model_dump(mode="json", exclude_none=True, exclude={"token"}) for r in responses]
        print_json({"sent_by_signal": True, "why": why, "decisions": sent})
        return 0
    verb = "approve" if responses and responses[0].approved else "deny"
    ctx.console.print(
        f"{safe(why)}.",
        f"Sent by signal instead: {verb} "
        + ", ".join(f"{safe(r.call_id)} (digest {r.arguments_digest})" for r in responses)
        + ".",
    )
    ctx.console.print(f"The run applies it when it goes on (or records why not): signoff watch {safe(handle.id)}")
    return 0
