"""OpenAI Chat Completions <-> our messages, parts and provider events. Pure functions.

OpenAI keeps tool results in `role: "tool"` messages; we keep them inside the assistant
message's tool part (status + result), the shape AIKit renders. So this module folds tool
messages into parts on the way in and expands parts into tool messages on the way out.

Tool-result envelope. A tool message has no error flag, so a result the model or a client
wrote as `{"error": ...}` is an ordinary successful result (a search tool may well return an
`error` field) and stays `success`. Only our own envelope, `{"status": "error" |
"cancelled" | "pending", ...}` with nothing else but `error` / `message`, carries a status
back: that is what `messages_to_openai` writes for error, cancelled and unfinished parts,
which makes the round trip exact and the text still plain for the model to read.

Non-final tool parts (`loading`, `waitingConfirmation`, `waitingSubmission`) still get a
tool message, the "pending" envelope: OpenAI refuses a history in which an assistant
`tool_calls` entry has no answer, and a run paused for a human must still be replayable to
another model call. Read back, such a part is `waitingConfirmation` with no result (the
exact waiting status is not representable in OpenAI's shape).

A string result is sent as the string itself (the model reads plain text); on the way back
a tool message whose content parses as JSON becomes that JSON value, so a string result
that happens to be JSON text (e.g. `"42"`) comes back as the number.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, assert_never

from app.domain.errors import InvalidRequest
from app.domain.messages import Message
from app.domain.parts import (
    FINAL_TOOL_STATUSES,
    FileData,
    FilePart,
    Part,
    TextPart,
    ThinkingData,
    ThinkingPart,
    ToolPart,
    text_part,
    tool_part,
)
from app.domain.stream import (
    Finish,
    FinishReason,
    NamedToolChoice,
    ProviderEvent,
    ResponseMeta,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolChoice,
    ToolSpec,
    Usage,
)
from app.translate.accumulator import parse_tool_args

CANCELLED_TEXT = "The user cancelled this tool call; the tool did not run."
PENDING_TEXT = "No result yet: this tool call has not finished (it may await a human)."
_ENVELOPE_STATUSES = frozenset({"error", "cancelled", "pending"})
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

_FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "content_filter": "content_filter",
}


def canonical_json(value: Any) -> str:
    """The one spelling of a JSON value we emit, so equal arguments give equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# --- messages: OpenAI -> ours ------------------------------------------------------------


def messages_from_openai(items: list[dict[str, Any]]) -> list[Message]:
    """Chat Completions `messages` as our messages, tool results folded into tool parts."""
    out: list[Message] = []
    for index, item in enumerate(items):
        append_openai_message(out, item, index=index)
    return out


# Keys that name an identity or an upstream: a message carrying one is someone trying to
# act as another user or to point the service elsewhere, never a client's honest field.
ROUTING_FIELDS = frozenset({"owner_id", "user_id", "api_key", "api_base", "base_url"})


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
        elif kind == "file":
            parts.append(_file_part(part.get("file"), index, n))
        else:
            raise _bad(index, f"has an unsupported content part type {kind!r}")
    return parts


def data_url_mime(url: Any) -> str | None:
    """The media type of a `data:` URL (`data:image/png;base64,...` -> `image/png`).

    None for anything else, and for a data URL that names no type (`data:,hello`).
    """
    if not isinstance(url, str) or not url.startswith("data:"):
        return None
    header = url[5:].split(",", 1)[0]
    mime = header.split(";", 1)[0]
    return mime or None


def _image_part(url: str, n: int) -> FilePart:
    mime = data_url_mime(url) or "image/*"
    return FilePart(data=FileData(id=f"image-{n}", name=f"image-{n}", mimeType=mime, url=url))


def _file_part(file: Any, index: int, n: int) -> FilePart:
    if not isinstance(file, Mapping):
        raise _bad(index, "has a file part without `file`")
    data = file.get("file_data")
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
    text = _plain_text(item.get("content"), index)
    try:
        value: Any = json.loads(text)
    except json.JSONDecodeError:
        value = text
    envelope = _envelope(value)
    if envelope is None:
        target.data.status, target.data.result = "success", value
    elif envelope[0] == "error":
        target.data.status, target.data.result = "error", envelope[1]
    elif envelope[0] == "cancelled":
        target.data.status, target.data.result = "cancelled", None
    # "pending": the part keeps its waiting status and has no result.


