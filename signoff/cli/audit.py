"""`signoff audit RUN [--verify] [--json] [--file trail.json]`: the run's decisions, checked.

The trail comes from the run's result once it completed, else from its `audit` query
(or, with `--file`, from an export made with `--json`). `--verify` recomputes the hash
chain, holds it up to the workflow history, and checks each verified record against the
signed decisions in the history with the workers' keys (`SIGNOFF_APPROVER_KEYS`,
`cli.audit_check`); exit code 1 when the trail does not hold or cannot be vouched for.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError
from temporalio.service import RPCError

from signoff.approval.audit import GENESIS, is_elided
from signoff.approval.requests import ApprovalRecord
from signoff.cli.audit_check import check_against_history, check_chain, check_signatures
from signoff.cli.calls import row
from signoff.cli.history import RunEvidence, StartedChild, run_chain
from signoff.cli.render import render_record
from signoff.cli.style import Style
from signoff.contract import AgentRunResult
from signoff.errors import CommandError, ConfigError
from signoff.operator import run_client
from signoff.runtime.settings import read_approver_keys
from signoff.views.text import safe, value_lines, votes_text
from signoff.workflows.queries import AuditTrail

if TYPE_CHECKING:
    from signoff.approval.identity import ApproverKeys
    from signoff.cli.main import CommandContext


async def _from_run(client: Client, workflow_id: str) -> AuditTrail:
    handle = client.get_workflow_handle(workflow_id)
    try:
        if (await handle.describe()).status == WorkflowExecutionStatus.COMPLETED:
            records = AgentRunResult.model_validate(await handle.result()).approvals
            return AuditTrail(records=records, head=records[-1].hash if records else GENESIS)
    except (RPCError, WorkflowFailureError) as exc:
        raise CommandError(
            run_client.failure_text(exc)
            if isinstance(exc, WorkflowFailureError)
            else run_client.rpc_text(exc, workflow_id)
        ) from None
    return await run_client.audit_trail(handle)


def _from_file(path: str, workflow_id: str) -> AuditTrail:
    try:
        data = json.loads(Path(path).read_text())
        trail = AuditTrail.model_validate(data)
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (ValueError, ValidationError) as exc:
        raise CommandError(f"{path} is not an audit trail exported by `signoff audit RUN --json`: {exc}") from None
    exported = data.get("workflow_id") if isinstance(data, dict) else None
    if exported not in (None, workflow_id):
        raise CommandError(f"{path} is the trail of run {exported!r}, not of {workflow_id!r}", 2)
    return trail


def render_trail(records: list[ApprovalRecord], style: Style, width: int | None) -> list[str]:
    """Each record: the decision, the call whole (or its digest when elided), who, when, hashes."""
    if not records:
        return ["No decision recorded yet."]
    lines: list[str] = []
    for index, record in enumerate(records):
        lines.append(f"record {index}  {safe(record.name)}  {render_record(record, style)}")
        elided = is_elided(record.arguments)
        lead = " " * 15
        lines += (
            row("arguments", f"elided; digest {record.arguments_digest}")
            if elided
            else row("arguments", value_lines(record.arguments, width, len(lead), lead))
        )
        if record.edited_arguments is not None:
            lines += row("ran with", value_lines(record.edited_arguments, width, len(lead), lead))
        lines += row(
            "outcome",
            f"{record.outcome or ('approved' if record.approved else 'denied')}"
            f"{'; timed out' if record.timed_out else ''}",
        )
        verified = "verified" if record.verified else "not verified"
        lines += row("approver", f"{safe(record.approver or '-')} ({verified})")
        if record.votes:
            lines += row("votes", votes_text(record.votes))
        lines += row("grant", safe(record.grant_id)) if record.grant_id else []
        lines += row("reason", safe(record.reason)) if record.reason else []
        lines += row("requested", str(record.requested_at or "-")) + row("decided", str(record.decided_at or "-"))
        lines += row(
            "digests",
            [
                f"arguments {record.arguments_digest}",
                f"{' ' * 15}call      {record.call_digest}",
                f"{' ' * 15}policy    {record.policy_digest}",
            ],
        )
        lines += row("hash", record.hash)
    return lines


async def cmd_audit(args: argparse.Namespace, ctx: CommandContext) -> int:
    """Print the trail (or its JSON); with --verify, check it and say whether it holds."""
    client = await ctx.connect() if (args.verify or not args.file) else None
    trail = _from_file(args.file, args.run) if args.file else await _from_run(client, args.run)  # type: ignore[arg-type]
    console = ctx.console
    if args.json:
        data = {"workflow_id": args.run, **trail.model_dump(mode="json")}
        console.print(json.dumps(data, indent=2, ensure_ascii=True))
    else:
        console.print(*render_trail(trail.records, console.style, console.width))
    if not args.verify:
        if client is not None:
            console.print(*render_sub_agents(args.run, _children(await run_chain(client, args.run))))
        return 0
    assert client is not None
    try:
        keys = read_approver_keys(ctx.env)
    except ConfigError as exc:
        raise CommandError(str(exc), 2) from None
    verdict = TreeVerdict()
    await _verify_tree(client, args.run, trail, keys, verdict, [])
    say = console.print if not args.json else _err
    if verdict.problems:
        for problem in verdict.problems:
            say(console.style.paint(f"does not hold: {safe(problem)}", "red"))
        raise CommandError(f"the audit trail does not hold ({len(verdict.problems)} problem(s))")
    if verdict.unverifiable:
        for note in verdict.unverifiable:
            say(console.style.paint(f"not verifiable: {safe(note)}", "yellow"))
        count = len(verdict.unverifiable)
        raise CommandError(f"the audit trail cannot be vouched for: {count} thing(s) not verifiable")
    message = (
        f"the audit trail holds: {verdict.records} record(s); {verdict.checked} approved tool call(s) checked "
        f"against the history of {verdict.runs} run(s)"
    )
    if verdict.trees > 1:
        message += f" of {verdict.trees} workflows (this one and its sub-agents' child runs)"
    if verdict.proven:
        message += f"; {verdict.proven} verified approval(s) signed"
    if verdict.attributed:
        message += (
            f"; {verdict.attributed} record(s) without a verified approver are attribution only "
            "(anyone who could signal the run could have sent them)"
        )
    say(console.style.paint(message, "green"))
    return 0


@dataclass
class TreeVerdict:
    """What `--verify` found over a run and its sub-agents' runs (each problem names the run)."""

    problems: list[str] = field(default_factory=list)
    unverifiable: list[str] = field(default_factory=list)
    records: int = 0
    checked: int = 0
    runs: int = 0
    trees: int = 0
    """Workflows checked: the run's and each sub-agent child run's below it."""
    proven: int = 0
    attributed: int = 0


