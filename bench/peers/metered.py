"""Billable Actions per run, the history's count checked against the dev server's own.

For each system and kind of run, `n` runs one after another with nothing else running, between
two settled readings of the server's `action` counter (`bench.actions`). What the server counted
must be what the histories show (`bench.actions.billable_actions`, plus the `TemporalChangeVersion`
upserts the docs exempt and the server does not), apart from activity heartbeats, which no
history records: those are added to each run's billable Actions.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from bench.actions import HEARTBEAT, settled
from bench.common import BenchError
from bench.peers.systems import RUN, RUNS, Context


async def metered(ctx: Context, run: str, n: int, metrics_url: str) -> dict[str, Any]:
    """`n` runs of kind `run`: their Actions per run by the history and by the server."""
    before = await settled(metrics_url)
    samples, by_kind = [], Counter[str]()
    for _ in range(n):
        samples.append(await RUN[run](ctx))
        by_kind.update(ctx.last_actions)
    server = await settled(metrics_url) - before
    history = sum(s["actions"] for s in samples)
    exempt = sum(s["exempt_upserts"] for s in samples)
    heartbeats = server[HEARTBEAT]
    if sum(server.values()) - heartbeats != history + exempt:
        raise BenchError(
            f"{ctx.kind} {run}: the server counted {dict(server)} Actions over {n} runs, the histories "
            f"{history:.0f} billable + {exempt:.0f} exempt upserts ({dict(by_kind)}) and {heartbeats} heartbeats"
        )
    return {
        "runs": n,
        "history": history / n,
        "heartbeats": heartbeats / n,
        "billable": (history + heartbeats) / n,
        "history_by_kind": {k: v / n for k, v in sorted(by_kind.items())},
        "server_by_type": {k: v / n for k, v in sorted(server.items())},
        "exempt_upserts": exempt / n,
    }


async def metered_all(contexts: dict[str, Context], n: int, metrics_url: str) -> dict[str, dict[str, Any]]:
    """`metered` for every system and kind of run."""
    return {kind: {run: await metered(ctx, run, n, metrics_url) for run in RUNS} for kind, ctx in contexts.items()}
