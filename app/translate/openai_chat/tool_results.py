"""The content of an OpenAI `role: "tool"` message, both ways: one contract, one module.

OpenAI keeps tool results in tool messages; we keep them inside the assistant message's
tool part (status + result), the shape AIKit renders. `write` turns a part into a tool
message's content with `tool_result_content`, `read` turns the content back with
`read_tool_result`; keeping both halves here is what makes the round trip exact.

A tool message has no error flag, so a result the model or a client wrote as
`{"error": ...}` is an ordinary successful result (a search tool may well return an
`error` field) and stays `success`. Only our own envelope, `{"status": "error" |
"cancelled" | "pending", ...}` with nothing else but `error` / `message`, carries a status
back: that is what we write for error, cancelled and unfinished parts, and the text is
still plain for the model to read.

Non-final tool parts (`loading`, `waitingConfirmation`, `waitingSubmission`) still get a
tool message, the "pending" envelope: OpenAI refuses a history in which an assistant
`tool_calls` entry has no answer, and a run paused for a human must still be replayable to
another model call. Read back, such a part keeps its waiting status and has no result.

A string result is sent as the string itself (the model reads plain text); on the way back
content that parses as JSON becomes that JSON value, so a string result that happens to
be JSON text (e.g. `"42"`) comes back as the number.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from app.domain import jsontext
from app.domain.parts import ToolData

CANCELLED_TEXT = "The user cancelled this tool call; the tool did not run."
PENDING_TEXT = "No result yet: this tool call has not finished (it may await a human)."
_ENVELOPE_STATUSES = frozenset({"error", "cancelled", "pending"})

ReadStatus = Literal["success", "error", "cancelled"]


def canonical_json(value: Any) -> str:
    """The one spelling of a JSON value we emit, so equal arguments give equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def tool_result_content(data: ToolData) -> str:
    """The tool message content answering a call, whatever the call's status."""
    if data.status == "success":
        result = data.result
        return result if isinstance(result, str) else canonical_json(result)
    if data.status == "error":
        error = data.result if data.result is not None else data.bodyContent or "The tool failed."
        return canonical_json({"status": "error", "error": error})
    if data.status == "cancelled":
        return canonical_json({"status": "cancelled", "message": CANCELLED_TEXT})
    return canonical_json({"status": "pending", "message": PENDING_TEXT})


def read_tool_result(text: str) -> tuple[ReadStatus, Any] | None:
    """The status and result a tool message's text gives its tool part.

    None for the pending envelope: the part keeps its waiting status and has no result.
    """
    try:
        value: Any = jsontext.loads_value(text)
    except json.JSONDecodeError:
        value = text
    envelope = _envelope(value)
    if envelope is None:
        return "success", value
    status, detail = envelope
    if status == "error":
        return "error", detail
    if status == "cancelled":
        return "cancelled", None
    return None


def _envelope(value: Any) -> tuple[str, Any] | None:
    if not isinstance(value, dict) or value.get("status") not in _ENVELOPE_STATUSES:
        return None
    if not set(value) <= {"status", "error", "message"}:
        return None
    return value["status"], value.get("error", value.get("message"))
