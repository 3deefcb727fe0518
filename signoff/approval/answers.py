"""Answers to an MCP server's question (CONTRACT v4 "Answers"): which decision answers which
request, and whether an answer fits the schema the server asked for.

A request of kind `input` (an MCP server returned `input_required` in the middle of a call) is
answered with `answer`, `decline` or `cancel`, never approved or denied; a request of kind
`approval` takes no answer. An answer in form mode is checked against the server's
`requestedSchema` with `jsonschema` (the full JSON Schema, as servers write it) before it is
recorded or signed for, so a wrong answer is refused where it is sent, with the schema's own
message. Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

import jsonschema

from signoff.approval.requests import ToolApprovalRequest, ToolApprovalResponse

_MAX_ANSWER_ERRORS = 5


def answer_problem(request: ToolApprovalRequest, response: ToolApprovalResponse) -> str | None:
    """Why this decision cannot settle this request (an approval for a question, an answer for an
    approval, an answer that does not fit the server's schema), or None."""
    call = f"call {request.call_id!r} ({request.name})"
    if not request.asks_input:
        if response.answers_input:
            return f"{call} waits for approval, not for an answer: approve or deny it"
        return None
    if not response.answers_input:
        return (
            f"{call} waits for an answer to its MCP server's question ({request.message!r}): send "
            '{"call_id", "answer": <JSON>} or {"call_id", "decline": true} (signoff answer RUN CALL)'
        )
    if request.url is not None and response.answer not in (None, True, {}):
        return (
            f"{call}: the server sends the person to {request.url_host or 'a web page'}; nothing entered "
            "there passes through signoff: answer true (consent), or decline"
        )
    if response.answer is not None and request.url is None:
        return answer_schema_problem(request.input_schema, response.answer)
    return None


def answer_schema_problem(schema: dict[str, Any] | None, answer: Any) -> str | None:
    """Why `answer` does not fit the server's requested schema (its own messages), or None."""
    if not isinstance(answer, dict):
        return "the answer must be a JSON object (the server's requested schema is an object's)"
    if not schema:
        return None
    try:
        validator_class = jsonschema.validators.validator_for(schema)
        validator_class.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return f"the server's requested schema is not a valid JSON schema ({exc.message}); nothing can fit it"
    errors = sorted(validator_class(schema).iter_errors(answer), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    shown = [f"{'/'.join(map(str, e.absolute_path)) or '(the answer)'}: {e.message}" for e in errors]
    more = f" (and {len(shown) - _MAX_ANSWER_ERRORS} more)" if len(shown) > _MAX_ANSWER_ERRORS else ""
    return "the answer does not fit the server's requested schema: " + "; ".join(shown[:_MAX_ANSWER_ERRORS]) + more


def elicit_result(response: ToolApprovalResponse) -> dict[str, Any]:
    """The MCP `ElicitResult` (JSON) that carries this answer back to the server."""
    result: dict[str, Any] = {"action": response.input_action()}
    if isinstance(response.answer, dict) and response.answer:
        result["content"] = response.answer
    return result


__all__ = ["answer_problem", "answer_schema_problem", "elicit_result"]