MAX_TREE_RUNS = 1_000
"""The most sub-agent child runs one `--verify` walks (the rest are said to be unchecked)."""


async def _verify_tree(
    client: Client,
    workflow_id: str,
    trail: AuditTrail,
    keys: ApproverKeys | None,
    verdict: TreeVerdict,
    path: list[str],
) -> None:
    """Check `workflow_id`'s trail against its history and signatures, then each child run its
    history says it started (a sub-agent's call), with that child's own trail and history."""
    where = "" if not path else f"sub-agent run {' › '.join([*path, workflow_id])}: "
    chain = await run_chain(client, workflow_id)
    against, checked = check_against_history(trail.records, chain)
    signatures = check_signatures(trail.records, chain, workflow_id, keys)
    verdict.problems += [where + p for p in check_chain(trail.records, trail.head) + against + signatures.problems]
    verdict.unverifiable += [where + n for n in signatures.unverifiable]
    verdict.records += len(trail.records)
    verdict.checked += checked
    verdict.runs += len(chain)
    verdict.trees += 1
    verdict.proven += signatures.proven
    verdict.attributed += signatures.attributed
    for child in _children(chain):
        below = f"sub-agent run {' › '.join([*path, workflow_id, child.workflow_id])}"
        if verdict.trees >= MAX_TREE_RUNS:
            verdict.unverifiable.append(f"{below}: not checked (more than {MAX_TREE_RUNS} child runs)")
            continue
        try:
            their = await run_chain(client, child.workflow_id)
            if not their or their[0].run_id != child.chain_id:
                first = their[0].run_id if their else "none"
                verdict.unverifiable.append(
                    f"{below}: its chain now begins at run {first}, not at {child.chain_id}, the run its "
                    "parent started (reset, or its id reused): the child the parent waited on cannot be read"
                )
                continue
            child_trail = await _from_run(client, child.workflow_id)
        except CommandError as exc:
            verdict.unverifiable.append(f"{below}: cannot be read ({exc})")
            continue
        await _verify_tree(client, child.workflow_id, child_trail, keys, verdict, [*path, workflow_id])


def _children(chain: list[RunEvidence]) -> list[StartedChild]:
    return [child for run in chain for child in run.children]


def render_sub_agents(workflow_id: str, children: list[StartedChild]) -> list[str]:
    """Each sub-agent call of the run and the child run it started: its workflow id and chain
    (the first run id its approval records and signatures are bound to), as the history says."""
    if not children:
        return []
    lines = ["", "sub-agent calls (each child run has its own audit trail: signoff audit CHILD)"]
    prefix = f"{workflow_id}--"
    for child in children:
        call = child.workflow_id.removeprefix(prefix) if child.workflow_id.startswith(prefix) else "?"
        lines.append(f"call {safe(call)}  child {safe(child.workflow_id)}  chain {safe(child.chain_id)}")
    return lines


def _err(line: str) -> None:
    """With --json the verdict goes to stderr, so standard output stays the export."""
    print(line, file=sys.stderr)
