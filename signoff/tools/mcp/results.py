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


__all__ = ["tool_result"]