def _envelope(value: Any) -> tuple[str, Any] | None:
    if not isinstance(value, dict) or value.get("status") not in _ENVELOPE_STATUSES:
        return None
    if not set(value) <= {"status", "error", "message"}:
        return None
    return value["status"], value.get("error", value.get("message"))


def _find_tool_part(out: list[Message], call_id: str) -> ToolPart | None:
    for message in reversed(out):
        if message.role != "assistant":
            continue
        for part in message.tool_parts():
            if part.id == call_id:
                return part
    return None


# --- messages: ours -> OpenAI ------------------------------------------------------------


def messages_to_openai(messages: list[Message]) -> list[dict[str, Any]]:
    """Our messages as a valid Chat Completions history (every tool call answered)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            out.append({"role": "system", "content": message.text()})
        elif message.role == "user":
            out.append({"role": "user", "content": _user_to_openai(message)})
        elif message.role == "assistant":
            out.extend(_assistant_to_openai(message.parts()))
        else:
            assert_never(message.role)
    return out


def _user_to_openai(message: Message) -> str | list[dict[str, Any]]:
    if isinstance(message.content, str):
        return message.content
    items: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, TextPart):
            items.append({"type": "text", "text": part.data.text})
        elif isinstance(part, FilePart):
            items.append(_file_to_openai(part.data))
        elif isinstance(part, ThinkingPart | ToolPart):
            continue  # not something a user message can carry upstream
        else:
            assert_never(part)
    if all(i["type"] == "text" for i in items) and len(items) <= 1:
        return items[0]["text"] if items else ""
    return items


def _file_to_openai(data: FileData) -> dict[str, Any]:
    mime = data.mimeType or ""
    if data.url and (mime.startswith("image/") or data.url.startswith("data:image/")):
        return {"type": "image_url", "image_url": {"url": data.url}}
    if data.url and data.url.startswith("data:"):
        return {"type": "file", "file": {"filename": data.name, "file_data": data.url}}
    # Without inline bytes the model can only be told the attachment exists.
    return {"type": "text", "text": f"[Attached file: {data.name}]"}


def _assistant_to_openai(parts: list[Part]) -> list[dict[str, Any]]:
    """[text, tool, tool, text] -> assistant+tool_calls, tool, tool, assistant.

    A new assistant message starts whenever text follows tool calls: that is how the
    exchange really went (the second text was written after the results came back).
    """
    out: list[dict[str, Any]] = []
    texts: list[str] = []
    calls: list[ToolPart] = []

    def flush() -> None:
        if not "".join(texts) and not calls:
            texts.clear()  # an empty assistant message is invalid upstream
            return
        message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
        if calls:
            message["tool_calls"] = [_tool_call_to_openai(p) for p in calls]
        out.append(message)
        out.extend(_tool_result_to_openai(p) for p in calls)
        texts.clear()
        calls.clear()

    for part in parts:
        if isinstance(part, TextPart):
            if calls:
                flush()
            texts.append(part.data.text)
        elif isinstance(part, ToolPart):
            calls.append(part)
        elif isinstance(part, ThinkingPart | FilePart):
            continue  # OpenAI takes no reasoning back, and assistants attach no files
        else:
            assert_never(part)
    flush()
    return out


def _tool_call_to_openai(part: ToolPart) -> dict[str, Any]:
    return {
        "id": part.id,
        "type": "function",
        "function": {"name": part.data.toolName, "arguments": canonical_json(part.data.args or {})},
    }


def _tool_result_to_openai(part: ToolPart) -> dict[str, Any]:
    data = part.data
    if data.status == "success":
        result = data.result
        content = result if isinstance(result, str) else canonical_json(result)
    elif data.status == "error":
        error = data.result if data.result is not None else data.bodyContent or "The tool failed."
        content = canonical_json({"status": "error", "error": error})
    elif data.status == "cancelled":
        content = canonical_json({"status": "cancelled", "message": CANCELLED_TEXT})
    else:
        content = canonical_json({"status": "pending", "message": PENDING_TEXT})
    return {"role": "tool", "tool_call_id": part.id, "content": content}


# --- tools ------------------------------------------------------------------------------


def tools_to_openai(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
            },
        }
        for t in tools
    ]


def tool_choice_to_openai(choice: ToolChoice | None) -> str | dict[str, Any] | None:
    """None means "send nothing" (the upstream default)."""
    if choice is None or isinstance(choice, str):
        return choice
    return {"type": "function", "function": {"name": choice.name}}


def tool_choice_from_openai(value: Any) -> ToolChoice | None:
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
        if not isinstance(name, str) or not _TOOL_NAME.match(name):
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


# --- responses: OpenAI -> events --------------------------------------------------------


def _as_dict(obj: Any) -> dict[str, Any]:
    if isinstance(obj, dict):
        return obj
    dump = getattr(obj, "model_dump", None)
    if dump is None:
        raise TypeError(f"expected a dict or a pydantic model, got {type(obj).__name__}")
    result: dict[str, Any] = dump()
    return result


def finish_reason_from_openai(value: str) -> FinishReason:
    """Unknown reasons from compatible servers (e.g. `eos`) read as a normal stop."""
    return _FINISH_REASONS.get(value, "stop")


def _usage(usage: Mapping[str, Any]) -> Usage:
    return Usage(
        input_tokens=int(usage.get("prompt_tokens") or 0),
        output_tokens=int(usage.get("completion_tokens") or 0),
    )


def _call_delta(index: int, call: Mapping[str, Any]) -> ToolCallDelta:
    function = call.get("function") or {}
    arguments = function.get("arguments") or ""
    if not isinstance(arguments, str):  # some compatible servers send an object
        arguments = json.dumps(arguments)
    return ToolCallDelta(
        index=index, id=call.get("id"), name=function.get("name"), args_delta=arguments
    )


def chunk_to_events(chunk: Any, *, first: bool = False) -> list[ProviderEvent]:
    """One `chat.completion.chunk` (SDK object or dict) as provider events.

    `first` adds the ResponseMeta; the caller knows which chunk came first. Only choice 0
    is read: we never ask for `n > 1`.
    """
    data = _as_dict(chunk)
    events: list[ProviderEvent] = []
    if first:
        events.append(ResponseMeta(response_id=data.get("id"), model=data.get("model")))
    for choice in data.get("choices") or []:
        if choice.get("index", 0) != 0:
            continue
        delta = choice.get("delta") or {}
        for key in ("reasoning_content", "reasoning"):
            if delta.get(key):
                events.append(ThinkingDelta(text=delta[key]))
        if delta.get("content"):
            events.append(TextDelta(text=delta["content"]))
        if delta.get("refusal"):
            events.append(TextDelta(text=delta["refusal"]))
        for position, call in enumerate(delta.get("tool_calls") or []):
            index = call.get("index")
            events.append(_call_delta(position if index is None else index, call))
        if choice.get("finish_reason"):
            events.append(Finish(reason=finish_reason_from_openai(choice["finish_reason"])))
    if data.get("usage"):
        events.append(_usage(data["usage"]))
    return events


# --- our answer -> OpenAI ---------------------------------------------------------------


def parts_to_openai_message(parts: list[Part]) -> tuple[dict[str, Any], FinishReason]:
    """`choices[0].message` for an answer we produced, and its finish reason.

    Only tool calls still waiting on the client become `tool_calls`: server tools that
    already ran are ours, and an OpenAI client seeing them would try to run them itself.
    Text runs separated by such finished calls are joined with a blank line.
    """
    segments: list[str] = []
    current: list[str] = []
    pending: list[ToolPart] = []
    for part in parts:
        if isinstance(part, TextPart):
            current.append(part.data.text)
        elif isinstance(part, ToolPart):
            if current:
                segments.append("".join(current))
                current = []
            if part.data.status not in FINAL_TOOL_STATUSES:
                pending.append(part)
        elif isinstance(part, ThinkingPart | FilePart):
            continue
        else:
            assert_never(part)
    if current:
        segments.append("".join(current))
    text = "\n\n".join(s for s in segments if s)
    message: dict[str, Any] = {"role": "assistant", "content": text or None, "refusal": None}
    if pending:
        message["tool_calls"] = [_tool_call_to_openai(p) for p in pending]
        return message, "tool_calls"
    return message, "stop"
