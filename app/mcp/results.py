"""An MCP tool result as the JSON value our tool parts carry.

Structured content is the result when the server gives it; otherwise text blocks are
joined into `{"text": ...}`; other blocks (images, resources) are kept as the protocol
shapes them, without their bytes. A result flagged `isError` is the tool's own failure:
its text is the message the model reads.
"""

from __future__ import annotations

from typing import Any

from mcp_types import CallToolResult, TextContent


def result_text(result: CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, TextContent))


def result_json(result: CallToolResult) -> Any:
    if result.structured_content is not None:
        return result.structured_content
    if all(isinstance(b, TextContent) for b in result.content):
        return {"text": result_text(result)}
    blocks: list[Any] = []
    for block in result.content:
        if isinstance(block, TextContent):
            blocks.append({"type": "text", "text": block.text})
        else:
            shown = block.model_dump(mode="json", by_alias=True, exclude_none=True)
            shown.pop("data", None)
            shown.pop("blob", None)
            blocks.append(shown)
    return {"content": blocks}
