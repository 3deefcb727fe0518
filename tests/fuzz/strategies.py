"""What the fuzzer generates: model answers, decision payloads and start inputs, as plain data.

Each strategy aims at the inputs that once wedged a run (issue 16) and their neighbours:
call ids that are empty, `*`, malformed, shared or huge; argument texts with NaN,
Infinity, numbers too large for JSON, lone surrogates, deep nesting, or no JSON at all;
more calls than the per-turn limit; decisions that are valid, nearly valid (typos, wrong
digests, out-of-range numbers, floods of 100+), JSON of any shape, and raw payloads
(undecodable bytes, unknown encodings, forged payload-store references).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from tests.fuzz.agent import TOOL_NAMES

MAX_CALLS = 70
"""Past the per-turn limit of 64, so cuts are generated too (a few hundred more add nothing)."""


def weighted(common: st.SearchStrategy[Any], rare: st.SearchStrategy[Any], percent: int) -> st.SearchStrategy[Any]:
    """`common` `percent` % of the time, else `rare` (Hypothesis's own choice of branch is not uniform)."""
    return st.integers(0, 99).flatmap(lambda n: common if n < percent else rare)


def uniform(*choices: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """One of `choices`, each as often as the others."""
    return st.sampled_from(choices).flatmap(lambda choice: choice)


# --- JSON-ish values: what a stranger's JSON may hold, the odd parts included ---------

odd_floats = st.sampled_from([float("nan"), float("inf"), float("-inf"), 1e308, -0.0, 5e-324])
odd_text = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["", "*", "\x1b[2J", "\u202e", "\ud800", "a`b\n```\n**x**", "é" * 3, "call_1", " " * 3]),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=200, max_size=400),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=10**30),
    odd_floats,
    st.floats(allow_nan=True, allow_infinity=True),
    odd_text,
)
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(odd_text, inner, max_size=4), max_leaves=12
)


def _nested(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


# --- model answers ---------------------------------------------------------------------

call_ids = uniform(
    st.sampled_from(["call_1", "call_2", "dup", "", "*", "call 1", "a`b", "x" * 129, "\x1b[2J", "\ud800", "call_0_0"]),
    st.from_regex(r"[A-Za-z0-9_.:-]{1,20}", fullmatch=True),
    odd_text,
)
tool_names = st.one_of(st.sampled_from(TOOL_NAMES), st.sampled_from(TOOL_NAMES), odd_text)


@st.composite
def argument_texts(draw: st.DrawFn) -> str:
    """The model's raw argument text: usually a plausible object, often something else."""
    kind = draw(st.sampled_from(["object", "object", "fields", "odd", "nested", "text", "huge"]))
    if kind == "object":
        value = draw(
            st.dictionaries(
                st.sampled_from(["text", "path", "version", "key", "times", "content"]),
                st.one_of(st.text(max_size=30), st.integers(-5, 5)),
                max_size=3,
            )
        )
        return json.dumps(value)
    if kind == "fields":
        return json.dumps(draw(st.dictionaries(odd_text, json_values, max_size=3)), allow_nan=True)
    if kind == "odd":
        return draw(
            st.sampled_from(
                [
                    '{"text": NaN}',
                    '{"text": "x", "times": Infinity}',
                    '{"times": -1e999}',
                    '{"text": "\\ud800"}',
                    "[1, 2]",
                    '"just a string"',
                    "null",
                    "{",
                    "",
                    '{"text": 1}' + " " * 3,
                    '{"text": "a", "text": "b"}',
                ]
            )
        )
    if kind == "nested":
        return _nested(draw(st.sampled_from([63, 64, 65, 1_000, 100_000])))
    if kind == "text":
        return draw(odd_text)
    return json.dumps({"text": "z" * draw(st.sampled_from([10_000, 200_000]))})


@dataclass(frozen=True)
class Call:
    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Turn:
    """One model answer: text, calls, finish reason, and how many chunks each is split into."""

    content: str | None = None
    calls: tuple[Call, ...] = ()
    finish: str = "tool_calls"
    chunks: int = 1


hostile_calls = st.builds(Call, id=call_ids, name=tool_names, arguments=argument_texts())
gated_calls = st.builds(  # calls that wait for a person: the decisions then have something to decide
    Call,
    id=st.one_of(st.sampled_from(["call_1", "call_2", "dup"]), call_ids),
    name=st.sampled_from(["note", "release", "rotate", "deploy"]),
    arguments=st.builds(lambda text: json.dumps({"text": text, "version": text, "key": text}), st.text(max_size=20)),
)


calls = weighted(gated_calls, hostile_calls, 50)


@st.composite
def turns(draw: st.DrawFn) -> Turn:
    listed = draw(st.lists(calls, min_size=0, max_size=4))
    if draw(st.integers(0, 100)) >= 95:  # past the per-turn limit: small calls, many of one id
        small = st.builds(Call, id=call_ids, name=tool_names, arguments=st.sampled_from(['{"text": "x"}', "{}"]))
        listed += draw(st.lists(small, min_size=2, max_size=3)) * (MAX_CALLS // 2)
    content = draw(st.one_of(st.none(), odd_text))
    finish = draw(st.sampled_from(["tool_calls", "tool_calls", "stop", "length", "content_filter", "eos"]))
    return Turn(content, tuple(listed), finish, draw(st.sampled_from([1, 1, 3])))


# --- decisions ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Deciding:
    """A decision for the `target`-th pending call (or `*`), filled in when the run waits."""

    target: int | None  # None: "*"
    approved: bool
    fields: dict[str, Any] = field(default_factory=dict)
    digest: str = "right"  # right | wrong | none
    signed: bool = False  # a token bound to the target call, signed by alice's key (its fields then ignored)


@dataclass(frozen=True)
class Raw:
    """A payload as bytes, sent past the data converter."""

    metadata: dict[str, bytes]
    data: bytes


@dataclass(frozen=True)
class Send:
    """One decision payload and how it is sent: signal, update, extend_deadline or revoke_grant."""

    via: str
    payload: Any  # Deciding, Raw, a list of Deciding (a batch), or any JSON value
    copies: int = 1


REFERENCE = {"encoding": b"json/protobuf", "messageType": b"temporal.api.sdk.v1.ExternalStorageReference"}
raws = uniform(
    st.builds(Raw, metadata=st.just({"encoding": b"json/plain"}), data=st.binary(max_size=40)),
    st.builds(
        Raw,
        metadata=st.sampled_from(
            [{"encoding": b"binary/plain"}, {"encoding": b"binary/null"}, {"encoding": b"nope/nope"}, {}]
        ),
        data=st.binary(max_size=20),
    ),
    st.builds(
        Raw,
        metadata=st.just(REFERENCE),
        data=st.sampled_from(
            [
                b'{"driverName": "signoff.file", "claimData": {"hash_algorithm": "sha256", "hash_value": "%s"}}'
                % (b"a" * 64),
                b'{"driverName": "aws.s3driver", "claimData": {"bucket": "b", "key": "v0/x"}}',
                b'{"driverName": "nobody", "claimData": {}}',
                b"{not json",
                b"{}",
            ]
        ),
    ),
    st.builds(Raw, metadata=st.just({"encoding": b"json/external-storage-reference"}), data=st.binary(max_size=20)),
    st.builds(
        Raw,
        metadata=st.just({"encoding": b"json/plain", "__temporal_external_storage_reference": b"true"}),
        data=st.just(b"{}"),
    ),
)
decision_fields = st.fixed_dictionaries(
    {},
    optional={
        "reason": odd_text,
        "approver": st.sampled_from(["alice", "bob", "", "group:ops", "x" * 300, "\x1b"]),
        "arguments": st.dictionaries(
            st.sampled_from(["text", "times", "version", "key", "zz"]), json_values, max_size=2
        ),
        "grant": st.fixed_dictionaries(
            {"match": st.sampled_from(["tool", "arguments", "nope"])},
            optional={
                "ttl_seconds": st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-1, 10**9)),
                "max_uses": st.one_of(st.integers(-1, 20_000), st.none()),
            },
        ),
        "token": st.sampled_from(["not.a.token", "", "x" * 20_000]),
        "aproved": st.booleans(),
    },
)
decidings = st.builds(
    Deciding,
    target=st.one_of(st.none(), st.integers(0, 3)),
    approved=st.booleans(),
    fields=decision_fields,
    digest=st.sampled_from(["right", "right", "wrong", "none"]),
    signed=st.booleans(),
)
payloads = uniform(decidings, decidings, st.lists(decidings, max_size=3), json_values, raws)
sends = uniform(
    st.builds(Send, via=st.sampled_from(["signal", "update"]), payload=payloads),
    st.builds(Send, via=st.sampled_from(["signal", "update"]), payload=decidings, copies=st.sampled_from([101, 150])),
    st.builds(
        Send,
        via=st.sampled_from(["extend", "revoke"]),
        payload=json_values
        | st.fixed_dictionaries(
            {"call_id": call_ids, "seconds": st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers())}
        ),
    ),
)


