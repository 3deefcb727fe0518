"""A resumed transcript's start (`signoff.prepare`): snapshot the agent, gate its open calls.

A run started from `messages` whose last assistant message has unanswered calls must
decide which of them need approval before anything else happens; that takes the
snapshot, so it is done here rather than by the first model turn.
"""

from __future__ import annotations

from signoff.activities.agents import ServedAgents
from signoff.activities.chat import check_requester
from signoff.activities.heartbeat import heartbeating
from signoff.activities.models import PrepareInput, PrepareOutput
from signoff.agent.gate import gated_call_ids
from signoff.tools.preview.gather import previews


async def prepare_run(served: ServedAgents, input: PrepareInput) -> PrepareOutput:
    async with heartbeating():  # listing MCP servers may start their processes
        taken = await served.take(input.agent, input.transcript)
        check_requester(taken.snapshot, input.requester)
        gated = gated_call_ids(taken.snapshot, taken.registry, input.open_calls)
        shown = await previews(taken.registry, input.open_calls, gated)
    return PrepareOutput(
        snapshot=taken.snapshot,
        snapshot_digest=taken.digest,
        gated=gated,
        previews=shown,
        unavailable=list(taken.unavailable),
    )
