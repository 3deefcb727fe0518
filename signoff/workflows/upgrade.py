"""When a pinned run moves to its deployment's new version (Worker Versioning, "Upgrade on
Continue-as-New").

`AgentRun` is pinned: each run stays on the Worker Deployment version it started on. When the
server's target version for it changes (the deployment's current version, or the ramping one
for the runs the ramp selects), its next workflow task says so
(`workflow.info().is_target_worker_deployment_version_changed()`, recorded in history, so a
replay reads the same), and the run continues as new with `AUTO_UPGRADE`: the new run, carrying
the whole state (`ContinuedRun`: pending calls, deadlines, reminders, grants, votes, the audit
chain), starts on the target version and is pinned there.

It moves only at a safe point: between rounds, or while it waits for people with no call of the
round ready to run. A call approved (or needing no approval) runs first, on the version that
showed it to the approver; never is an approval carried to other code before its execution.

A parked run learns of the change only when something gives it a workflow task (a decision, a
deadline, reminder or escalation timer, any signal or accepted update); until then it stays
where it is. Unversioned workers never see the flag: nothing here happens without
`SIGNOFF_DEPLOYMENT_NAME`/`SIGNOFF_BUILD_ID`.

The move is behind `workflow.patched(UPGRADES)`, asked only when the run would move, so no other
history gains a marker; a history recorded by code without this step (a pinned run that saw the
flag and stayed) replays as it ran, since the patch is then memoised false for the whole run,
wherever it is first asked (also in a wait condition, where it is asked so that a run woken by
anything moves at once).
"""

from __future__ import annotations

from temporalio import workflow

from signoff.loop.state import CallStatus, LoopState

UPGRADES = "signoff-upgrades-on-continue-as-new"


def at_safe_point(state: LoopState) -> bool:
    """No call of the open round is ready to run but not yet run (approved, or needing no approval)."""
    return not any(p.status is CallStatus.READY for p in state.pending)


def should_move(target_changed: bool, state: LoopState) -> bool:
    """Whether a run whose target version changed (`target_changed`) may move now."""
    return target_changed and at_safe_point(state)


def due(state: LoopState) -> bool:
    """The run should continue as new onto its target version now (records the patch marker the first time)."""
    changed = workflow.info().is_target_worker_deployment_version_changed()
    return should_move(changed, state) and workflow.patched(UPGRADES)


def behaviour(state: LoopState) -> workflow.ContinueAsNewVersioningBehavior | None:
    """The continue-as-new's versioning behaviour: `AUTO_UPGRADE` when the run moves, else inherited."""
    return workflow.ContinueAsNewVersioningBehavior.AUTO_UPGRADE if due(state) else None
