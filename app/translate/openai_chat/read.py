"""Read what an OpenAI Chat Completions client sends: its messages, tools and tool choice.

A client of `/v1/chat/completions` (and of `/api/chat`, which takes these messages too)
writes its history in OpenAI's shape; this turns it into our messages. Tool messages fold
into the tool part of the assistant message that made the call (how a tool message's text
becomes a status and a result is `tool_results`). Anything malformed is an
`InvalidRequest` that names the message's index, so the client sees which one is wrong.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from app.domain.errors import InvalidRequest
from app.domain.messages import Message
from app.domain.parts import (
    FINAL_TOOL_STATUSES,
    FileData,
    FilePart,
    Part,
    ThinkingData,
    ThinkingPart,
    ToolPart,
    text_part,
    tool_part,
)
from app.domain.stream import TOOL_NAME_PATTERN, NamedToolChoice, ToolChoice, ToolSpec
from app.translate.data_url import data_url_mime, file_data_url
from app.translate.openai_chat.tool_results import read_tool_result
from app.translate.tool_args import parse_tool_args

_TOOL_NAME = re.compile(TOOL_NAME_PATTERN)

# Keys that name an identity or an upstream: a message carrying one is someone trying to
# act as another user or to point the service elsewhere, never a client's honest field.
ROUTING_FIELDS = frozenset({"owner_id", "user_id", "api_key", "api_base", "base_url"})


def messages_from_openai(items: list[dict[str, Any]]) -> list[Message]:
    """Chat Completions `messages` as our messages, tool results folded into tool parts."""
    out: list[Message] = []
    for index, item in enumerate(items):
        append_openai_message(out, item, index=index)
    return out


def refuse_routing_fields(item: Mapping[str, Any], where: str) -> None:
    """InvalidRequest (422) when a message object smuggles an identity or routing field."""
    found = sorted(ROUTING_FIELDS.intersection(item.keys()))
    if found:
        raise InvalidRequest(
            f"{where}.{found[0]} is not allowed: identity and routing come from the "
            "credentials and the configuration, never from the request.",
            code="forbidden_field",
            status=422,
            param=f"{where}.{found[0]}",
        )


def append_openai_message(out: list[Message], item: Mapping[str, Any], *, index: int) -> None:
    """Translate one OpenAI message onto `out` (a tool message updates an earlier part).

    Exposed so the AIKit reader can mix both formats in one history.
    """
    if not isinstance(item, Mapping):
        raise _bad(index, "must be an object")
    refuse_routing_fields(item, f"messages[{index}]")
    role = item.get("role")
    if role in ("system", "developer"):
        out.append(Message(role="system", content=_plain_text(item.get("content"), index)))
    elif role == "user":
        out.append(Message(role="user", content=_user_content(item.get("content"), index)))
    elif role == "assistant":
        out.append(Message(role="assistant", content=_assistant_parts(item, index)))
    elif role == "tool":
        _fold_tool_result(out, item, index)
    else:
        raise _bad(index, f"has an unknown role {role!r}")


def _bad(index: int, problem: str) -> InvalidRequest:
    return InvalidRequest(f"messages[{index}] {problem}.", param=f"messages[{index}]")


def _plain_text(content: Any, index: int) -> str:
    """System and tool content: a string or an array of text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if not (isinstance(part, Mapping) and part.get("type") == "text"):
                raise _bad(index, "may only contain text content parts")
            texts.append(_text_of(part, index))
        return "".join(texts)
    raise _bad(index, "has content that is neither a string nor an array")


def _text_of(part: Mapping[str, Any], index: int) -> str:
    text = part.get("text")
    if not isinstance(text, str):
        raise _bad(index, "has a text part without a string `text`")
    return text


def _user_content(content: Any, index: int) -> str | list[Part]:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _bad(index, "needs `content` as a string or an array of content parts")
    parts: list[Part] = []
    for n, part in enumerate(content):
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text":
            parts.append(text_part(_text_of(part, index)))
        elif kind == "image_url":
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, Mapping) else None
            if not isinstance(url, str):
                raise _bad(index, "has an image_url part without `image_url.url`")
            parts.append(_image_part(url, n))
        elif kind == "file" and "file" not in part and ("id" in part or "fileId" in part):
            # AIKit's attachment, flat: {type: "file", id | fileId, name, mediaType}.
            parts.append(FilePart.model_validate(part))
        elif kind == "file":
            parts.append(_file_part(part.get("file"), index, n))
        else:
            raise _bad(index, f"has an unsupported content part type {kind!r}")
    return parts


def _image_part(url: str, n: int) -> FilePart:
    mime = data_url_mime(url) or "image/*"
    return FilePart(data=FileData(id=f"image-{n}", name=f"image-{n}", mimeType=mime, url=url))


def _file_part(file: Any, index: int, n: int) -> FilePart:
    if not isinstance(file, Mapping):
        raise _bad(index, "has a file part without `file`")
    data = file_data_url(file.get("file_data"))
    file_id = file.get("file_id")
    name = file.get("filename") or file_id or f"file-{n}"
    mime = data_url_mime(data)
    return FilePart(
        data=FileData(id=str(file_id or f"file-{n}"), name=str(name), mimeType=mime, url=data)
    )


