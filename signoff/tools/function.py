"""`@tool`: a typed Python function (sync or async) as a Tool.

    @tool
    def add(a: int, b: int = 1) -> int:
        \"\"\"Add two numbers.

        Args:
            a: the first number.
            b: the second number.
        \"\"\"
        return a + b

The schema comes from the type hints (via pydantic), the description from the
docstring's first paragraph, and each `Args:` entry describes its parameter.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import re
import typing
from collections.abc import Awaitable, Callable
from typing import Any, Generic, ParamSpec, TypeVar, overload

import pydantic_core
from pydantic import BaseModel, Field, create_model

from signoff.approval.policy import ApprovalPolicy
from signoff.errors import UsageError
from signoff.tools._arguments import Arguments, json_schema, validate_arguments
from signoff.tools.base import ToolCapabilities, ToolResult

P = ParamSpec("P")
R = TypeVar("R")

# What OpenAI-compatible APIs accept as a function name.
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_SECTION = re.compile(r"^\s*[A-Z][A-Za-z ]*:\s*$")
_ARGS_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$")
_ARG_ENTRY = re.compile(r"^(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


Previewer = Callable[..., "str | Awaitable[str | None] | None"]
"""A tool's preview function: its arguments in, what a call would do out."""


class FunctionTool(Generic[P, R]):
    """A Tool made from a function; calling it still calls the function.

    Attributes:
        name: the function's name unless given.
        description: the docstring's first paragraph unless given.
        parameters: JSON schema of the arguments, from the type hints.
        idempotent: whether running it twice is harmless (default True).
        kind: `"function"` unless given.
        approval_policy: when given, every call waits for a person under this policy.
        capabilities: its gate (`always` with an approval policy, else `never`), that
            policy, and its preview when a `preview` function was given.
    """

    def __init__(
        self,
        fn: Callable[P, R],
        *,
        name: str | None = None,
        description: str | None = None,
        idempotent: bool = True,
        kind: str = "function",
        approval: ApprovalPolicy | None = None,
        preview: Previewer | None = None,
    ) -> None:
        self.name = name or fn.__name__
        if not _TOOL_NAME.match(self.name):
            raise UsageError(f"tool name {self.name!r} is not valid: use 1-64 letters, digits, '_' or '-'")
        summary, arg_docs = parse_docstring(inspect.getdoc(fn) or "")
        self.description = summary if description is None else description
        self.idempotent = idempotent
        self.kind = kind
        self.approval_policy = approval
        self._preview = preview
        self._fn = fn
        # Called with validated keyword arguments, which the ParamSpec cannot express.
        self._call: Callable[..., Any] = fn
        self._is_async = inspect.iscoroutinefunction(fn)
        self._model = _arguments_model(fn, self.name, arg_docs)
        self.parameters = json_schema(self._model)
        functools.update_wrapper(self, fn)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self._fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"FunctionTool({self.name!r})"

    @property
    def capabilities(self) -> ToolCapabilities:
        return ToolCapabilities(
            gate="never" if self.approval_policy is None else "always",
            policy=self.approval_policy,
            preview=None if self._preview is None else self.preview,
        )

    def requires_approval(self, arguments: dict[str, Any]) -> bool:
        """Only with an approval policy (`@tool(approval=...)`), or wrap in `ApprovalRequiredTool`."""
        return self.approval_policy is not None

    def preview(self, arguments: dict[str, Any]) -> str | Awaitable[str | None] | None:
        """What a call would do, from the `preview` function given (None without one;
        an awaitable from an async one, which `signoff.tools.preview.gather.previews` awaits)."""
        if self._preview is None:
            return None
        parsed = validate_arguments(self._model, self.name, arguments)
        return None if isinstance(parsed, ToolResult) else self._preview(**dict(parsed))

    async def execute(self, arguments: dict[str, Any]) -> ToolResult:
        """Validate the arguments, call the function, and render what it returns.

        Invalid arguments and exceptions the function raises become error results,
        so the model can read them and try again.
        """
        parsed = validate_arguments(self._model, self.name, arguments)
        if isinstance(parsed, ToolResult):
            return parsed
        # Iterating a model yields its validated fields, nested models left intact.
        kwargs = dict(parsed)
        try:
            if self._is_async:
                value = await self._call(**kwargs)
            else:
                # A blocking function must not stall the event loop (or a Temporal worker).
                value = await asyncio.to_thread(self._call, **kwargs)
        except Exception as exc:  # a tool's failure is data for the model
            return ToolResult.error(f"{type(exc).__name__}: {exc}")
        return as_tool_result(value)


