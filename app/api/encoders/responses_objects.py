"""The objects of the OpenAI Responses wire: the Response, its output items, usage, errors.

Kept apart from the encoder (`responses.py`), which decides *when* an item is added or
done; this module only knows what each object looks like, field for field as the openai
SDK types them, so both the streamed frames and the non-streaming answer carry the same
objects.

How our parts map to output items, and why:

- text -> a `message` item with one `output_text` part;
- thinking -> a `reasoning` item whose text is a `reasoning_text` content part (the SDK's
  accumulator and AIKit both fold it from the item's `output_item.done`);
- client tools (declared in the request's `tools`) -> `function_call` items, the calls the
  client must run itself;
- server tools (ran inside our loop) -> `mcp_call` items with `server_label: "chat-bff"`,
  the Responses shape for a tool the server already executed, so an SDK client never tries
  to run them itself. A result is `output` as text; a failure is `status: failed` with the
  message in `output` too, because AIKit only shows string errors and the SDK types
  `error` as an object. A call awaiting a human's approval carries `approval_request_id`;
- an approval -> an `mcp_approval_request` item (AIKit: a `waitingConfirmation` card);
- a server tool asking the user mid-call -> an `mcp_submission_request` item, the only
  shape AIKit 2.2 reads as `waitingSubmission` (its id is the call's; `message` and
  `requested_schema` are the question, which AIKit does not read).

An item as first announced (`output_item.added`) has no content, output or error yet.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, assert_never

from app.api.schemas.responses_items import (
    FunctionCallItem,
    IncompleteDetails,
    InputTokensDetails,
    ItemStatus,
    McpApprovalRequestItem,
    McpCallItem,
    McpSubmissionRequestItem,
    MessageItem,
    OutputText,
    ReasoningItem,
    ReasoningText,
    ResponseError,
    ResponseObject,
    ResponseStatus,
    ResponseUsage,
)
from app.api.schemas.responses_items import OutputItem as WireItem
from app.domain.errors import openai_error_type
from app.translate.openai_responses.submissions import CLIENT_LABEL

__all__ = ["CLIENT_LABEL", "SERVER_LABEL"]

SERVER_LABEL = "chat-bff"
ItemKind = Literal[
    "message",
    "reasoning",
    "function_call",
    "mcp_call",
    "mcp_approval_request",
    "mcp_submission_request",
]


def dumps(value: Any) -> str:
    """Compact JSON, the spelling of every argument text we settle."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def result_text(value: Any) -> str:
    """A tool result as the string the Responses wire carries."""
    if value is None:
        return ""
    return value if isinstance(value, str) else dumps(value)


@dataclass
class OutputItem:
    """One output item as the encoder builds it up; `wire` is the item at this moment."""

    index: int
    kind: ItemKind
    id: str
    name: str = ""
    call_id: str = ""
    text: str = ""  # message text, reasoning text, or arguments
    status: ItemStatus = "in_progress"
    output: str | None = None
    error: dict[str, Any] | None = None
    approval_request_id: str | None = None
    question: str = ""  # what a call asking the user asks, and the answer's schema
    answer_schema: dict[str, Any] | None = None
    label: str = SERVER_LABEL  # an `mcp_submission_request`'s server_label
    dropped: bool = False

    def wire(self, *, added: bool = False) -> WireItem:
        text = "" if added else self.text
        if self.kind == "message":
            content = [] if added else [output_text(text)]
            return MessageItem(id=self.id, status=self.status, content=content)
        if self.kind == "reasoning":
            reasoning = [] if added else [ReasoningText(text=text)]
            return ReasoningItem(id=self.id, content=reasoning, status=self.status)
        if self.kind == "function_call":
            return FunctionCallItem(
                id=self.id, call_id=self.call_id, name=self.name, arguments=text, status=self.status
            )
        if self.kind == "mcp_call":
            return McpCallItem(
                id=self.id,
                name=self.name,
                server_label=SERVER_LABEL,
                arguments=text,
                status=self.status,
                output=None if added else self.output,
                error=None if added else self.error,
                approval_request_id=None if added else self.approval_request_id,
            )
        if self.kind == "mcp_approval_request":
            return McpApprovalRequestItem(
                id=self.id, name=self.name, server_label=SERVER_LABEL, arguments=self.text
            )
        if self.kind == "mcp_submission_request":
            return McpSubmissionRequestItem(
                id=self.id,
                name=self.name,
                server_label=self.label,
                arguments=self.text,
                message=self.question,
                requested_schema=self.answer_schema or {},
            )
        assert_never(self.kind)


def output_text(text: str) -> OutputText:
    """The `output_text` content part of a finished message item."""
    return OutputText(text=text, logprobs=[])


def response_object(
    *,
    response_id: str,
    model: str,
    created_at: int,
    request: dict[str, Any],
    status: ResponseStatus,
    output: list[WireItem] | None = None,
    usage: ResponseUsage | None = None,
    error: ResponseError | None = None,
    incomplete: IncompleteDetails | None = None,
) -> ResponseObject:
    """The Response object; `request` holds what it echoes back.

    Echoed: instructions, tools in Responses shape, tool_choice, temperature,
    max_output_tokens, metadata, parallel_tool_calls, conversation, background,
    previous_response_id.
    """
    return ResponseObject(
        id=response_id,
        created_at=created_at,
        status=status,
        error=error,
        incomplete_details=incomplete,
        instructions=request.get("instructions"),
        max_output_tokens=request.get("max_output_tokens"),
        metadata=request.get("metadata") or {},
        model=model,
        output=output or [],
        parallel_tool_calls=request.get("parallel_tool_calls", True),
        previous_response_id=request.get("previous_response_id"),
        temperature=request.get("temperature"),
        tool_choice=request.get("tool_choice") or "auto",
        tools=request.get("tools") or [],
        usage=usage,
        conversation=request.get("conversation"),
        background=request.get("background"),
    )


def usage_object(input_tokens: int, output_tokens: int, cached_tokens: int = 0) -> ResponseUsage:
    """A terminal Response's `usage` (we count no reasoning or cache-write tokens apart)."""
    return ResponseUsage(
        input_tokens=input_tokens,
        input_tokens_details=InputTokensDetails(cached_tokens=cached_tokens),
        output_tokens=output_tokens,
        total_tokens=input_tokens + output_tokens,
    )


def stream_error_object(code: str, message: str) -> ResponseError:
    """A failed Response's `error` for an error the run streamed (its code kept as `type`).

    OpenAI names only two error codes a client can act on here: a rate limit, and the rest.
    """
    return ResponseError(code=openai_error_type(code), message=message, type=code)


def run_error_object(error: dict[str, Any] | None, *, interrupted: bool = False) -> ResponseError:
    """A failed Response's `error` when the run ended failed (or `interrupted`: its
    process stopped under it) without streaming an error."""
    said = error or {}
    message, code = ("The run failed.", "internal_error")
    if interrupted:
        message, code = ("The run was interrupted.", "interrupted")
    return ResponseError(
        code="server_error",
        message=str(said.get("message") or message),
        type=str(said.get("code") or code),
    )
