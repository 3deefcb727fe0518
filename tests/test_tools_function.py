"""@tool: schema from type hints, description from the docstring, execution."""

from __future__ import annotations

from typing import Annotated

import pytest
from pydantic import BaseModel, Field

from signoff.errors import UsageError
from signoff.tools import Tool, ToolResult, tool


@tool
def add(a: int, b: int = 1) -> int:
    """Add two numbers.

    Only integers, please.

    Args:
        a: the first number.
        b: the second number,
            one by default.

    Returns:
        The sum.
    """
    return a + b


@tool(name="greet", description="Say hello", idempotent=False, kind="social")
async def say_hello(who: str, loud: bool = False) -> str:
    return f"HELLO {who.upper()}" if loud else f"hello {who}"


class Weather(BaseModel):
    city: str
    celsius: float


def test_schema_marks_parameters_without_default_required() -> None:
    assert add.parameters["required"] == ["a"]


def test_schema_types_and_defaults_come_from_hints() -> None:
    props = add.parameters["properties"]
    assert (props["a"]["type"], props["b"]["type"], props["b"]["default"]) == (
        "integer",
        "integer",
        1,
    )


def test_schema_maps_list_and_bool_hints() -> None:
    @tool
    def tag(names: list[str], force: bool = False) -> None: ...

    props = tag.parameters["properties"]
    assert props["names"] == {"items": {"type": "string"}, "type": "array"}
    assert props["force"] == {"default": False, "type": "boolean"}


def test_description_is_the_docstrings_first_paragraph() -> None:
    assert add.description == "Add two numbers."


def test_args_section_describes_parameters() -> None:
    props = add.parameters["properties"]
    assert props["a"]["description"] == "the first number."
    assert props["b"]["description"] == "the second number, one by default."


def test_annotated_field_description_is_kept() -> None:
    @tool
    def scale(factor: Annotated[float, Field(description="how much", gt=0)]) -> float:
        return factor

    assert scale.parameters["properties"]["factor"] == {
        "description": "how much",
        "exclusiveMinimum": 0,
        "type": "number",
    }


def test_decorator_options_override_the_defaults() -> None:
    assert (say_hello.name, say_hello.description, say_hello.idempotent, say_hello.kind) == (
        "greet",
        "Say hello",
        False,
        "social",
    )


def test_plain_tool_defaults() -> None:
    assert (add.name, add.idempotent, add.kind, add.requires_approval({"a": 1})) == (
        "add",
        True,
        "function",
        False,
    )


def test_decorated_function_is_a_tool_and_still_callable() -> None:
    assert isinstance(add, Tool) and add(2, b=3) == 5


async def test_sync_function_executes_with_validated_arguments() -> None:
    assert await add.execute({"a": "2", "b": 3}) == ToolResult(content="5")


async def test_async_function_executes() -> None:
    result = await say_hello.execute({"who": "ada", "loud": True})
    assert result == ToolResult(content="HELLO ADA")


async def test_pydantic_return_value_is_json() -> None:
    @tool
    def weather(city: str) -> Weather:
        return Weather(city=city, celsius=21.5)

    result = await weather.execute({"city": "Oslo"})
    assert result.content == '{"city":"Oslo","celsius":21.5}'


async def test_tool_result_return_value_passes_through() -> None:
    @tool
    def refuse() -> ToolResult:
        return ToolResult.error("not today")

    assert await refuse.execute({}) == ToolResult.error("not today")


async def test_invalid_arguments_are_an_error_result_naming_tool_and_argument() -> None:
    result = await add.execute({"a": "two"})
    assert result.is_error
    assert result.content.startswith("invalid arguments for add: a: Input should be a valid integer")


async def test_unknown_argument_is_an_error_result() -> None:
    result = await add.execute({"a": 1, "c": 2})
    assert result == ToolResult.error("invalid arguments for add: c: Extra inputs are not permitted")


async def test_exception_in_function_is_an_error_result() -> None:
    @tool
    def explode() -> str:
        raise RuntimeError("boom")

    assert await explode.execute({}) == ToolResult.error("RuntimeError: boom")


def test_variadic_parameters_are_a_usage_error() -> None:
    with pytest.raises(UsageError, match="named arguments only"):

        @tool
        def anything(*args: int) -> None: ...


def test_invalid_tool_name_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="not valid"):
        tool(name="has spaces")(lambda: None)