@overload
def tool(fn: Callable[P, R], /) -> FunctionTool[P, R]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    idempotent: bool = True,
    kind: str = "function",
    approval: ApprovalPolicy | None = None,
    preview: Previewer | None = None,
) -> Callable[[Callable[P, R]], FunctionTool[P, R]]: ...


def tool(
    fn: Callable[P, R] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    idempotent: bool = True,
    kind: str = "function",
    approval: ApprovalPolicy | None = None,
    preview: Previewer | None = None,
) -> FunctionTool[P, R] | Callable[[Callable[P, R]], FunctionTool[P, R]]:
    """Turn a typed function into a Tool; use as `@tool` or `@tool(name=...)`.

    Args:
        fn: the function, when used bare as `@tool`.
        name: the tool's name; defaults to the function's name.
        description: what the model is told; defaults to the docstring's first paragraph.
        idempotent: whether running the call twice is harmless.
        kind: a short label for operators.
        approval: an approval policy: every call then waits for a person under it.
        preview: a function (or async function) taking the tool's arguments and saying
            what a call would do, shown with the approval request. It runs worker-side on
            a thread when the call is requested; one that takes over 10 s is not waited for.

    Raises:
        UsageError: the name is not a valid tool name, or the signature has
            parameters a JSON object cannot fill (`*args`, `**kwargs`, positional-only).
    """

    def wrap(f: Callable[P, R]) -> FunctionTool[P, R]:
        return FunctionTool(
            f, name=name, description=description, idempotent=idempotent, kind=kind, approval=approval, preview=preview
        )

    return wrap if fn is None else wrap(fn)


def as_tool_result(value: Any) -> ToolResult:
    """A function's return value as a ToolResult: text as-is, anything else as JSON."""
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult(content=value)
    # fallback=str: a value pydantic cannot serialise still reaches the model, as text.
    return ToolResult(content=pydantic_core.to_json(value, fallback=str).decode())


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """A Google-style docstring's first paragraph and its `Args:` descriptions."""
    lines = doc.strip().splitlines()
    summary: list[str] = []
    for line in lines:
        if not line.strip() or _SECTION.match(line):
            break
        summary.append(line.strip())
    args_at = next((i for i, line in enumerate(lines) if _ARGS_SECTION.match(line)), None)
    arg_docs = {} if args_at is None else _parse_args_section(lines[args_at + 1 :])
    return " ".join(summary), arg_docs


def _parse_args_section(lines: list[str]) -> dict[str, str]:
    docs: dict[str, str] = {}
    current: str | None = None
    entry_indent: int | None = None
    for line in lines:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if entry_indent is None:
            entry_indent = indent
        if indent < entry_indent or (indent == entry_indent and _SECTION.match(line)):
            break  # the next section begins
        match = _ARG_ENTRY.match(line.strip())
        if indent == entry_indent and match:
            current = match.group(1)
            docs[current] = match.group(2).strip()
        elif current is not None:
            docs[current] = f"{docs[current]} {line.strip()}".strip()
    return docs


def _arguments_model(fn: Callable[..., Any], tool_name: str, arg_docs: dict[str, str]) -> type[BaseModel]:
    """A pydantic model of the function's parameters (what `execute` validates)."""
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except NameError as exc:
        raise UsageError(f"cannot read the type hints of tool {tool_name!r}: {exc}") from exc
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        if param.kind not in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
            raise UsageError(
                f"tool {tool_name!r}: parameter {param.name!r} cannot be passed by name; "
                "tools take named arguments only (no *args, **kwargs or positional-only)"
            )
        default = ... if param.default is param.empty else param.default
        annotation = hints.get(param.name, Any)
        # Only a documented parameter gets a description: an explicit None would
        # erase one given with `Annotated[..., Field(description=...)]`.
        doc = arg_docs.get(param.name)
        field = Field(default) if doc is None else Field(default, description=doc)
        fields[param.name] = (annotation, field)
    return create_model(f"{tool_name}_arguments", __base__=Arguments, **fields)
