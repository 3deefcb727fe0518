"""Keeping the API key out of error text, even when a provider echoes part of it.

Providers quote what they were sent: a rejected key in a 401 body, a request echoed in
an SSE `error` event, a header line in a protocol error. Whatever a provider says can
reach an exception message, and from there Temporal history, `describe`, the worker log
and the operator's terminal. So every exception leaving the chat client is checked for
the key, whole or in part, and masked.
"""

from __future__ import annotations

from signoff.errors import ProviderError, StreamError

MIN_RUN = 8
"""Runs of the key this long or longer are masked; shorter keys are dummies ("ollama")."""
MASK = "***"


def mask_secret(text: str, secret: str | None, min_run: int = MIN_RUN) -> str:
    """`text` with every run of `min_run` or more consecutive characters of `secret` masked.

    Catches the whole key, a key cut short at either end, a fragment from its middle,
    repeated and overlapping occurrences: each maximal stretch of `text` covered by
    `min_run`-character pieces of the key becomes one `***`.

    Args:
        text: what may quote the secret.
        secret: the secret; None, or shorter than `min_run`, leaves `text` as it is
            (masking a dummy such as "ollama" would garble messages, protecting nothing).
        min_run: the shortest run that counts as a leak; at least 1.

    Returns:
        The masked text.
    """
    if not secret or len(secret) < min_run or len(text) < min_run:
        return text
    pieces = {secret[i : i + min_run] for i in range(len(secret) - min_run + 1)}
    hidden = [False] * len(text)
    for start in range(len(text) - min_run + 1):
        if text[start : start + min_run] in pieces:
            hidden[start : start + min_run] = [True] * min_run
    if not any(hidden):
        return text
    out: list[str] = []
    for position, char in enumerate(text):
        if not hidden[position]:
            out.append(char)
        elif position == 0 or not hidden[position - 1]:
            out.append(MASK)
    return "".join(out)


def leaks(text: str, secret: str | None, min_run: int = MIN_RUN) -> bool:
    """Whether `text` holds a run of `min_run` or more characters of `secret`."""
    return mask_secret(text, secret, min_run) != text


def masked_exception(exc: BaseException, secret: str | None) -> Exception | None:
    """A stand-in for `exc` when its text, or any in its chain, holds a run of `secret`.

    `ProviderError` and `StreamError` keep their type and fields (so retry behaviour is
    unchanged); anything else becomes a `StreamError` naming the original type. Raise
    the stand-in outside the `except` block that caught `exc`, so that not even a
    suppressed `__context__` keeps the original chain, which is what leaked.

    Returns:
        None when nothing leaks (raise `exc` as it is).
    """
    if not any(leaks(text, secret) for each in _chain(exc) for text in (str(each), repr(each))):
        return None
    if isinstance(exc, ProviderError):
        return ProviderError(exc.status, mask_secret(exc.message, secret), exc.retry_after)
    if isinstance(exc, StreamError):
        return StreamError(mask_secret(str(exc), secret))
    return StreamError(f"{type(exc).__name__}: {mask_secret(str(exc), secret)}")


def _chain(exc: BaseException) -> list[BaseException]:
    """`exc` and every exception it was raised from or while handling, both branches."""
    seen: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo:
        current = todo.pop()
        if current is not None and all(current is not s for s in seen):
            seen.append(current)
            todo += [current.__cause__, current.__context__]
    return seen