# --- a case ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One run: its start (None: a normal prompt), the model's answers in order, then the decisions
    sent while it waits."""

    turns: tuple[Turn, ...]
    sends: tuple[Send, ...]
    start: Any = None


@dataclass(frozen=True)
class Resumed:
    """A start from a transcript (the stateless resume): its last assistant message's calls, the ids
    tool messages already answer, and the decisions (`tool_approval_responses`) it starts with."""

    calls: tuple[Call, ...]
    answered: tuple[str, ...] = ()
    responses: tuple[Any, ...] = ()
    options: dict[str, Any] = field(default_factory=dict)


resumed = st.builds(
    Resumed,
    calls=st.lists(calls, min_size=1, max_size=4).map(tuple),
    answered=st.lists(call_ids, max_size=2).map(tuple),
    responses=st.one_of(
        st.just(()),
        st.just(()),
        st.lists(
            st.one_of(st.fixed_dictionaries({"call_id": call_ids, "approved": st.booleans()}), json_values), max_size=2
        ).map(tuple),
    ),
    options=st.fixed_dictionaries({}, optional={"approval_timeout_seconds": st.sampled_from([0.5, 1.0, 3600.0])}),
)
options = st.dictionaries(
    st.sampled_from(
        [
            "max_rounds",
            "approval_timeout_seconds",
            "temperature",
            "max_total_tokens",
            "tool_approval_responses",
            "bogus",
        ]
    ),
    json_values,
    max_size=2,
)
prompted = st.fixed_dictionaries({"agent": st.just("fuzz"), "prompt": odd_text}, optional={"options": options})
odd_starts = uniform(raws, resumed, resumed, st.dictionaries(odd_text, json_values, max_size=3), prompted)
starts = weighted(st.none(), odd_starts, 70)
cases = st.builds(
    Case,
    turns=st.lists(turns(), min_size=1, max_size=3).map(tuple),
    sends=st.lists(sends, max_size=5).map(tuple),
    start=starts,
)
