"""`signoff replay`: would the installed code resume these runs? (before a deploy, in CI)

    signoff replay saved/*.json                         # histories saved with `temporal workflow show -o json`
    signoff replay --query 'SignoffStatus="AwaitingApproval"' --save saved/   # the parked runs, from the server

Exit codes: 0 every run would resume; 1 some would not; 2 usage (no history given, a
file that is not a history, a query the server refuses); 3 some could not be checked (the
history's payloads need codec keys or a payload store this process lacks) and none failed.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from temporalio.client import Client, WorkflowHistory
from temporalio.service import RPCError

from signoff.contract import WORKFLOW_TYPE
from signoff.errors import CommandError
from signoff.runtime.fingerprint import workflow_code
from signoff.runtime.replay import (
    HistoryFileError,
    HistoryReplayer,
    ReplayOutcome,
    ReplayVerdict,
    event_label,
    load_history,
    replay_data_converter,
)

if TYPE_CHECKING:
    from signoff.cli.main import CommandContext

EXIT_DIVERGES, EXIT_UNREADABLE = 1, 3
DEFAULT_LIMIT = 1000
FETCHING = 8  # histories fetched at once
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def add_replay_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "replay", parents=[common], help="replay saved histories against the installed code: would these runs resume?"
    )
    p.add_argument(
        "histories",
        nargs="*",
        metavar="HISTORY.json",
        help="histories saved with `temporal workflow show --workflow-id ID --output json`",
    )
    p.add_argument(
        "--query",
        metavar="VISIBILITY_QUERY",
        help=f"also fetch the runs this query matches (only {WORKFLOW_TYPE} runs), e.g. "
        f"'SignoffStatus=\"AwaitingApproval\"'",
    )
    p.add_argument("--limit", type=_count, default=DEFAULT_LIMIT, help=f"with --query: at most N ({DEFAULT_LIMIT})")
    p.add_argument("--save", metavar="DIR", help="with --query: also write each fetched history to DIR")
    p.add_argument("--json", action="store_true", help="print one JSON object per run")
    p.add_argument("--verbose", action="store_true", help="print the SDK's error and the events around it")


def _count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of runs, 1 or more")
    return int(text)


async def cmd_replay(args: argparse.Namespace, ctx: CommandContext) -> int:
    """Replay each history; print per run whether it would resume, and why not."""
    if not args.histories and not args.query:
        raise CommandError("give histories to replay (HISTORY.json ...) or --query to fetch them from the server", 2)
    if args.save and not args.query:
        raise CommandError("--save writes the histories --query fetches; give --query too", 2)
    try:
        sources = [(path, load_history(path)) for path in args.histories]
    except HistoryFileError as exc:
        raise CommandError(str(exc), 2) from None
    if args.query:
        sources += await _fetch(await ctx.connect(), args.query, args.limit, args.save)
    code = workflow_code()
    if not args.json:
        ctx.console.print(
            f"installed workflow code {code.fingerprint[:12]} ({len(code.modules)} modules); "
            f"replaying {len(sources)} run(s)"
        )
    settings = ctx.settings
    replayer = HistoryReplayer(replay_data_converter(settings.payload_store, settings.codec_keys), settings.codec_keys)
    histories = dict(sources)
    outcomes = []
    async for outcome in replayer.replay(sources):
        outcome = dataclasses.replace(outcome, command=_command(outcome, args.histories))
        outcomes.append(outcome)
        lines = [json.dumps(outcome.to_json())] if args.json else _lines(outcome, ctx)
        if args.verbose and not args.json and not outcome.resumes:
            lines += _verbose(outcome, histories[outcome.source])
        ctx.console.print(*lines)
    if not args.json:
        ctx.console.print(_summary(outcomes))
    if any(o.verdict is ReplayVerdict.DIVERGES for o in outcomes):
        return EXIT_DIVERGES
    return EXIT_UNREADABLE if any(o.verdict is ReplayVerdict.UNREADABLE for o in outcomes) else 0


async def _fetch(client: Client, query: str, limit: int, save: str | None) -> list[tuple[str, WorkflowHistory]]:
    full = f'WorkflowType="{WORKFLOW_TYPE}" AND ({query})'
    try:
        found = [e async for e in client.list_workflows(full, limit=limit)]
    except RPCError as exc:
        raise CommandError(f"the server refused the query {full!r}: {exc.message}", 2) from None
    gate = asyncio.Semaphore(FETCHING)

    async def one(workflow_id: str, run_id: str) -> tuple[str, WorkflowHistory]:
        async with gate:
            history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
        if save:
            folder = Path(save)
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{_UNSAFE.sub('_', workflow_id)}__{run_id}.json").write_text(history.to_json())
        return f"{workflow_id}/{run_id}", history

    try:
        return list(await asyncio.gather(*(one(e.id, e.run_id or "") for e in found)))
    except RPCError as exc:
        raise CommandError(f"cannot fetch a history: {exc.message}") from None


def _command(outcome: ReplayOutcome, files: Sequence[str]) -> str | None:
    """What shows the problem: the replay of the file again, verbose; or the run's history."""
    if outcome.resumes:
        return None
    if outcome.source in files:
        return f"signoff replay --verbose {shlex.quote(outcome.source)}"
    show = f"temporal workflow show --workflow-id {shlex.quote(outcome.workflow_id)} --run-id {outcome.run_id}"
    return show + " --output json"


def _lines(outcome: ReplayOutcome, ctx: CommandContext) -> list[str]:
    style = ctx.console.style
    where = f"{outcome.source}  (workflow {outcome.workflow_id}, run {outcome.run_id})"
    if outcome.resumes:
        return [f"{style.sym('yes', 'green')} {where}: resumes ({outcome.events} events replayed)"]
    mark = style.sym("no", "red") if outcome.verdict is ReplayVerdict.DIVERGES else style.sym("warn", "yellow")
    head = style.paint(
        outcome.verdict.value.upper(), "bold", "red" if outcome.verdict is ReplayVerdict.DIVERGES else "yellow"
    )
    lines = [f"{mark} {where}: {head}", f"    {outcome.reason}"]
    if outcome.command:
        event = (
            f" (event {outcome.event_id})" if outcome.event_id and "temporal workflow show" in outcome.command else ""
        )
        lines.append(f"    shows it: {outcome.command}{event}")
    return lines


def _verbose(outcome: ReplayOutcome, history: WorkflowHistory) -> list[str]:
    lines = ["    the SDK said:", *[f"      {line}" for line in (outcome.error or "").splitlines()[:20]]]
    if outcome.event_id:
        lines.append("    the history around it:")
        for event in history.events:
            if abs(event.event_id - outcome.event_id) <= 3:
                marker = ">" if event.event_id == outcome.event_id else " "
                lines.append(f"    {marker} {event_label(event, event.event_id)}")
    return lines


def _summary(outcomes: Sequence[ReplayOutcome]) -> str:
    counts = {v: sum(o.verdict is v for o in outcomes) for v in ReplayVerdict}
    return (
        f"{counts[ReplayVerdict.RESUMES]} would resume, {counts[ReplayVerdict.DIVERGES]} would not, "
        f"{counts[ReplayVerdict.UNREADABLE]} could not be checked"
    )
