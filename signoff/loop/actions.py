"""What the tool loop asks its driver to do next, and the error a decision it cannot apply raises."""

from __future__ import annotations

from dataclasses import dataclass

from signoff.approval.requests import ToolApprovalRequest
from signoff.messages import FinishReason, ToolCall


@dataclass(frozen=True)
class CallModel:
    """Send the transcript to the model (round `round`, from 0)."""

    round: int


@dataclass(frozen=True)
class RunTools:
    """Run these calls, with the arguments to run them with (edited ones included)."""

    calls: list[ToolCall]


@dataclass(frozen=True)
class AwaitApproval:
    """Wait for decisions on these requests (until `next_wakeup()` at the latest)."""

    requests: list[ToolApprovalRequest]


@dataclass(frozen=True)
class Finish:
    """The run is over."""

    reason: FinishReason


@dataclass(frozen=True)
class Fail:
    """The run cannot go on: fail it with `message`."""

    message: str


Action = CallModel | RunTools | AwaitApproval | Finish | Fail
