"""OpenAI Responses streaming: run events -> `event: <type>` / `data: {type, sequence_number,
...}` frames, the wire the openai SDK's `responses.create(stream=True)` / `responses.stream`
and Gravity UI AIKit's `useOpenAIStreamAdapter` read.

Output items, in the order they happen, each added and then done before the run ends:

- text -> a `message` item with one `output_text` part (`content_part.added`,
  `output_text.delta`..., `output_text.done`, `content_part.done`). Text from a later model
  call (after tools ran) is a new message item, which is how AIKit splits it too.
- thinking -> a `reasoning` item (`reasoning_text.delta`...). `response.reasoning_text.done`
  is deliberately never sent: AIKit 2.2 reads the top-level `text` of any event it does not
  know as answer text, so that event would paste the reasoning into the reply. The full
  reasoning arrives in the item's `output_item.done`, which is what AIKit folds into its
  thinking part (and what the SDK's accumulator keeps).
- client tools (declared in the request's `tools`) -> `function_call` items whose arguments
  stream as `function_call_arguments.delta`; the item is done when the call is parked for
  the client (the run then ends `completed`, as OpenAI's does, with the calls in `output`).
  A client call the loop refused (bad JSON arguments) is closed `incomplete` and left out
  of the final `output`: the model already got the error, nothing is left to run.
- server tools (ran inside our loop) -> `mcp_call` items with `server_label: "chat-bff"`,
  the Responses shape for a tool the server already executed, so an SDK client never tries
  to run them itself. AIKit renders them as tool cards: `loading` when added, then
  `success` (`output` is the result as text) or `error` (`status: failed`; the message is in
  `output` too, because AIKit only shows string errors and the SDK types `error` as an
  object). A call awaiting a human's approval is closed with `status: calling` and
  `approval_request_id`, followed by an `mcp_approval_request` item (AIKit: a
  `waitingConfirmation` card); decide it through `/api/approvals/{id}` and send the turn
  again.
- the end: `response.completed` (run `completed` or `requires_action`), `response.incomplete`
  (`max_iterations` -> `incomplete_details.reason: "max_output_tokens"`, the closest reason
  OpenAI names for a spent budget; `cancelled`/`interrupted` -> status `cancelled`), or an
  `error` event followed by `response.failed` (AIKit stops at `error`, SDK readers get the
  `response.error`). Every terminal response carries the full `output` and `usage`.

Ids are derived from the run (`resp_<run>`, `msg_<run>_<n>`, `rs_<run>_<n>`, `fc_<call id>`;
an `mcp_call` keeps our tool call id), so the encoder is deterministic: the non-streaming
answer is this encoder's final response for the same events, identical by construction.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal, assert_never

from app.domain.events import (
    ConfirmRequired,
    ErrorEvent,
    MessageEnd,
    RunEnd,
    RunStart,
    SequencedEvent,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ToolArgsDelta,
    ToolEnd,
    ToolError,
    ToolStart,
)
from app.domain.parts import ToolPart

SERVER_LABEL = "chat-bff"
ItemKind = Literal["message", "reasoning", "function_call", "mcp_call", "mcp_approval_request"]
_RATE_LIMIT_CODES = frozenset({"rate_limited", "rate_limit_exceeded"})


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _text(value: Any) -> str:
    """A tool result as the string the Responses wire carries."""
    if value is None:
        return ""
    return value if isinstance(value, str) else _dumps(value)


@dataclass
class _Item:
    index: int
    kind: ItemKind
    id: str
    name: str = ""
    call_id: str = ""
    text: str = ""  # message text, reasoning text, or arguments
    status: str = "in_progress"
    output: str | None = None
    error: dict[str, Any] | None = None
    approval_request_id: str | None = None
    dropped: bool = False

    def wire(self, *, added: bool = False) -> dict[str, Any]:
        text = "" if added else self.text
        if self.kind == "message":
            content = [] if added else [_output_text(text)]
            return {
                "id": self.id,
                "type": "message",
                "role": "assistant",
                "status": self.status,
                "content": content,
            }
        if self.kind == "reasoning":
            reasoning = [] if added else [{"type": "reasoning_text", "text": text}]
            return {
                "id": self.id,
                "type": "reasoning",
                "summary": [],
                "content": reasoning,
                "status": self.status,
            }
        if self.kind == "function_call":
            return {
                "id": self.id,
                "type": "function_call",
                "call_id": self.call_id,
                "name": self.name,
                "arguments": text,
                "status": self.status,
            }
        if self.kind == "mcp_call":
            return {
                "id": self.id,
                "type": "mcp_call",
                "name": self.name,
                "server_label": SERVER_LABEL,
                "arguments": text,
                "status": self.status,
                "output": None if added else self.output,
                "error": None if added else self.error,
                "approval_request_id": None if added else self.approval_request_id,
            }
        if self.kind == "mcp_approval_request":
            return {
                "id": self.id,
                "type": "mcp_approval_request",
                "name": self.name,
                "server_label": SERVER_LABEL,
                "arguments": self.text,
            }
        assert_never(self.kind)


def _output_text(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


@dataclass
class ResponsesEncoder:
    """Stateful and deterministic: feed it a run's event batches in order.

    `request` is what the Response object echoes back (instructions, tools in Responses
    shape, tool_choice, temperature, max_output_tokens, metadata, parallel_tool_calls).
    After `run_end`, `final` holds the terminal Response object.
    """

    response_id: str
    model: str
    created_at: int
    client_tools: frozenset[str]
    request: dict[str, Any] = field(default_factory=dict)
    final: dict[str, Any] | None = None
    _seq: int = 0
    _items: list[_Item] = field(default_factory=list)
    _text: _Item | None = None
    _reasoning: _Item | None = None
    _tools: dict[str, _Item] = field(default_factory=dict)
    _error: dict[str, Any] | None = None

    # -- framing ---------------------------------------------------------------------

    def _emit(self, kind: str, **fields: Any) -> bytes:
        body = {"type": kind, **fields, "sequence_number": self._seq}
        self._seq += 1
        return b"event: %s\ndata: %s\n\n" % (kind.encode(), _dumps(body).encode())

    def response(self, status: str, **extra: Any) -> dict[str, Any]:
        """The Response object as it stands (only finished items are in `output`)."""
        body: dict[str, Any] = {
            "id": self.response_id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "error": None,
            "incomplete_details": None,
            "instructions": self.request.get("instructions"),
            "max_output_tokens": self.request.get("max_output_tokens"),
            "metadata": self.request.get("metadata") or {},
            "model": self.model,
            "output": [],
            "parallel_tool_calls": self.request.get("parallel_tool_calls", True),
            "previous_response_id": None,
            "temperature": self.request.get("temperature"),
            "text": {"format": {"type": "text"}},
            "tool_choice": self.request.get("tool_choice") or "auto",
            "tools": self.request.get("tools") or [],
            "top_p": None,
            "truncation": "disabled",
            "usage": None,
        }
        body.update(extra)
        return body

    def encode(self, batch: list[SequencedEvent]) -> bytes:
        return b"".join(self._one(item) for item in batch)

    # -- events ----------------------------------------------------------------------

    def _one(self, item: SequencedEvent) -> bytes:
        event = item.event
        if isinstance(event, RunStart):
            created = self.response("in_progress")
            return self._emit("response.created", response=created) + self._emit(
                "response.in_progress", response=created
            )
        if isinstance(event, TextDeltaEvent):
            return self._text_delta(event.delta)
        if isinstance(event, ThinkingDeltaEvent):
            return self._thinking_delta(event.delta)
        if isinstance(event, ToolStart):
            return self._tool_start(event.part)
        if isinstance(event, ToolArgsDelta):
            return self._args_delta(event.tool_call_id, event.delta)
        if isinstance(event, ConfirmRequired):
            return self._confirm(event)
        if isinstance(event, ToolEnd):
            return self._tool_done(event.part, error=None)
        if isinstance(event, ToolError):
            return self._tool_done(event.part, error=event.error)
        if isinstance(event, MessageEnd):
            cut = (event.message.metadata or {}).get("status") == "incomplete"
            return self._close_all("incomplete" if cut else "completed")
        if isinstance(event, ErrorEvent):
            self._error = {
                "code": "rate_limit_exceeded"
                if event.code in _RATE_LIMIT_CODES
                else "server_error",
                "message": event.message,
                "type": event.code,
            }
            return self._emit("error", code=event.code, message=event.message, param=None)
        if isinstance(event, RunEnd):
            return self._end(event)
        assert_never(event)

    def _open(self, kind: ItemKind, item_id: str, **fields: Any) -> tuple[_Item, bytes]:
        item = _Item(index=len(self._items), kind=kind, id=item_id, **fields)
        self._items.append(item)
        return item, self._emit(
            "response.output_item.added", output_index=item.index, item=item.wire(added=True)
        )

    def _done(self, item: _Item) -> bytes:
        return self._emit("response.output_item.done", output_index=item.index, item=item.wire())

    def _text_delta(self, delta: str) -> bytes:
        out = self._close_reasoning("completed")
        if self._text is None:
            base = self.response_id.removeprefix("resp_")
            self._text, added = self._open("message", f"msg_{base}_{len(self._items)}")
            out += added + self._emit(
                "response.content_part.added",
                item_id=self._text.id,
                output_index=self._text.index,
                content_index=0,
                part={"type": "output_text", "text": "", "annotations": []},
            )
        self._text.text += delta
        return out + self._emit(
            "response.output_text.delta",
            item_id=self._text.id,
            output_index=self._text.index,
            content_index=0,
            delta=delta,
            logprobs=[],
        )

    def _thinking_delta(self, delta: str) -> bytes:
        out = self._close_text("completed")
        if self._reasoning is None:
            base = self.response_id.removeprefix("resp_")
            self._reasoning, added = self._open("reasoning", f"rs_{base}_{len(self._items)}")
            out += added + self._emit(
                "response.content_part.added",
                item_id=self._reasoning.id,
                output_index=self._reasoning.index,
                content_index=0,
                part={"type": "reasoning_text", "text": ""},
            )
        self._reasoning.text += delta
        return out + self._emit(
            "response.reasoning_text.delta",
            item_id=self._reasoning.id,
            output_index=self._reasoning.index,
            content_index=0,
            delta=delta,
        )

    def _close_text(self, status: str) -> bytes:
        item, self._text = self._text, None
        if item is None:
            return b""
        item.status = status
        where = {"item_id": item.id, "output_index": item.index, "content_index": 0}
        return (
            self._emit("response.output_text.done", **where, text=item.text, logprobs=[])
            + self._emit(
                "response.content_part.done",
                **where,
                part={"type": "output_text", "text": item.text, "annotations": []},
            )
            + self._done(item)
        )

    def _close_reasoning(self, status: str) -> bytes:
        item, self._reasoning = self._reasoning, None
        if item is None:
            return b""
        item.status = status
        return self._emit(
            "response.content_part.done",
            item_id=item.id,
            output_index=item.index,
            content_index=0,
            part={"type": "reasoning_text", "text": item.text},
        ) + self._done(item)

    def _tool_start(self, part: ToolPart) -> bytes:
        out = self._close_text("completed") + self._close_reasoning("completed")
        name = part.data.toolName
        if name in self.client_tools:
            item, added = self._open("function_call", f"fc_{part.id}", name=name, call_id=part.id)
            self._tools[part.id] = item
            return out + added
        item, added = self._open("mcp_call", part.id, name=name)
        self._tools[part.id] = item
        return (
            out
            + added
            + self._emit("response.mcp_call.in_progress", item_id=item.id, output_index=item.index)
        )

    def _args_delta(self, call_id: str, delta: str) -> bytes:
        item = self._tools.get(call_id)
        if item is None:
            return b""
        item.text += delta
        kind = (
            "response.function_call_arguments.delta"
            if item.kind == "function_call"
            else "response.mcp_call_arguments.delta"
        )
        return self._emit(kind, item_id=item.id, output_index=item.index, delta=delta)

    def _finish_args(self, item: _Item, part: ToolPart | None) -> bytes:
        """Settle the final arguments text (a server tool's may be pinned or edited)."""
        args = part.data.args if part is not None else None
        if args is not None and (item.kind == "mcp_call" or not item.text.strip()):
            item.text = _dumps(args)
        kind = (
            "response.function_call_arguments.done"
            if item.kind == "function_call"
            else "response.mcp_call_arguments.done"
        )
        return self._emit(kind, item_id=item.id, output_index=item.index, arguments=item.text)

    def _tool_done(self, part: ToolPart, *, error: str | None) -> bytes:
        item = self._tools.pop(part.id, None)
        if item is None:  # a call that was never announced (defensive: nothing to close)
            return b""
        out = self._finish_args(item, part)
        where = {"item_id": item.id, "output_index": item.index}
        if item.kind == "function_call":
            # Only a refused call ends here (a client tool never runs on the server).
            item.status = "completed" if error is None else "incomplete"
            item.dropped = error is not None
            return out + self._done(item)
        if error is None:
            item.status, item.output = "completed", _text(part.data.result)
            return out + self._emit("response.mcp_call.completed", **where) + self._done(item)
        item.status, item.output = "failed", error
        item.error = {"type": "mcp_tool_execution_error", "content": error}
        return out + self._emit("response.mcp_call.failed", **where) + self._done(item)

    def _confirm(self, event: ConfirmRequired) -> bytes:
        item = self._tools.pop(event.part.id, None)
        if item is None:
            return b""
        out = self._finish_args(item, event.part)
        if item.kind == "function_call":
            item.status = "completed"
            return out + self._done(item)
        item.status, item.approval_request_id = "calling", event.approval_id
        out += self._done(item)
        if event.approval_id is None:
            return out
        request, added = self._open(
            "mcp_approval_request", event.approval_id, name=item.name, text=item.text
        )
        return out + added + self._done(request)

    def _close_all(self, status: str) -> bytes:
        out = self._close_text(status) + self._close_reasoning(status)
        for call_id in list(self._tools):
            item = self._tools.pop(call_id)
            out += self._finish_args(item, None)
            item.status, item.dropped = "incomplete", item.kind == "function_call"
            out += self._done(item)
        return out

    def _end(self, event: RunEnd) -> bytes:
        settled = event.status in ("completed", "requires_action")
        out = self._close_all("completed" if settled else "incomplete")
        input_tokens, output_tokens = event.usage.input_tokens, event.usage.output_tokens
        final = self.response(
            "completed",
            output=[i.wire() for i in self._items if not i.dropped],
            usage={
                "input_tokens": input_tokens,
                "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                "output_tokens": output_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": input_tokens + output_tokens,
            },
        )
        kind = "response.completed"
        if event.status == "max_iterations":
            kind = "response.incomplete"
            final.update(status="incomplete", incomplete_details={"reason": "max_output_tokens"})
        elif event.status in ("cancelled", "interrupted"):
            kind = "response.incomplete"
            final["status"] = "cancelled"
        elif event.status == "failed":
            kind = "response.failed"
            error = self._error or {
                "code": "server_error",
                "message": str((event.error or {}).get("message") or "The run failed."),
                "type": str((event.error or {}).get("code") or "internal_error"),
            }
            final.update(status="failed", error=error)
        self.final = final
        return out + self._emit(kind, response=final)
