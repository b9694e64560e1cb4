"""Our stored messages as OpenAI Conversations items (`/v1/conversations/{id}/items`).

Pure: messages in, items out. One stored message may be several items, in its parts'
order, each with an id that stays the same on every read:

- a user message -> one `message` item (`id` = the message id), its parts in order:
  text as `input_text`, an attachment as `input_image` or `input_file` (`file_id` of the
  upload, or the `image_url` / `file_data` it was sent with);
- an assistant message -> its consecutive text parts as one `message` item (`output_text`;
  the first keeps the message id, later ones `<message id>_<n>`; the last one `incomplete`
  when the message was cut short while writing it, as the stream showed it); a server tool's call ->
  a finished `mcp_call` item (`id` = the call id, `output` or `error`), as AIKit and
  reloaded histories show server-run tools; one waiting for a person's approval -> only an
  `mcp_approval_request` item (`id` = the approval id), one that stopped to ask the user
  -> only an `mcp_submission_request` item (`id` = the call id), as the stream shows them;
  a client tool's call -> a `function_call` item, and once the browser answered it a
  `function_call_output` (`<call id>_output`);
- system messages and reasoning are not items (they are not what the person saw).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from app.api.encoders.responses_objects import SERVER_LABEL, dumps, output_text, result_text
from app.domain.messages import Message
from app.domain.parts import FINAL_TOOL_STATUSES, FilePart, TextPart, ToolPart

Item = dict[str, Any]


def items_of(history: list[Message], is_server_tool: Callable[[str], bool]) -> list[Item]:
    return [item for message in history for item in _items(message, is_server_tool)]


def ordered_items(
    messages: Iterable[Message], is_server_tool: Callable[[str], bool], order: str
) -> list[Item]:
    """The items of `messages` (already in `order`), each message's own in `order` too."""
    out: list[Item] = []
    for message in messages:
        own = list(_items(message, is_server_tool))
        out += own if order == "asc" else own[::-1]
    return out


_BLOCK = re.compile(r"(.+)_[0-9]+", re.DOTALL)


def cursor_messages(after: str) -> set[str]:
    """Ids of the messages whose own item id `after` may be: the message itself, or for
    `<id>_<n>` the message whose n-th text block it is. (A tool call's item ids are not a
    message's: see `cursor_parts`.)"""
    ids = {after}
    block = _BLOCK.fullmatch(after)
    if block is not None:
        ids.add(block.group(1))
    return ids


def cursor_parts(after: str) -> set[str]:
    """Ids of the tool parts (or approvals) whose item `after` may be: a call's own items,
    its approval request, or `<call id>_output`."""
    ids = {after}
    if after.endswith("_output"):
        ids.add(after.removesuffix("_output"))
    return ids


def item_in(
    found: list[tuple[int, Message]], item_id: str, is_server_tool: Callable[[str], bool]
) -> Item | None:
    """The first item `item_id` of the messages `found` (position, message), oldest first."""
    for _, message in sorted(found, key=lambda pair: pair[0]):
        for item in _items(message, is_server_tool):
            if item["id"] == item_id:
                return item
    return None


def past_cursor(
    found: list[tuple[int, Message]],
    after: str,
    order: str,
    is_server_tool: Callable[[str], bool],
) -> tuple[int, list[Item]] | None:
    """Of the messages `found` (position, message), the first in `order` that has the item
    `after`: its position and its items that come after that item in `order`; None when
    none has it."""
    ranked = sorted(found, key=lambda pair: pair[0], reverse=order != "asc")
    for position, message in ranked:
        own = ordered_items([message], is_server_tool, order)
        ids = [item["id"] for item in own]
        if after in ids:
            return position, own[ids.index(after) + 1 :]
    return None


def _items(message: Message, is_server_tool: Callable[[str], bool]) -> Iterator[Item]:
    if message.role == "user":
        content = [_input_part(p) for p in message.parts() if isinstance(p, (TextPart, FilePart))]
        yield {
            "type": "message",
            "id": message.id,
            "role": "user",
            "status": "completed",
            "content": content,
        }
        return
    if message.role != "assistant":
        return
    texts: list[str] = []
    blocks = 0
    # A message cut short (cancelled, interrupted, failed) ends with the text it was
    # writing: that item is `incomplete`, as the stream closed it.
    cut = (message.metadata or {}).get("status") == "incomplete"

    def flush(last: bool = False) -> Iterator[Item]:
        nonlocal blocks
        if texts:
            item_id = message.id if blocks == 0 else f"{message.id}_{blocks}"
            blocks += 1
            content = [output_text(t).model_dump(mode="json") for t in texts]
            texts.clear()
            yield {
                "type": "message",
                "id": item_id,
                "role": "assistant",
                "status": "incomplete" if last and cut else "completed",
                "content": content,
            }

    for part in message.parts():
        if isinstance(part, TextPart):
            texts.append(part.data.text)
        elif isinstance(part, ToolPart):
            yield from flush()
            yield from _tool_items(part, is_server_tool(part.data.toolName))
    yield from flush(last=True)


def _input_part(part: TextPart | FilePart) -> Item:
    if isinstance(part, TextPart):
        return {"type": "input_text", "text": part.data.text}
    data = part.data
    file_id = data.id if data.url is None else None  # an inline file's id is no upload's
    if (data.mimeType or "").startswith("image/") or (data.url or "").startswith("data:image/"):
        return {"type": "input_image", "detail": "auto", "file_id": file_id, "image_url": data.url}
    item: Item = {"type": "input_file", "file_id": file_id, "filename": data.name}
    if data.url is not None:
        item["file_data" if data.url.startswith("data:") else "file_url"] = data.url
    return item


def _tool_items(part: ToolPart, server: bool) -> Iterator[Item]:
    data = part.data
    arguments = dumps(data.args) if data.args is not None else ""
    done = data.status in FINAL_TOOL_STATUSES
    if server and data.status == "waitingSubmission" and data.elicitation is not None:
        # Stopped to ask the user: the submission request is its only item, as streamed.
        yield {
            "type": "mcp_submission_request",
            "id": part.id,
            "name": data.toolName,
            "server_label": SERVER_LABEL,
            "arguments": arguments,
            "message": data.elicitation.message,
            "requested_schema": data.elicitation.requestedSchema,
        }
        return
    if server and data.status == "waitingConfirmation" and data.approvalId is not None:
        # Paused for a person: the approval request is its only item, as the stream has it.
        yield {
            "type": "mcp_approval_request",
            "id": data.approvalId,
            "name": data.toolName,
            "server_label": SERVER_LABEL,
            "arguments": arguments,
        }
        return
    if server:
        failed = data.status in ("error", "cancelled")
        yield {
            "type": "mcp_call",
            "id": part.id,
            "name": data.toolName,
            "server_label": SERVER_LABEL,
            "arguments": arguments,
            "status": ("failed" if failed else "completed") if done else "in_progress",
            "output": result_text(data.result) if done and not failed else None,
            "error": (data.bodyContent or f"The call ended {data.status}.") if failed else None,
        }
        return
    yield {
        "type": "function_call",
        "id": part.id,
        "call_id": part.id,
        "name": data.toolName,
        "arguments": arguments,
        "status": "completed",
    }
    if done:
        output = result_text(data.result) if data.status == "success" else data.status
        yield {
            "type": "function_call_output",
            "id": f"{part.id}_output",
            "call_id": part.id,
            "output": output,
            "status": "completed",
        }
