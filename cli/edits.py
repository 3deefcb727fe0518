"""`approve --edit`: edited arguments are checked against the tool's own schema before they are sent.

The schema is the one the run snapshotted when it started (the `agent_snapshot` query):
what the model was offered, and what the tool will be called with. It is checked with
`jsonschema` (the full JSON Schema, as MCP servers and OpenAI-style tool specs write it),
so an edit that names a parameter the tool does not have, or gives one the wrong type,
is refused here, saying which, instead of reaching the tool.
"""

from __future__ import annotations

from typing import Any

import jsonschema
from pydantic import ValidationError

from signoff.cli import talk
from signoff.cli.talk import CommandError, Handle
from signoff.contract import QUERY_SNAPSHOT
from signoff.snapshot import RunSnapshot


async def check_edit(handle: Handle, tool: str, arguments: dict[str, Any]) -> None:
    """Raise CommandError (exit 2) unless `arguments` fit `tool`'s parameters in the run's snapshot."""
    raw = await talk.query(handle, QUERY_SNAPSHOT)
    try:
        snapshot = RunSnapshot.model_validate(raw) if raw is not None else None
    except ValidationError:
        snapshot = None
    entry = snapshot.tool(tool) if snapshot else None
    if entry is None:
        raise CommandError(f"--edit: the run has no schema for {tool!r} to check the edited arguments against; "
                           "nothing decided", 2)  # fmt: skip
    problem = schema_problem(entry.spec.parameters, arguments)
    if problem:
        raise CommandError(f"--edit does not fit the parameters of {tool}: {problem}; nothing decided", 2)


def schema_problem(schema: dict[str, Any], value: Any) -> str | None:
    """What is wrong with `value` under `schema` (the most relevant error), or None."""
    try:
        validator = jsonschema.validators.validator_for(schema)(schema)
    except jsonschema.exceptions.SchemaError as exc:
        return f"the tool's schema itself is not valid ({exc.message})"
    error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if error is None:
        return None
    where = "/".join(str(part) for part in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message
