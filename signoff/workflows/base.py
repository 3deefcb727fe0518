"""What `AgentRun`'s driver, handlers and queries share: the run's state, built from its input.

`AgentRun` (agent_run.py) is the driver; `DecisionHandlers` (handlers.py) and
`RunQueries` (queries.py) are its signal/update and query handlers, each in its own
small place. All three read and change the state declared here.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

from signoff.activities import AgentActivities
from signoff.activities.models import IdentifyInput, IdentifyOutput
from signoff.agent.snapshot import RunSnapshot
from signoff.approval.authority import Decider
from signoff.approval.identity import read_verified
from signoff.approval.names import same_name
from signoff.approval.people import Person
from signoff.contract import AgentRunInput
from signoff.loop.agent_loop import AgentLoop
from signoff.loop.limits import Limits
from signoff.loop.messages import AgentEvent
from signoff.loop.transcript import Sender
from signoff.workflows.metrics import RunMetrics
from signoff.workflows.notifications import Notifier, notice_for
from signoff.workflows.record import RunRecord
from signoff.workflows.run_input import ContinuedRun, InvalidInput, Requester, decode


class AgentRunBase:
    """The run's state. Built in `@workflow.init`, so a decision arriving with the first
    task (as after continue-as-new) finds the loop; bad input is kept for `run` to fail."""

    def __init__(self, raw: RawValue) -> None:
        self._input_error: str | None = None
        self._continued: ContinuedRun | None = None
        self._record = RunRecord()
        self._revision = 0  # bumped by every handler that changes what waits
        self._notifier = Notifier()
        self._metrics = RunMetrics()
        try:
            given = decode(raw)
        except InvalidInput as exc:
            self._input_error = str(exc)
            self._input = AgentRunInput(prompt="")
            self._loop = AgentLoop([], {})
            self._requester, self._snapshot, self._digest, self._sender = Requester(), None, None, Sender()
            return
        if isinstance(given, ContinuedRun):
            self._continued = given
            self._input, self._loop = given.input, AgentLoop.from_state(given.loop)
            self._requester, self._snapshot, self._digest = given.requester, given.snapshot, given.snapshot_digest
            # A new run id: the model's worker holds nothing of it, so the transcript goes whole once.
            self._record, self._sender = RunRecord(given.events, given.event_seq), Sender()
            self._bind()
            return
        options = given.options
        self._input = given
        self._loop = AgentLoop(
            given.transcript(),
            {},
            options.max_rounds,
            options.approval_timeout_seconds,
            max_total_tokens=options.max_total_tokens,
            requested_by=options.requested_by,
        )
        self._requester = Requester(name=options.requested_by)
        self._snapshot, self._digest, self._sender = None, None, Sender()
        self._bind()

    def _bind(self) -> None:
        """Bind requests to this workflow and its chain, as the server names them (never as
        carried state says): what a signed decision must name."""
        info = workflow.info()
        self._loop.bind_to(info.workflow_id, info.first_execution_run_id)

    @property
    def _limits(self) -> Limits:
        return self._snapshot.limits if self._snapshot else Limits()

    def _publish(self) -> None:
        """Move the loop's new events into the run's feed."""
        for event in self._loop.drain_events():
            self._on_event(event, self._record.add(event))

    def _on_event(self, event: AgentEvent, kept: dict[str, Any]) -> None:
        """What an event sets off: its metrics; notices, when the run's snapshot names channels."""
        self._metrics.observe(event)
        plan = self._snapshot.notify if self._snapshot else None
        if plan is None or not plan.channels:
            return
        kind = notice_for(event, {r.call_id for r in self._loop.pending_requests()})
        if kind is not None:
            self._notifier.send(plan, kind, self._input.agent, kept, self._record.add)

    def _requester_decider(self) -> Person | None:
        return self._requester if self._requester.name else None

    def _adopt(self, snapshot: RunSnapshot, digest: str, unavailable: Sequence[AgentEvent] = ()) -> None:
        """Take the run's snapshot; record what it could not include (MCP servers not reached)."""
        self._snapshot, self._digest = snapshot, digest
        self._loop.adopt_agent(snapshot.descriptions, snapshot.policies, snapshot.limits)
        for event in unavailable:
            self._on_event(event, self._record.add(event))

    def _signed_by(self, token: str, claimed: str | None) -> Decider:
        """Who signed a decision the update's validator verified, read from the token itself
        (deterministic: a replay reads the same), `runtime/tokens.py`."""
        identity = read_verified(token)
        if claimed and not same_name(claimed, identity.subject):
            raise ApplicationError(
                f"approver {claimed!r} does not match the token's subject {identity.subject!r}",
                type="Unverified",
                non_retryable=True,
            )
        self._loop.state.signed_decisions = True
        return Decider(identity.person(), identity.claim, token)

    async def _identify(self, token: str, claimed: str | None, purpose: str) -> Decider:
        """Verify a token worker-side; the answer (who, and what the token signs) is recorded
        in history, so a replay after the keys rotated reaches the same outcome. Whether the
        token signs *this* decision is the loop's to check. ApplicationError says why it failed.

        The answer also says whether verified decisions must be signed: always, from a v3
        worker; a history v2 recorded says nothing of it, so its run replays as it ran (and
        its tool calls still run only with signatures)."""
        out: IdentifyOutput = await workflow.execute_local_activity_method(
            AgentActivities.identify,
            IdentifyInput(token=token),
            start_to_close_timeout=timedelta(seconds=10),
            summary=f"verify {purpose} token",
        )
        self._loop.state.signed_decisions |= out.signed_decisions
        person = out.person()
        if person is None:
            raise ApplicationError(f"{purpose} token rejected: {out.error}", type="Unverified", non_retryable=True)
        if claimed and not same_name(claimed, person.name):
            raise ApplicationError(
                f"{purpose} {claimed!r} does not match the token's subject {person.name!r}",
                type="Unverified",
                non_retryable=True,
            )
        return Decider(person, out.claim, token)
