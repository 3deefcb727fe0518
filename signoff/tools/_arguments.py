"""Shared plumbing for tools whose arguments are a pydantic model.

One place decides how a schema looks to the model and how bad arguments are
reported, so `@tool` functions and the built-in tools read the same.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from signoff.tools.base import ToolResult

M = TypeVar("M", bound=BaseModel)


class Arguments(BaseModel):
    """Base of argument models: unknown arguments are an error the model can fix."""

    # `protected_namespaces=()`: a parameter may well be called `model_name`.
    model_config = ConfigDict(extra="forbid", protected_namespaces=())


class _UntitledSchema(GenerateJsonSchema):
    """JSON schema without pydantic's generated `title`s: noise in every prompt."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        json_schema = super().model_schema(schema)
        json_schema.pop("title", None)
        return json_schema


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of an arguments model, as the model is shown it."""
    return model.model_json_schema(schema_generator=_UntitledSchema)


def validate_arguments(model: type[M], tool_name: str, arguments: Any) -> M | ToolResult:
    """Validate `arguments`; on failure, the tool error the model should read."""
    try:
        return model.model_validate(arguments)
    except ValidationError as exc:
        return ToolResult.error(describe_validation_error(tool_name, exc))


def describe_validation_error(tool_name: str, exc: ValidationError) -> str:
    """One line per problem, each naming the argument, e.g. `path: Field required`."""
    problems = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        problems.append(f"{where}: {error['msg']}")
    return f"invalid arguments for {tool_name}: " + "; ".join(problems)
