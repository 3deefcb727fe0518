"""`signoff answer RUN CALL --json '{...}' | --decline | --cancel`: answer an MCP server's question.

A run whose MCP server asked a question in the middle of a call (`input_required`) waits with
a request of kind `input` (`signoff pending` shows its message and schema). The answer is
checked against the server's schema here, before anything is signed or sent, and again by the
run; under a verified policy it is signed for this call, this answer and the server's state.
A URL-mode question sends the person to a web page: the command shows its host, and `--json
true` is the person's consent (nothing entered there passes through signoff).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from signoff.approval.answers import answer_schema_problem
from signoff.approval.requests import ToolApprovalRequest, ToolApprovalResponse
from signoff.cli.calls import render_ack
from signoff.cli.style import Console, print_json
from signoff.cli.who import Who
from signoff.errors import CommandError, NotStrictJSON
from signoff.operator import run_client
from signoff.text import strict_json
from signoff.views.text import safe
from signoff.workflows.run_input import format_validation_error

if TYPE_CHECKING:
    from signoff.cli.main import CommandContext


def answer_response(args: argparse.Namespace) -> ToolApprovalResponse:
    """The answer the flags give (usage errors before connecting: exit 2)."""
    given = [args.json is not None, args.decline, args.cancel]
    if sum(given) != 1:
        raise CommandError("give exactly one of --json ANSWER, --decline or --cancel", 2)
    fields: dict[str, Any] = {"decline": args.decline, "cancel": args.cancel, "reason": args.reason}
    if args.json is not None:
        try:
            fields["answer"] = strict_json.loads(args.json)
        except NotStrictJSON as exc:
            raise CommandError(f"--json is not valid JSON: {exc}", 2) from None
    try:
        return ToolApprovalResponse(call_id=args.call, **fields)
    except ValidationError as exc:
        raise CommandError(format_validation_error(exc), 2) from None


async def cmd_answer(args: argparse.Namespace, ctx: CommandContext) -> int:
    """Answer (or decline, or dismiss) the question a run's MCP server asked in call CALL."""
    response = answer_response(args)
    if args.output_json:
        ctx = dataclasses.replace(ctx, console=Console(sys.stderr))
    who = Who.from_args(args, ctx.env)
    client = await ctx.connect()
    handle = client.get_workflow_handle(args.run)
    request = next((r for r in await run_client.pending(handle) if r.call_id == args.call), None)
    if request is None or not request.asks_input:
        what = "waits for approval: approve or deny it" if request else "is not waiting"
        raise CommandError(f"call {args.call!r} of run {args.run} {what}; nothing answered", 2)
    _check(ctx, request, response)
    run = await run_client.run_facts(client, args.run) if who.signs(request) else None
    sent = who.decision(request, response, run)
    ack = await run_client.submit(handle, [sent])
    if args.output_json:
        print_json(ack.model_dump(mode="json"))
    else:
        ctx.console.print(*render_ack(ack, ctx.console.style, ctx.console.width))
    return 0


def _check(ctx: CommandContext, request: ToolApprovalRequest, response: ToolApprovalResponse) -> None:
    """Show the question; refuse an answer that does not fit it (nothing sent)."""
    ctx.console.print(
        f"{safe(request.call_id)} ({safe(request.name)}): the MCP server asks {safe(request.message or '')!r}"
    )
    if request.url is not None:
        ctx.console.print(
            f"  it sends you to {safe(request.url_host or '?')} ({safe(request.url)}); "
            "nothing entered there passes through signoff"
        )
        if response.answer not in (None, True):
            raise CommandError("a URL-mode question takes --json true (consent), --decline or --cancel", 2)
        return
    if response.answer is not None and (problem := answer_schema_problem(request.input_schema, response.answer)):
        raise CommandError(f"{problem}; nothing answered", 2)


__all__ = ["answer_response", "cmd_answer"]
