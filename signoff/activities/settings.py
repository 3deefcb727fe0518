"""What the activities need to know of the worker: its limits, policies, payload budget,
approver keys and notification channels, in one value built once at worker start."""

from __future__ import annotations

from dataclasses import dataclass, field

from signoff.activities.identify import Verifier
from signoff.activities.notify import NotifyConfig
from signoff.agent.snapshot import NotifyPlan
from signoff.approval.policy import PolicyBook
from signoff.loop.limits import DEFAULT_PAYLOAD_BUDGET, Limits


@dataclass(frozen=True)
class ActivitySettings:
    """The worker's settings as the activities use them.

    Attributes:
        limits: the limits runs snapshot (`SIGNOFF_MAX_*`, `SIGNOFF_TRANSCRIPT_BUDGET`).
        policies: approval policies by tool name (`SIGNOFF_POLICY_FILE`).
        payload_budget: the largest payload a run may write; None when an external
            payload store keeps large payloads out of history.
        verifier: checks approvers' and requesters' tokens (`SIGNOFF_APPROVER_KEYS`).
        notify: the notification channels (`SIGNOFF_NOTIFY_URLS`); runs snapshot them.
        state_key: seals the state runs carry across continue-as-new
            (`SIGNOFF_STATE_KEY_FILE`); None checks it with the server instead.
    """

    limits: Limits = field(default_factory=Limits)
    policies: PolicyBook = field(default_factory=PolicyBook)
    payload_budget: int | None = DEFAULT_PAYLOAD_BUDGET
    verifier: Verifier | None = None
    notify: NotifyConfig | None = None
    state_key: bytes | None = field(default=None, repr=False)

    @property
    def notify_plan(self) -> NotifyPlan | None:
        return self.notify.plan if self.notify else None
