"""JSON as signoff accepts it from strangers: what every later step can record and digest.

Python's `json.loads` accepts more than JSON: `NaN`, `Infinity`, numbers such as `1e999`
that overflow to infinity, escapes of lone surrogates (`"\\ud800"`), and nesting as deep
as the interpreter's stack. Each of those breaks a later step: the canonical JSON of a
digest refuses non-finite numbers, Temporal's JSON cannot hold a lone surrogate, and a
deep value overflows the stack wherever it is walked again. So a model's arguments and a
decision's edited arguments are read with `loads`, which refuses all of them, naming why.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from signoff.errors import NotStrictJSON

MAX_DEPTH = 64
"""Most containers nested in one another (CONTRACT v3 "Input limits")."""
_SURROGATE = re.compile("[\ud800-\udfff]")


def loads(text: str) -> Any:
    """`text` parsed as strict JSON.

    Raises:
        NotStrictJSON: not JSON, or JSON with a non-finite number, a lone surrogate, or
            nesting deeper than `MAX_DEPTH`.
    """
    try:
        value = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except RecursionError:
        raise NotStrictJSON(f"nested deeper than {MAX_DEPTH} levels") from None
    except NotStrictJSON:
        raise
    except ValueError as exc:  # JSONDecodeError, or an integer of more digits than Python converts
        raise NotStrictJSON(str(exc)) from None
    check(value)
    return value


def check(value: Any) -> None:
    """Raise NotStrictJSON if `value` (parsed JSON: dicts, lists, scalars) is not strict JSON."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= MAX_DEPTH:
                raise NotStrictJSON(f"nested deeper than {MAX_DEPTH} levels")
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
        elif isinstance(item, str):
            if _SURROGATE.search(item):
                raise NotStrictJSON("a string holds a lone surrogate (an escape such as \\ud800 with no pair)")
        elif isinstance(item, float) and not math.isfinite(item):
            raise NotStrictJSON(f"{item} is not a JSON number")


def without_surrogates(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD (such text cannot be recorded at all)."""
    return _SURROGATE.sub("\ufffd", text)


def _refuse_constant(name: str) -> Any:
    raise NotStrictJSON(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise NotStrictJSON(f"{text[:40]} is too large for a JSON number")
    return value
