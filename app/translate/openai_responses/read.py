"""Read what an OpenAI Responses client sends: input items -> our messages (tools: `tools`).

The Responses API spells a conversation as a flat list of items rather than messages:
`message` items (the `type` may be left out, as the SDK's "easy" input message does),
`function_call` items the model made and `function_call_output` items the client answers
them with. We fold that back into our shape: consecutive assistant items (text, reasoning,
calls) become one assistant message, and each `function_call_output` becomes the status
and result of the tool part it answers, exactly as `openai_chat.read` folds `role:
"tool"` messages.

Items a client replays from our own answers are read too, so `input += response.output`
works: `reasoning` becomes a thinking part and `mcp_call` (a server tool that already ran
here, see `app.api.encoders.responses_objects`) becomes a finished tool part; a later
`mcp_call` with the same id, or answering the same `approval_request_id` (the outcome of
an approved call), replaces the earlier one. Items we cannot act on (`item_reference`,
hosted tools) are a 400, never silently dropped; a server tool's `mcp_submission_request`
(answered through the submissions API) is skipped, a client call's is its call (`submissions`).

Approvals: an `mcp_approval_request` item is a server call waiting for a human: a
`waitingConfirmation` part with its `approvalId`. The item does not name the call, so the
part's id is the approval id until the API layer puts the stored call's id in its place
(`app.api.responses_approvals`). An older answer's `mcp_call` with `status: calling` and
`approval_request_id` says the same, with the call id (the request item after it is then
skipped). An `mcp_approval_response` item `{approval_request_id, approve, reason?}`
answers it: the part becomes the claim `{approved, reason}` that the API layer checks
against the stored approval and decides (`app.api.chat_approvals`); here only its shape
is checked.

A function output is read like an OpenAI tool message: JSON text becomes that JSON value,
anything else stays a string, and the call is `success` (the format has no error flag).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from app.domain import jsontext
from app.domain.errors import InvalidRequest
from app.domain.messages import Message
from app.domain.parts import (
    FileData,
    FilePart,
    Part,
    ThinkingData,
    ThinkingPart,
    ToolPart,
    text_part,
    tool_part,
)
from app.translate.data_url import data_url_mime, file_data_url
from app.translate.openai_responses.submissions import as_function_call
from app.translate.tool_args import parse_tool_args

_ASSISTANT_ITEMS = frozenset({"function_call", "reasoning", "mcp_call"})


def _bad(where: str, problem: str) -> InvalidRequest:
    return InvalidRequest(f"{where} {problem}.", param=where)


# --- input -------------------------------------------------------------------------------


def messages_from_responses_input(
    input_value: Any, instructions: str | None, *, field: str = "input"
) -> list[Message]:
    """`instructions` + `input` (a string or a list of items) as our messages; `field` is
    the body field the items came in, which an error names (`items` for Conversations)."""
    out: list[Message] = []
    if instructions:
        out.append(Message(role="system", content=instructions))
    if isinstance(input_value, str):
        out.append(Message(role="user", content=input_value))
        return out
    if not isinstance(input_value, list):
        raise _bad("input", "must be a string or an array of input items")
    for index, item in enumerate(input_value):
        _append_item(out, item, f"{field}[{index}]")
    return out


def _append_item(out: list[Message], item: Any, where: str) -> None:
    if not isinstance(item, Mapping):
        raise _bad(where, "must be an object")
    item = as_function_call(item)  # a client call shown as a submission request
    kind = item.get("type", "message")
    if not isinstance(kind, str):
        raise _bad(where, "has a `type` that is not a string")
    if kind == "message":
        _append_message(out, item, where)
    elif kind in _ASSISTANT_ITEMS:
        part = _assistant_item_part(item, kind, where)
        _append_assistant_part(out, part, kind, item.get("approval_request_id"))
    elif kind == "mcp_approval_response":
        _fold_approval(out, item, where)
    elif kind == "function_call_output":
        _fold_output(out, item, where)
    elif kind == "mcp_approval_request":
        _append_approval_request(out, item, where)
    elif kind == "mcp_submission_request":
        return  # a question to the user, answered through the submissions API, not here
    else:
        raise _bad(where, f"has an unsupported item type {kind!r}")


def _assistant_tail(out: list[Message]) -> list[Part]:
    """The parts of the assistant message now being written (a new one if needed)."""
    if not out or out[-1].role != "assistant" or isinstance(out[-1].content, str):
        out.append(Message(role="assistant", content=[]))
    content = out[-1].content
    assert isinstance(content, list)
    return content


def _append_assistant_part(out: list[Message], part: Part, kind: str, approval: Any) -> None:
    """Append the item's part; a replayed `mcp_call` replaces the earlier state of its call
    (the call that waited for approval, then its outcome in the next response)."""
    if kind == "mcp_call" and isinstance(part, ToolPart):
        for message in out:
            content = message.content
            if message.role != "assistant" or isinstance(content, str):
                continue
            for index, existing in enumerate(content):
                if isinstance(existing, ToolPart) and (
                    existing.id == part.id
                    or (isinstance(approval, str) and existing.data.approvalId == approval)
                ):
                    content[index] = part
                    return
    _assistant_tail(out).append(part)


def _append_approval_request(out: list[Message], item: Mapping[str, Any], where: str) -> None:
    """A call paused for a person's approval, as our answer showed it (see the docstring)."""
    approval_id, name = item.get("id"), item.get("name")
    if not isinstance(approval_id, str) or not approval_id or not isinstance(name, str) or not name:
        raise _bad(where, "is an mcp_approval_request without `id` and `name`")
    if any(p.data.approvalId == approval_id for m in out for p in m.tool_parts()):
        return  # an older answer's `mcp_call` (status `calling`) already carries the call
    raw = item.get("arguments") or ""
    args, _ = parse_tool_args(name, raw if isinstance(raw, str) else "")
    _assistant_tail(out).append(
        tool_part(
            tool_call_id=approval_id,
            tool_name=name,
            status="waitingConfirmation",
            args=args,
            approval_id=approval_id,
        )
    )


