"""`signoff keys new` and `signoff sign RUN CALL`: a person's signing key, and a signed decision.

`keys new` makes a key pair (Ed25519 by default), writes the private key (0600, never over an
existing file) and prints its public JWKS entry, with `kid`, `sub` and `groups`, for the
workers' `SIGNOFF_APPROVER_KEYS` (or adds it to a JWKS file with `--add-to`). A key with
`sub` signs only as that subject and its groups; `--service` marks a key that signs for the
people a service authenticated (the inbox). `sign` prints the JSON of a decision on one
pending call, signed with `SIGNOFF_APPROVER_KEY_FILE` for exactly that call, to paste into
the Web UI (Send an Update, `submit_tool_approval`) or hand to any Temporal client.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from signoff.approval.names import name_problem, same_name
from signoff.approval.requests import ToolApprovalResponse, shown_grant
from signoff.approval.signatures import DelegationClaim
from signoff.cli.decide import answer_fields
from signoff.cli.who import Who
from signoff.config.environment import APPROVER_KEY_FILE_ENV, APPROVER_KID_ENV, Environment
from signoff.errors import CommandError, SigningRefused, UsageError
from signoff.operator import run_client
from signoff.signing.derived import decision_claim_for
from signoff.signing.keys import new_key_pair
from signoff.views.text import safe
from signoff.workflows.run_input import format_validation_error

if TYPE_CHECKING:
    from signoff.cli.main import CommandContext


def _write_private(path: Path, pem: bytes) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        raise CommandError(f"{path} exists: choose another --out (a key is never overwritten)", 2) from None
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc.strerror or exc}", 1) from None
    with os.fdopen(fd, "wb") as file:
        file.write(pem)


def _add_to(path: Path, entry: dict[str, Any]) -> None:
    try:
        document = json.loads(path.read_text()) if path.exists() else {"keys": []}
    except (OSError, ValueError) as exc:
        raise CommandError(f"cannot read the JWKS {path}: {exc}", 1) from None
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise CommandError(f'{path} is not a JWKS ({{"keys": [...]}})', 1)
    if any(isinstance(k, dict) and k.get("kid") == entry["kid"] for k in document["keys"]):
        raise CommandError(f"{path} already has a key {entry['kid']!r}: choose another --kid", 2)
    document["keys"].append(entry)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(document, indent=2) + "\n")
    temporary.replace(path)


def cmd_keys(args: argparse.Namespace) -> int:
    """`keys new`: errors go to stderr (1 failed, 2 usage)."""
    groups = [g.strip() for value in args.groups for g in value.split(",") if g.strip()]
    try:
        pem, entry = new_key_pair(args.sub, groups, args.kid, args.type, args.service)
        out = Path(args.out)
        if args.add_to and Path(args.add_to).resolve() == out.resolve():
            raise CommandError("--add-to names the private key's own file", 2)
        _write_private(out, pem)
        if args.add_to:
            _add_to(Path(args.add_to), entry)
    except UsageError as exc:
        print(f"signoff: {exc}", file=sys.stderr)
        return 2
    except CommandError as exc:
        print(f"signoff: {exc}", file=sys.stderr)
        return exc.code
    print(json.dumps(entry, indent=2))
    where = f"added to {args.add_to}" if args.add_to else "add it to the workers' SIGNOFF_APPROVER_KEYS JWKS"
    print(
        f"signoff: wrote the private key to {out} (0600); the public entry above: {where}.\n"
        f"signoff: to sign with it: export {APPROVER_KEY_FILE_ENV}={out.resolve()} {APPROVER_KID_ENV}={entry['kid']}",
        file=sys.stderr,
    )
    return 0


MAX_DELEGATION = timedelta(days=366)


def _instant(text: str, flag: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise CommandError(f"{flag}: {text!r} is not an ISO 8601 time (2026-12-24T09:00:00Z)", 2) from None
    if moment.tzinfo is None:
        raise CommandError(f"{flag}: {text!r} names no time zone (add Z or +01:00)", 2)
    return moment


def cmd_delegate(args: argparse.Namespace, env: Environment) -> int:
    """Print a delegation token signed with your key: `--to`'s decisions count as your vote on
    `--tools` (default every tool) from `--from` until `--until`."""
    start, until = _instant(args.start, "--from"), _instant(args.until, "--until")
    now = datetime.now(UTC)
    if not start < until or until <= now or until - start > MAX_DELEGATION:
        raise CommandError("--until must be after --from and after now, at most 366 days after --from", 2)
    tools = tuple(t for item in args.tools for t in item.split(",") if t) or None
    if (problem := name_problem("delegate", args.to)) is not None:
        raise CommandError(problem, 2)
    try:
        claim = DelegationClaim(delegate=args.to, tools=tools)
    except ValidationError as exc:
        raise CommandError(format_validation_error(exc), 2) from None
    who = Who.from_args(args, env)
    if who.key is None:
        raise CommandError(f"no key to sign with: set {APPROVER_KEY_FILE_ENV} (make one with `signoff keys new`)", 2)
    if who.subject is not None and same_name(who.subject, args.to):
        raise CommandError("a delegation to yourself counts for nothing", 2)
    try:
        token = who.key.sign(claim, who.subject, ttl=until - now, now=now, not_before=start)
    except UsageError as exc:
        raise CommandError(str(exc), 2) from None
    print(token)
    scope = ", ".join(tools) if tools else "every tool"
    print(
        f"signoff: {safe(args.to)} may decide for you on {safe(scope)} from {start.isoformat()} until "
        f'{until.isoformat()}: their decision items carry it as "delegation"',
        file=sys.stderr,
    )
    return 0


def _respond_fields(args: argparse.Namespace) -> dict[str, Any]:
    """`--respond TEXT`: answer the call with TEXT instead of running it (no approval, no edit, no grant)."""
    if args.deny or args.edit is not None or args.grant:
        raise CommandError("--respond answers the call instead of running it: not with --deny, --edit or --grant", 2)
    try:
        ToolApprovalResponse.responding("-", args.respond)
    except ValidationError as exc:
        raise CommandError(f"--respond: {format_validation_error(exc)}", 2) from None
    return {"respond": args.respond, "reason": args.reason}


async def cmd_sign(args: argparse.Namespace, ctx: CommandContext) -> int:
    """Print `{"call_id", "approved", "arguments_digest", ..., "token"}` for one pending call."""
    fields = _respond_fields(args) if args.respond is not None else answer_fields(args, approved=not args.deny)
    who = Who.from_args(args, ctx.env)
    client = await ctx.connect()
    handle = client.get_workflow_handle(args.run)
    request = next((r for r in await run_client.pending(handle) if r.call_id == args.call), None)
    if request is None:
        raise CommandError(f"no pending call {args.call!r} in run {args.run}", 1)
    if request.binding is None:
        raise CommandError(f"call {args.call!r} has no binding to sign (a run begun before signed decisions)", 1)
    run = await run_client.run_facts(client, args.run)
    response = ToolApprovalResponse(call_id=request.call_id, arguments_digest=request.arguments_digest, **fields)
    response = response.model_copy(update={"grant": shown_grant(response.grant, request)})
    try:
        claim = decision_claim_for(run, request, response, who.served)
    except SigningRefused as exc:
        raise CommandError(str(exc), 1) from None
    token = who.sign(claim, args.ttl or timedelta(hours=1))
    decision = {**response.model_dump(mode="json", exclude_none=True), "token": token}
    if who.subject:
        decision["approver"] = who.subject
    ctx.console.print(json.dumps(decision, ensure_ascii=True))
    print(f"signoff: signed for run {safe(args.run)}: {safe(run.describe())}", file=sys.stderr)
    print(
        "signoff: paste it into the Web UI: Send an Update, name submit_tool_approval "
        "(or: temporal workflow update execute ... --input '<it>')",
        file=sys.stderr,
    )
    return 0
