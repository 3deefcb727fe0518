"""What the model reads of an MCP call's result.

Text blocks become the tool message, in order; a result with no content blocks but
`structuredContent` becomes that JSON. Images, audio and resources are described (kind,
MIME type, size, URI), never dropped silently and never inlined as base64. A result with
`isError` is the model's `Error: <message>`, as a protocol error is.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

import mcp_types as types

from signoff.approval.requests import InputAsked
from signoff.tools.base import ToolResult


def tool_result(result: types.CallToolResult) -> ToolResult:
    """The tool message of a `tools/call` result."""
    parts = [_block(block) for block in result.content]
    if not parts and result.structured_content is not None:
        parts = [json.dumps(result.structured_content, ensure_ascii=False, sort_keys=True)]
    text = "\n".join(parts)
    if result.is_error:
        return ToolResult.error(text or "the tool reported an error without a message")
    return ToolResult(content=text)


def input_required(server: str, result: types.InputRequiredResult) -> ToolResult:
    """A server's question in the middle of a call (`input_required`): one form- or URL-mode
    elicitation becomes `ToolResult.input` (the run waits for a person's answer); anything else
    it asks (sampling, roots, several questions at once) is refused, and the model is told."""
    requests = result.input_requests or {}
    asked = [(key, r) for key, r in requests.items() if isinstance(r, types.ElicitRequest)]
    if len(requests) != 1 or len(asked) != 1:
        kinds = ", ".join(sorted({getattr(r, "method", type(r).__name__) for r in requests.values()})) or "nothing"
        return ToolResult.error(
            f"MCP server {server!r} asked for {kinds} before it would finish the call; signoff answers one "
            "question (elicitation/create) at a time and nothing else, so the call did not finish"
        )
    key, request = asked[0]
    params = request.params
    if isinstance(params, types.ElicitRequestURLParams):
        ask = InputAsked(key=key, mode="url", message=params.message, url=params.url, state=result.request_state)
    else:
        ask = InputAsked(
            key=key, message=params.message, requested_schema=params.requested_schema, state=result.request_state
        )
    return ToolResult(content=f"MCP server {server!r} asks: {params.message}", input=ask)


def _block(block: Any) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent | types.AudioContent):
        kind = "image" if isinstance(block, types.ImageContent) else "audio"
        return f"[{kind}: {block.mime_type}, {_size(block.data)} (not shown to the model)]"
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        mime = f" ({resource.mime_type})" if resource.mime_type else ""
        if isinstance(resource, types.TextResourceContents):
            return f"[resource {resource.uri}{mime}]\n{resource.text}"
        return f"[resource {resource.uri}{mime}: {_size(resource.blob)} of binary data (not shown to the model)]"
    if isinstance(block, types.ResourceLink):
        about = [block.mime_type] if block.mime_type else []
        about += [block.description] if block.description else []
        return f"[resource link {block.name}: {block.uri}" + (f" ({'; '.join(about)})" if about else "") + "]"
    kind = getattr(block, "type", type(block).__name__)
    return f"[{kind} content (not shown to the model)]"


def _size(data: str) -> str:
    try:
        size = len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return f"{len(data):,} characters of base64"
    return f"{size:,} bytes"


__all__ = ["input_required", "tool_result"]