def _append_message(out: list[Message], item: Mapping[str, Any], where: str) -> None:
    role = item.get("role")
    content = item.get("content")
    if role in ("system", "developer"):
        out.append(Message(role="system", content=_plain_text(content, where)))
    elif role == "user":
        out.append(Message(role="user", content=_user_content(content, where)))
    elif role == "assistant":
        text = _plain_text(content, where)
        if text:
            _assistant_tail(out).append(text_part(text))
    elif role is None:
        raise _bad(where, "has no `role` (user, assistant, system or developer)")
    else:
        raise _bad(where, f"has an unknown role {role!r}")


def _text_of(part: Mapping[str, Any], where: str) -> str:
    kind = part.get("type")
    value = part.get("refusal") if kind == "refusal" else part.get("text")
    if kind not in ("input_text", "output_text", "text", "refusal") or not isinstance(value, str):
        raise _bad(where, f"may only hold text content here, not {kind!r}")
    return value


def _plain_text(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _bad(where, "needs `content` as a string or an array of content parts")
    return "".join(_text_of(p, where) if isinstance(p, Mapping) else "" for p in content)


def _user_content(content: Any, where: str) -> str | list[Part]:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _bad(where, "needs `content` as a string or an array of content parts")
    parts: list[Part] = []
    for n, part in enumerate(content):
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "input_text":
            parts.append(text_part(_text_of(part, where)))
        elif kind == "input_image":
            parts.append(_image_part(part, where, n))
        elif kind == "input_file":
            parts.append(_file_part(part, where, n))
        else:
            raise _bad(where, f"has an unsupported content part type {kind!r}")
    return parts


def _image_part(part: Mapping[str, Any], where: str, n: int) -> FilePart:
    url = part.get("image_url")
    file_id = part.get("file_id")
    if not isinstance(url, str) and not isinstance(file_id, str):
        raise _bad(where, "has an input_image without `image_url` or `file_id`")
    mime = data_url_mime(url) or "image/*"
    name = str(file_id or f"image-{n}")
    return FilePart(
        data=FileData(id=name, name=name, mimeType=mime, url=url if isinstance(url, str) else None)
    )


def _file_part(part: Mapping[str, Any], where: str, n: int) -> FilePart:
    if part.get("file_url") is not None:
        # Fetching a URL the caller names is not ours to do; passed on, the model would
        # only be told a file exists.
        raise _bad(
            where,
            "has an input_file with `file_url`, which this service does not fetch: upload "
            "the file (POST /api/files) and send its `file_id`, or send `file_data`",
        )
    url = file_data_url(part.get("file_data"))
    file_id = part.get("file_id")
    name = part.get("filename") or file_id or f"file-{n}"
    return FilePart(
        data=FileData(
            id=str(file_id or f"file-{n}"), name=str(name), mimeType=data_url_mime(url), url=url
        )
    )


def _assistant_item_part(item: Mapping[str, Any], kind: str, where: str) -> Part:
    if kind == "reasoning":
        texts = [
            p.get("text")
            for p in [*(item.get("content") or []), *(item.get("summary") or [])]
            if isinstance(p, Mapping) and isinstance(p.get("text"), str)
        ]
        return ThinkingPart(data=ThinkingData(content="\n\n".join(t for t in texts if t)))
    call_id = item.get("call_id") if kind == "function_call" else item.get("id")
    name = item.get("name")
    if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
        key = "call_id" if kind == "function_call" else "id"
        raise _bad(where, f"is a {kind} without `{key}` and `name`")
    raw = item.get("arguments") or ""
    if isinstance(raw, Mapping):  # some compatible clients send an object
        raw = json.dumps(raw)
    if not isinstance(raw, str):
        raise _bad(where, "has `arguments` that are not a JSON string")
    args, problem = parse_tool_args(name, raw)
    if kind == "mcp_call":
        return _server_call_part(item, call_id, name, args)
    if problem is not None:
        return tool_part(tool_call_id=call_id, tool_name=name, status="error", body_content=problem)
    return tool_part(tool_call_id=call_id, tool_name=name, status="waitingConfirmation", args=args)


def _server_call_part(
    item: Mapping[str, Any], call_id: str, name: str, args: dict[str, Any] | None
) -> ToolPart:
    """A server tool call we answered earlier, replayed by the client with its outcome."""
    output = item.get("output")
    error = item.get("error")
    if item.get("status") == "failed" or error:
        message = output if isinstance(output, str) and output else "The tool failed."
        return tool_part(
            tool_call_id=call_id,
            tool_name=name,
            status="error",
            args=args,
            result={"error": message},
            body_content=message,
        )
    approval = item.get("approval_request_id")
    if item.get("status") == "calling" and isinstance(approval, str) and approval:
        return tool_part(
            tool_call_id=call_id,
            tool_name=name,
            status="waitingConfirmation",
            args=args,
            approval_id=approval,
        )
    if item.get("status") == "completed":
        return tool_part(
            tool_call_id=call_id,
            tool_name=name,
            status="success",
            args=args,
            result=_json_or_text(output if isinstance(output, str) else ""),
        )
    return tool_part(tool_call_id=call_id, tool_name=name, status="cancelled", args=args)


def _json_or_text(text: str) -> Any:
    try:
        return jsontext.loads_value(text)
    except json.JSONDecodeError:
        return text


def function_output(item: Mapping[str, Any], where: str) -> tuple[str, Any]:
    """A `function_call_output` item's call id and result (its output read as a tool
    message's content is: JSON text as that value, anything else as a string)."""
    call_id = item.get("call_id")
    if not isinstance(call_id, str) or not call_id:
        raise _bad(where, "is a function_call_output without `call_id`")
    output = item.get("output")
    if isinstance(output, list):
        output = "".join(_text_of(p, where) for p in output if isinstance(p, Mapping))
    if not isinstance(output, str):
        raise _bad(where, "needs `output` as a string or an array of text parts")
    return call_id, _json_or_text(output)


def _fold_output(out: list[Message], item: Mapping[str, Any], where: str) -> None:
    call_id, result = function_output(item, where)
    target = _find_call(out, call_id)
    if target is None:
        raise _bad(where, f"answers call {call_id!r}, which no function_call item made")
    if target.data.result is not None:
        raise _bad(where, f"is a second output for call {call_id!r}")
    target.data.status, target.data.result = "success", result


def _fold_approval(out: list[Message], item: Mapping[str, Any], where: str) -> None:
    """A human's answer to an approval request: the claim on the call it asked about."""
    approval_id = item.get("approval_request_id")
    approve = item.get("approve")
    reason = item.get("reason")
    if not isinstance(approval_id, str) or not approval_id:
        raise _bad(where, "is an mcp_approval_response without `approval_request_id`")
    if not isinstance(approve, bool):
        raise _bad(where, "needs `approve` as true or false")
    if reason is not None and not isinstance(reason, str):
        raise _bad(where, "has a `reason` that is not a string")
    target = next(
        (
            p
            for m in reversed(out)
            if m.role == "assistant"
            for p in m.tool_parts()
            if p.data.approvalId == approval_id
        ),
        None,
    )
    if target is None:
        raise _bad(
            where,
            f"answers approval {approval_id!r}, which no mcp_approval_request item in input "
            "asks for; send the response's output back with the answer",
        )
    if target.data.status != "waitingConfirmation":
        raise _bad(where, f"is a second answer to approval {approval_id!r}")
    decision: dict[str, Any] = {"approved": approve}
    if reason:
        decision["reason"] = reason
    target.data.status = "success" if approve else "cancelled"
    target.data.result = decision


def _find_call(out: list[Message], call_id: str) -> ToolPart | None:
    for message in reversed(out):
        if message.role != "assistant":
            continue
        for part in message.tool_parts():
            if part.id == call_id:
                return part
    return None
