"""What the activities read of the worker's settings, declared (the worker's `WorkerSettings`,
`signoff.runtime.settings`, is one): the activities sit below the worker, so they name the
abilities they rely on instead of importing the worker's type."""

from __future__ import annotations

from datetime import timedelta
from typing import Protocol

from signoff.activities.auto import AutoSettings
from signoff.activities.notify import NotifyConfig
from signoff.agent.snapshot import NotifyPlan
from signoff.approval.identity import Verifier
from signoff.approval.policy import PolicyBook
from signoff.loop.limits import Limits


class ActivitySettings(Protocol):
    """The worker's settings, as far as its activities read them."""

    @property
    def limits(self) -> Limits:
        """The limits runs snapshot."""

    @property
    def policies(self) -> PolicyBook:
        """Approval policies by tool name (`SIGNOFF_POLICY_FILE`)."""

    @property
    def verifier(self) -> Verifier | None:
        """Checks approvers' and requesters' tokens (None: no keys)."""

    @property
    def state_key(self) -> bytes | None:
        """Seals the state runs carry across continue-as-new (None: nothing is sealed)."""

    @property
    def notify(self) -> NotifyConfig | None:
        """Where runs send notices (None sends none)."""

    @property
    def notify_plan(self) -> NotifyPlan | None:
        """What a run records of the notification channels."""

    @property
    def signature_max_age(self) -> timedelta:
        """How long after it was signed a signed approval is honoured."""

    @property
    def auto(self) -> AutoSettings | None:
        """Auto mode's evaluator model and signing key (None: the defaults, no signing key)."""