def _assistant_parts(item: Mapping[str, Any], index: int) -> list[Part]:
    parts: list[Part] = []
    reasoning = item.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        parts.append(ThinkingPart(data=ThinkingData(content=reasoning)))
    content = item.get("content")
    if isinstance(content, list):
        # Assistant content arrays hold text and refusal parts; a refusal reads as text.
        text = "".join(
            p.get("refusal") or "" if p.get("type") == "refusal" else _text_of(p, index)
            for p in content
            if isinstance(p, Mapping)
        )
    elif content is None or isinstance(content, str):
        text = content or ""
    else:
        raise _bad(index, "has content that is neither a string, an array nor null")
    if text:
        parts.append(text_part(text))
    calls = item.get("tool_calls") or []
    if not isinstance(calls, list):
        raise _bad(index, "has `tool_calls` that is not an array")
    for call in calls:
        parts.append(_tool_call_part(call, index))
    return parts


def _tool_call_part(call: Any, index: int) -> ToolPart:
    function = call.get("function") if isinstance(call, Mapping) else None
    call_id = call.get("id") if isinstance(call, Mapping) else None
    if not isinstance(function, Mapping) or not isinstance(call_id, str) or not call_id:
        raise _bad(index, "has a tool call without `id` and `function`")
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise _bad(index, "has a tool call without `function.name`")
    raw = function.get("arguments") or ""
    if isinstance(raw, Mapping):  # some compatible clients send an object
        raw = json.dumps(raw)
    if not isinstance(raw, str):
        raise _bad(index, "has tool call arguments that are not a JSON string")
    args, problem = parse_tool_args(name, raw)
    if problem is not None:
        # No result yet: the tool message that answers this call (our error envelope
        # when we wrote the history) supplies it.
        return tool_part(tool_call_id=call_id, tool_name=name, status="error", body_content=problem)
    # The exact waiting status is not representable in OpenAI's shape.
    return tool_part(tool_call_id=call_id, tool_name=name, status="waitingConfirmation", args=args)


def _fold_tool_result(out: list[Message], item: Mapping[str, Any], index: int) -> None:
    call_id = item.get("tool_call_id")
    if not isinstance(call_id, str) or not call_id:
        raise _bad(index, "is a tool message without `tool_call_id`")
    target = _find_tool_part(out, call_id)
    if target is None:
        raise _bad(index, f"answers tool call {call_id!r}, which no assistant message made")
    if target.data.status in FINAL_TOOL_STATUSES and target.data.result is not None:
        raise _bad(index, f"is a second result for tool call {call_id!r}")
    outcome = read_tool_result(_plain_text(item.get("content"), index))
    if outcome is not None:
        target.data.status, target.data.result = outcome


def _find_tool_part(out: list[Message], call_id: str) -> ToolPart | None:
    for message in reversed(out):
        if message.role != "assistant":
            continue
        for part in message.tool_parts():
            if part.id == call_id:
                return part
    return None


# --- tools -------------------------------------------------------------------------------


def tools_from_openai(items: Any) -> list[ToolSpec]:
    """Client-declared OpenAI function tools, checked so a bad one fails here, not upstream."""
    if not isinstance(items, list):
        raise InvalidRequest("tools must be an array.", param="tools")
    specs: list[ToolSpec] = []
    for n, item in enumerate(items):
        where = f"tools[{n}]"
        function = item.get("function") if isinstance(item, Mapping) else None
        if not isinstance(item, Mapping) or item.get("type") != "function":
            raise InvalidRequest(f"{where} must be {{type: 'function', function}}.", param=where)
        if not isinstance(function, Mapping):
            raise InvalidRequest(f"{where}.function must be an object.", param=where)
        name = function.get("name")
        if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
            raise InvalidRequest(
                f"{where}.function.name must be 1-64 letters, digits, '_' or '-'.", param=where
            )
        description = function.get("description") or ""
        parameters = function.get("parameters", {"type": "object", "properties": {}})
        if not isinstance(description, str):
            raise InvalidRequest(f"{where}.function.description must be a string.", param=where)
        if not isinstance(parameters, Mapping):
            raise InvalidRequest(
                f"{where}.function.parameters must be a JSON schema object.", param=where
            )
        specs.append(ToolSpec(name=name, description=description, parameters=dict(parameters)))
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise InvalidRequest("tools declares the same name twice.", param="tools")
    return specs


def tool_choice_from_openai(value: Any) -> ToolChoice | None:
    """The request's `tool_choice`: auto, none, required or a named function."""
    if value is None or value in ("auto", "none", "required"):
        return value  # type: ignore[no-any-return]
    function = value.get("function") if isinstance(value, Mapping) else None
    name = function.get("name") if isinstance(function, Mapping) else None
    if not isinstance(name, str) or not name:
        raise InvalidRequest(
            "tool_choice must be auto, none, required or {type: function, function: {name}}.",
            param="tool_choice",
        )
    return NamedToolChoice(name=name)
