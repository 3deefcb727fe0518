"""`signoff approve | deny RUN [CALL] [--all] [--digest HEX]`: decide what the operator saw.

Each decision is sent with the digest of the call as this operator was shown it
(`cli.shown`), as an explicit list of calls, never `"*"`. A call not shown before is
printed whole first, then decided (named, no terminal), confirmed (a terminal), or
refused (`approve RUN` with nobody to confirm). A call that changed since it was shown is
refused by the run; the CLI says so and shows it as it is now.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from signoff.approval.requests import GrantMatch, GrantSpec, ToolApprovalRequest, ToolApprovalResponse, shown_grant
from signoff.cli.binding import CallToDecide, CannotDecide, Plan, plan
from signoff.cli.bulk import decide_by_query
from signoff.cli.by_signal import send_by_signal, shown_responses
from signoff.cli.calls import render_ack
from signoff.cli.input import terminal_asker
from signoff.cli.shown import show
from signoff.cli.style import Console, print_json
from signoff.cli.who import Who
from signoff.errors import CommandError, NotStrictJSON, Unanswered, UpdateNotTaken
from signoff.operator import run_client
from signoff.operator.edits import check_edit
from signoff.operator.run_client import Handle
from signoff.text import strict_json
from signoff.views.text import safe, value_lines

if TYPE_CHECKING:
    from signoff.cli.main import CommandContext


def decision_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The response fields the flags give; usage errors are found before connecting."""
    _check_usage(args)
    return answer_fields(args, args.command == "approve")


def answer_fields(args: argparse.Namespace, approved: bool) -> dict[str, Any]:
    """`approved`, `reason`, edited `arguments` and `grant` from the flags (`--edit`, `--grant`...)."""
    edit = getattr(args, "edit", None)
    try:
        arguments = strict_json.loads(edit) if edit is not None else None
    except NotStrictJSON as exc:
        raise CommandError(f"--edit is not valid JSON: {exc}", 2) from None
    if edit is not None and not isinstance(arguments, dict):
        raise CommandError('--edit must be a JSON object, e.g. \'{"command": "ls"}\'', 2)
    fields: dict[str, Any] = {"approved": approved, "reason": args.reason, "arguments": arguments}
    if getattr(args, "grant", None):
        ttl: timedelta | None = args.grant_ttl
        fields["grant"] = GrantSpec(
            match=args.grant, ttl_seconds=ttl.total_seconds() if ttl else None, max_uses=args.grant_uses
        )
    return fields


def _check_usage(args: argparse.Namespace) -> None:
    problems = [
        (args.query is None and args.run is None, "name the RUN, or choose runs with --query"),
        (args.query is not None and args.run is not None, "--query chooses the runs: give no RUN with it"),
        (args.query is None and (args.tool or args.older_than), "--tool and --older-than go with --query"),
        (bool(args.call and args.all), "give a CALL id or --all, not both"),
        (bool(args.digest and (args.all or args.query)), "--digest binds one call: name it instead of --all/--query"),
        (bool(args.all and args.query), "--query decides every call it lists: --all goes with a RUN"),
        (
            getattr(args, "edit", None) is not None and (args.all or args.query),
            "--edit applies to one call: name it instead of --all/--query",
        ),
        (
            getattr(args, "grant", None) == GrantMatch.SIMILAR.value and bool(args.all or args.query),
            "--grant similar approves one call and its pattern: name the CALL (never --all/--query)",
        ),
        (
            bool(getattr(args, "grant_ttl", None) or getattr(args, "grant_uses", None))
            and not getattr(args, "grant", None),
            "--grant-ttl and --grant-uses go with --grant",
        ),
    ]
    for wrong, message in problems:
        if wrong:
            raise CommandError(message, 2)


