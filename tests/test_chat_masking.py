"""mask_secret: no run of 8 or more characters of the key survives, wherever it sits."""

from __future__ import annotations

import pytest

from signoff.chat.masking import leaks, mask_secret, masked_exception
from signoff.errors import ProviderError, StreamError

KEY = "sk-live-4f9b2c7d1e8a6053"


def has_run_of(text: str, secret: str, run: int = 8) -> bool:
    """The property every masked text must lack, checked the naive way."""
    return any(secret[i : i + run] in text for i in range(len(secret) - run + 1))


def test_whole_key_is_masked() -> None:
    assert mask_secret(f"Incorrect API key provided: {KEY}.", KEY) == "Incorrect API key provided: ***."


@pytest.mark.parametrize(
    "fragment",
    [KEY[:-2], KEY[2:], KEY[:8], KEY[-8:], KEY[5:17]],
    ids=["minus-last-two", "minus-first-two", "first-eight", "last-eight", "middle"],
)
def test_partial_echo_of_eight_or_more_characters_is_masked(fragment: str) -> None:
    assert mask_secret(f"bad key [{fragment}]", KEY) == "bad key [***]"


def test_seven_characters_of_the_key_are_not_a_leak() -> None:
    text = f"key starts {KEY[:7]}"
    assert (mask_secret(text, KEY), leaks(text, KEY)) == (text, False)


def test_every_occurrence_is_masked() -> None:
    text = f"{KEY} and again {KEY[3:15]} and {KEY}"
    assert mask_secret(text, KEY) == "*** and again *** and ***"


def test_overlapping_and_adjacent_pieces_become_one_mask() -> None:
    # Two pieces of the key that overlap in the text, then a piece glued to the end.
    text = f"<{KEY[:12]}{KEY[6:20]}{KEY[-9:]}>"
    assert mask_secret(text, KEY) == "<***>"


def test_key_split_across_a_message_is_masked_piece_by_piece() -> None:
    text = f"first half {KEY[:12]}, second half {KEY[12:]}"
    assert mask_secret(text, KEY) == "first half ***, second half ***"


def test_surrounding_text_is_kept_exactly() -> None:
    text = f'{{"error": {{"message": "no such key {KEY}", "code": 401}}}}'
    assert mask_secret(text, KEY) == '{"error": {"message": "no such key ***", "code": 401}}'


@pytest.mark.parametrize("short", ["ollama", "sk-1234", ""])
def test_keys_shorter_than_eight_characters_are_dummies_and_not_masked(short: str) -> None:
    text = f"model not found for key {short or 'none'}"
    assert mask_secret(text, short) == text


def test_no_secret_leaves_text_alone() -> None:
    assert mask_secret("anything", None) == "anything"


def test_min_run_is_adjustable() -> None:
    assert mask_secret(f"x {KEY[:4]} y", KEY, min_run=4) == "x *** y"


@pytest.mark.parametrize(
    "text",
    [
        KEY * 3,
        f"{KEY[::-1]} {KEY[1:9]}{KEY[10:18]}",
        "".join(KEY[i : i + 9] + "|" for i in range(0, len(KEY), 5)),
        f"{KEY[:-1]}\n{KEY[1:]}",
    ],
)
def test_masked_text_never_holds_an_eight_character_run(text: str) -> None:
    assert has_run_of(text, KEY)
    assert not has_run_of(mask_secret(text, KEY), KEY)


def test_provider_error_keeps_its_status_and_retry_delay_when_masked() -> None:
    masked = masked_exception(ProviderError(429, f"slow down, {KEY[:-2]}", 3.0), KEY)
    assert isinstance(masked, ProviderError)
    assert (masked.status, masked.message, masked.retry_after) == (429, "slow down, ***", 3.0)


def test_an_exception_that_quotes_the_key_in_its_cause_is_replaced() -> None:
    try:
        try:
            raise ValueError(f"bad header line: {KEY}")
        except ValueError as exc:
            raise StreamError("the stream could not be read") from exc
    except StreamError as exc:
        masked = masked_exception(exc, KEY)
    assert isinstance(masked, StreamError) and str(masked) == "the stream could not be read"


def test_other_exceptions_that_quote_the_key_become_masked_stream_errors() -> None:
    masked = masked_exception(OSError(f"illegal header {KEY}"), KEY)
    assert isinstance(masked, StreamError) and str(masked) == "OSError: illegal header ***"


def test_an_exception_without_the_key_is_left_alone() -> None:
    assert masked_exception(StreamError("cut short"), KEY) is None
