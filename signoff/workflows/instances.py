"""What a run draws when it asks for calls: the value each request's `binding.request` derives from.

A signed approval authorises one execution of one *request instance* (CONTRACT v4): the
claim names `binding.request`, and the tool activity spends a signature once
(`signoff.activities.spent`). The loop is pure, so the run supplies the value, as it supplies
`now`: `<run id>/<history length>` at the workflow task that asks. The loop derives each
call's `request` from it and the call id (`signoff.loop.rounds.request_instance`).

Why the run id, not `workflow.uuid4()`. After `temporal workflow reset`, a signature made for
the old run must not fit the call the new run asks. Tried with the real `temporal` CLI against
the dev server (CLI 1.9.1, Server 1.32.0, Python SDK 1.35): a workflow drew `workflow.uuid4()`
and read `workflow.info().run_id` at its first task and at its second, then was reset.

- `--type LastWorkflowTask` (the second task re-run after the reset point): both draws gave
  the *same* uuid4 as before the reset, the one made in the re-run task included; the run id
  was the new run's in both, the replayed one before the reset point included.
- `--type FirstWorkflowTask`: both uuid4 draws and the run id were new.

So the SDK's seeded draws can repeat across a reset (a replayed event keeps the old seed,
and here even a re-run task did), and a request drawn from them could be approved again by the
old signature; the run id changes with every reset, for every event the new run replays. The
history length tells two turns of one run apart (it grows between workflow tasks; call ids are
unique within a turn). Continue-as-new also changes the run id, which is harmless: a pending
request carries its `binding` across, drawn once.

A worker replaying a reset run (after its cache dropped it) is given the run's own id, as the
run had it live. Temporal's `Replayer` is not: it gives a reset run the id its start event
names, its first run's, so a saved history of a reset run replays through
`signoff.runtime.replay` (`signoff replay`, `signoff.testing.replay_histories`), which gives
it its own (`as_its_own_run`; the history `reset` in tests/histories is one).

Behind `workflow.patched(DRAWS_REQUESTS)`: a request of a history recorded before it has no
`request`, and a decision its history holds, signed without one, must still fit it on replay.
Asked only for a turn with calls that need approval, so no other history gains the marker; a
run first asked while replaying an older history draws nothing for the rest of its run (the
patch is memoised), so its requests keep fitting the signatures made for them.
"""

from __future__ import annotations

from temporalio import workflow

DRAWS_REQUESTS = "signoff-draws-request-instances"


def draw(gated: object) -> str | None:
    """What this workflow task's requests derive from, when it has calls to ask about
    (`gated` non-empty); None for a run recorded before request instances, or no such call."""
    if not gated or not workflow.patched(DRAWS_REQUESTS):
        return None
    info = workflow.info()
    return f"{info.run_id}/{info.get_current_history_length()}"
