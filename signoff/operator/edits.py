"""Edited arguments are checked against the tool's own schema before they are sent.

The schema is the one the run snapshotted when it started (the `agent_snapshot` query):
what the model was offered, and what the tool will be called with. It is checked with
`jsonschema` (the full JSON Schema, as MCP servers and OpenAI-style tool specs write it),
so an edit that names a parameter the tool does not have, or gives one the wrong type,
is refused before it is sent, saying which. `signoff approve --edit` and the inbox both
check here.
"""

from __future__ import annotations

from typing import Any

import jsonschema
from temporalio.client import Client

from signoff.agent.snapshot import RunSnapshot
from signoff.contract import QUERY_SNAPSHOT
from signoff.errors import CommandError
from signoff.operator import run_client
from signoff.operator.run_client import Handle

MAX_SCHEMA_ERRORS = 5


async def check_edit(handle: Handle, tool: str, arguments: dict[str, Any]) -> None:
    """Raise CommandError (exit 2) unless `arguments` fit `tool`'s parameters in the run's snapshot."""
    schema = await _schema(handle, tool)
    if schema is None:
        raise CommandError(
            f"--edit: the run has no schema for {tool!r} to check the edited arguments against; nothing decided", 2
        )
    problem = schema_problem(schema, arguments)
    if problem:
        raise CommandError(f"--edit: {problem}; nothing decided", 2)


async def tool_schema(client: Client, workflow_id: str, tool: str) -> dict[str, object] | None:
    """The JSON schema of `tool`'s arguments as the run was started with it (None: it cannot say)."""
    try:
        return await _schema(client.get_workflow_handle(workflow_id), tool)
    except CommandError:
        return None


async def _schema(handle: Handle, tool: str) -> dict[str, Any] | None:
    raw = await run_client.query(handle, QUERY_SNAPSHOT)
    try:
        snapshot = RunSnapshot.model_validate(raw) if raw else None
    except ValueError:
        return None
    found = snapshot.tool(tool) if snapshot else None
    return dict(found.spec.parameters) if found else None


def schema_problem(schema: dict[str, Any] | None, arguments: dict[str, Any]) -> str | None:
    """Why `arguments` do not fit the tool's JSON schema, or None when they do (or it has none)."""
    if not schema:
        return None
    try:
        validator_class = jsonschema.validators.validator_for(schema)
        validator_class.check_schema(schema)
    except jsonschema.SchemaError:
        return None  # a tool's own odd schema: the tool itself will check what it is given
    errors = sorted(validator_class(schema).iter_errors(arguments), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    shown = [f"{'/'.join(map(str, e.absolute_path)) or '(the arguments)'}: {e.message}" for e in errors]
    more = f" (and {len(shown) - MAX_SCHEMA_ERRORS} more)" if len(shown) > MAX_SCHEMA_ERRORS else ""
    return "the edited arguments do not fit the tool's schema: " + "; ".join(shown[:MAX_SCHEMA_ERRORS]) + more
