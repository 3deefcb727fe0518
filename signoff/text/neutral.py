"""Text from models, tools and decisions made inert before a person reads it.

A model's arguments, a tool's output, a decision's reason: any of them may carry
characters that a terminal obeys instead of showing (escape sequences that clear the
screen, set the title or write the clipboard through OSC 52), or that make what is
shown differ from what is there (bidi overrides, zero-width characters). `neutralise`
turns each of them into a visible escape such as `\\x1b` or `\\u202e`, so what a person
approves is what they read. Every renderer (the core's plain text, the CLI) applies it
where it puts such text on a screen.
"""

from __future__ import annotations

import re

_UNSAFE = re.compile(
    "["
    "\x00-\x08\x0b-\x1f\x7f"  # C0 controls except tab and newline; DEL
    "\x80-\x9f"  # C1 controls (8-bit CSI, OSC, ...)
    "\u061c\u180e"  # Arabic letter mark, Mongolian vowel separator
    "\u200b-\u200f\u2028\u2029"  # zero-width characters, LRM/RLM, line and paragraph separators
    "\u202a-\u202e\u2060-\u2064\u2066-\u206f"  # bidi embeddings/overrides/isolates, invisible operators
    "\ufeff\ufff9-\ufffb"  # zero-width no-break space, interlinear annotations
    "\ud800-\udfff"  # lone surrogates (from JSON such as "\\ud800"): they cannot even be written out
    "\U000e0000-\U000e007f"  # tag characters: invisible text
    "]"
)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def neutralise(text: str) -> str:
    """`text` with every character a terminal could act on, or hide, shown as an escape.

    Newlines and tabs are kept; the result contains no control, bidi, zero-width or
    surrogate character, so applying it again changes nothing.
    """
    return _UNSAFE.sub(_escape, text)
