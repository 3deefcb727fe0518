"""Errors raised by signoff.

    SignoffError
    ├── ConfigError        configuration that cannot work (checked when it is built)
    ├── UsageError         a developer's misuse of the API (duplicate tool name, unknown agent)
    ├── ProviderError      the model provider answered non-2xx: status, message, Retry-After
    ├── StreamError        the provider's stream broke off or could not be read
    ├── TokenError         an approver's token was refused: `reason` says why (expired, ...)
    ├── SigningRefused     a signer will not sign: the run's request does not match what it
    │                      shows, or the run is not one your workers serve
    ├── RunFailedError     a run that cannot go on (a call's policy said fail_run on timeout)
    ├── DecisionError      a decision that cannot be applied (also a ValueError): names the
    │                      pending call ids
    ├── NotStrictJSON      text or a value that is not strict JSON (also a ValueError)
    └── CommandError       an operator's command that cannot go on: the message, the exit code
        ├── Unanswered     the run cannot answer now (no worker in time)
        │   └── RunPaused  it is paused (`temporal workflow pause`)
        └── UpdateNotTaken the run did not take the update (what it carried may go by signal)

Some modules subclass these for their own cases (`ConfigError`: the payload store's, the
codec's and the connection's errors; `UsageError`: `HistoryFileError`); each is raised as
the branch it extends, so catching the branch catches it.

Every message says what happened and, where it can, what to do.
"""

from __future__ import annotations


class SignoffError(Exception):
    """Base of every error signoff raises on purpose."""


class ConfigError(SignoffError):
    """Configuration that cannot work; raised when the config is built."""


class UsageError(SignoffError):
    """The API was used in a way it cannot serve."""


class ProviderError(SignoffError):
    """The model provider answered with a non-2xx status.

    Attributes:
        status: the HTTP status code.
        message: the provider's own error message (never the API key).
        retry_after: seconds from the `Retry-After` header, when given.
    """

    def __init__(self, status: int, message: str, retry_after: float | None = None) -> None:
        self.status = status
        self.message = message
        self.retry_after = retry_after
        super().__init__(f"provider returned HTTP {status}: {message}")

    @property
    def retryable(self) -> bool:
        """Whether trying again may help: 408, 409, 429 and 5xx."""
        return self.status in (408, 409, 429) or self.status >= 500


class StreamError(SignoffError):
    """The provider's response stream ended early or could not be parsed."""


class TokenError(SignoffError):
    """An approver token that cannot be trusted.

    The message never contains the token: it is a credential, and the message may be
    recorded in workflow history or shown to whoever sent the token.

    Attributes:
        reason: a stable short code for programs: one of `TOKEN_REASONS` in
            `signoff.approval.identity` (`"expired"`, `"bad_signature"`, `"wrong_audience"`, ...).
        message: what was wrong, for people, and what to do about it.
    """

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        self.message = message
        super().__init__(message)

    def __reduce__(self) -> tuple[type[TokenError], tuple[str, str]]:
        return type(self), (self.reason, self.message)


class SigningRefused(SignoffError):
    """A signer refused to sign a decision: what the run reports does not match what it shows
    and what the server says of it, or the run is not an `AgentRun` your workers serve. The
    message says which fact differs; nothing was signed."""


class RunFailedError(SignoffError):
    """A run that cannot go on, with the reason (e.g. `on_timeout=fail_run`)."""


class DecisionError(SignoffError, ValueError):
    """A decision that cannot be applied; the message names the pending call ids."""

    def __init__(self, problem: str, pending: list[str]) -> None:
        self.problem = problem
        self.pending = pending
        shown = ", ".join(pending) if pending else "none"
        super().__init__(f"{problem} (pending call ids: {shown})")


class CommandError(SignoffError):
    """A command that cannot go on: the message for stderr and the exit code."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


class Unanswered(CommandError):
    """The run cannot answer now: no worker answered in time, or it is paused (`RunPaused`)."""


class RunPaused(Unanswered):
    """The run is paused (`temporal workflow pause`): it answers no query and takes no update."""


class UpdateNotTaken(CommandError):
    """The run did not take the update (paused, 10 updates in flight, or no worker in time):
    what it carried may still go by signal, which a run always accepts."""


class NotStrictJSON(SignoffError, ValueError):
    """Text or a value that is not strict JSON; the message says what is wrong."""
