"""How a run refuses what a client sent: a failure that names the problem, and nothing of the worker.

An update's validator that raises a plain exception rejects the update with that
exception's Python type, tagged retryable, and its traceback (the worker's file paths)
shown in the Web UI. A `Refusal` is non-retryable (sending the same again cannot
succeed), its text is inert (control, bidi and zero-width characters from a call id or
a reason appear as escapes, `signoff.text.neutral`), and the worker's failure converter
(`quiet`) sends it without a traceback or a cause. Runs refuse their start input the
same way (`InvalidInput`).
"""

from __future__ import annotations

from typing import Any

from temporalio.api.failure.v1 import Failure
from temporalio.converter import FailureConverter, PayloadConverter
from temporalio.exceptions import ApplicationError

from signoff.approval.identity import NO_KEYS
from signoff.errors import TokenError
from signoff.text.neutral import neutralise

DECISION_REJECTED = "DecisionRejected"
INVALID_INPUT = "InvalidInput"
UNVERIFIED = "Unverified"


class Refusal(ApplicationError):
    """What a client sent cannot be applied: the text says why (made inert), never retried."""

    def __init__(self, message: str, type: str = DECISION_REJECTED) -> None:
        super().__init__(neutralise(message), type=type, non_retryable=True)


def unverified(message: str) -> ApplicationError:
    """A token that vouches for nobody, or not for whom it should: `Unverified`, never retried.
    An update refuses it as a `Refusal` of that type (`refused`); a signal's decision is ignored
    with its text."""
    return ApplicationError(message, type=UNVERIFIED, non_retryable=True)


def token_rejected(purpose: str, why: TokenError | str | None) -> ApplicationError:
    """A refused token, as every part of a run reports it: "<purpose> token rejected: <why>".
    `why`: the token's error (an update's validator), the reason `signoff.identify` recorded for
    it (its answer in history), or None: the worker holds no approver keys."""
    return unverified(f"{purpose} token rejected: {NO_KEYS if why is None else why}")


def quiet(base: type[FailureConverter]) -> type[FailureConverter]:
    """`base`, sending a `Refusal` without its traceback and cause (the rest as `base` does)."""

    class Quiet(base):  # type: ignore[valid-type,misc]
        def to_failure(self, exception: BaseException, payload_converter: PayloadConverter, failure: Failure) -> None:
            if isinstance(exception, Refusal):
                exception.__traceback__ = None
                exception.__cause__, exception.__suppress_context__ = None, True
            super().to_failure(exception, payload_converter, failure)

    Quiet.__name__ = Quiet.__qualname__ = f"Quiet{base.__name__}"
    return Quiet


def refused(exc: BaseException, type: str = DECISION_REJECTED) -> Refusal:
    """`exc` as a Refusal: itself when it is one; an ApplicationError keeps its type (`Unverified`)."""
    if isinstance(exc, Refusal):
        return exc
    if isinstance(exc, ApplicationError) and exc.type:
        type = exc.type
    return Refusal(error_text(exc), type)


def error_text(exc: BaseException) -> str:
    """An exception's message (an ApplicationError's own, without Temporal's decoration)."""
    message: Any = getattr(exc, "message", None)
    return message if isinstance(message, str) and message else str(exc) or type(exc).__name__