async def cmd_decide(args: argparse.Namespace, ctx: CommandContext) -> int:
    """`approve` / `deny` in one run (or, with --query, in many: `cli.bulk`)."""
    fields = decision_fields(args)
    if args.json:  # the answer alone on standard output; what is shown to a person goes to standard error
        ctx = dataclasses.replace(ctx, console=Console(sys.stderr))
    who = Who.from_args(args, ctx.env)
    if args.query is not None:
        return await decide_by_query(args, ctx, fields, who)
    client = await ctx.connect()
    handle = client.get_workflow_handle(args.run)
    try:
        pending = await run_client.pending(handle)
    except Unanswered as silent:  # paused, or no worker: only what the operator was shown can be decided
        responses = shown_responses(ctx, args, fields, who, str(silent))
        return await send_by_signal(ctx, args, handle, responses, str(silent))
    try:
        chosen = plan(args.run, pending, ctx.shown.digests(args.run), args.call, args.all, args.digest)
    except CannotDecide as refusal:
        show(ctx, args.run, refusal.show, record=ctx.console.tty)
        raise CommandError(str(refusal), refusal.code) from None
    if fields["arguments"] is not None:
        await _check_edit(ctx, handle, chosen, fields["arguments"])
    targets = chosen.targets + _unseen(ctx, args, chosen)
    if not targets:
        raise CommandError(f"nothing decided in run {args.run}: no pending call was shown to you before", 2)
    run = await run_client.run_facts(client, args.run) if any(who.signs(t.request) for t in targets) else None
    try:
        responses = [who.decision(t.request, _response(t.call_id, t.digest, fields, t.request), run) for t in targets]
    except CommandError:  # nothing signed: the run's request is not what it shows, or not a run served
        await _explain_changed(ctx, handle, targets)
        raise
    if run is not None:
        ctx.console.print(f"signed for run {safe(run.workflow_id)}: {safe(run.describe())}")
    try:
        ack = await run_client.submit(handle, responses)
    except UpdateNotTaken as exc:  # paused, too many updates in flight, no worker: a signal always lands
        return await send_by_signal(ctx, args, handle, responses, str(exc))
    except CommandError:
        await _explain_changed(ctx, handle, targets)
        raise
    if args.json:
        print_json(ack.model_dump(mode="json"))
    else:
        ctx.console.print(*render_ack(ack, ctx.console.style, ctx.console.width))
    return 0


async def _check_edit(ctx: CommandContext, handle: Handle, chosen: Plan, edited: dict[str, Any]) -> None:
    """Refuse an edit that does not fit the tool's schema; show what will run instead of what was asked."""
    request = next((t.request for t in chosen.targets if t.request), None) or next(iter(chosen.unseen), None)
    if request is None:
        return  # a call bound by digest that is not pending: the run refuses it, saying why
    await check_edit(handle, request.name, edited)
    ctx.console.print(
        ctx.console.style.paint(
            f"{safe(request.call_id)} will run {safe(request.name)} with the edited arguments:", "bold"
        ),
        *value_lines(edited, ctx.console.width, 4, "    "),
    )


def _unseen(ctx: CommandContext, args: argparse.Namespace, chosen: Plan) -> list[CallToDecide]:
    """Print the calls not shown before; the ones the operator (or the command) decides now."""
    if not chosen.unseen:
        return []
    verb, run = args.command, args.run
    show(ctx, run, chosen.unseen, "Not shown to you before:", record=ctx.console.tty)
    now = [CallToDecide(r.call_id, r.arguments_digest, r, "now") for r in chosen.unseen]
    ask = terminal_asker(ctx.console.write)
    ids = ", ".join(safe(r.call_id) for r in chosen.unseen)
    if chosen.mode == "all":
        if ask is not None and ask(f"Also {verb} {ids} as shown above?"):
            return now
        ctx.console.print(f"not decided (not shown to you before): {ids}")
        return []
    if ask is None and chosen.mode == "named":
        return now  # named on a command line, and printed whole for the record
    if ask is None:
        only = chosen.unseen[0]
        raise CommandError(
            f"call {only.call_id!r} was not shown to you before, and nobody is at a terminal to confirm it: "
            f"nothing decided. It is printed above; to {verb} it as printed, name it: "
            f"signoff {verb} {run} {only.call_id} --digest {only.arguments_digest}",
            2,
        )
    edited = " with the edited arguments" if getattr(args, "edit", None) is not None else ""
    if (chosen.mode == "named" and args.yes) or ask(f"{verb.capitalize()} {ids} as shown above{edited}?"):
        return now
    raise CommandError("nothing decided", 1)


async def _explain_changed(ctx: CommandContext, handle: Handle, targets: Sequence[CallToDecide]) -> None:
    """After a refusal: show, whole, each call that is no longer what the operator saw."""
    try:
        now = {r.call_id: r for r in await run_client.pending(handle)}
    except CommandError:
        return
    changed = [now[t.call_id] for t in targets if t.call_id in now and now[t.call_id].arguments_digest != t.digest]
    for request in changed:
        ctx.console.print(
            ctx.console.style.paint(
                f"{safe(request.call_id)} changed since you were shown it: nothing was decided. It is now:",
                "red",
                "bold",
            )
        )
        show(ctx, handle.id, [request], record=ctx.console.tty)
        ctx.console.print(
            f"To decide it as it is now: signoff approve|deny {safe(handle.id)} {safe(request.call_id)} "
            f"--digest {request.arguments_digest}"
        )


def _response(
    call_id: str, digest: str | None, fields: dict[str, Any], request: ToolApprovalRequest | None
) -> ToolApprovalResponse:
    """The decision on one call; a similar grant names the pattern the call showed."""
    response = ToolApprovalResponse(call_id=call_id, arguments_digest=digest, **fields)
    if request is not None and response.grant is not None:
        response = response.model_copy(update={"grant": shown_grant(response.grant, request)})
    return response
