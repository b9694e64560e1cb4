"""OpenAI Responses streaming: run events -> `event: <type>` / `data: {type, sequence_number,
...}` frames, the wire the openai SDK's `responses.create(stream=True)` / `responses.stream`
and Gravity UI AIKit's `useOpenAIStreamAdapter` read.

This module is the sequencing: which frames an event writes, in which order, when an item
is added and done. What the Response object and its items look like is `responses_objects`.

Output items, in the order they happen, each added and then done before the run ends:

- text -> `content_part.added`, `output_text.delta`..., `output_text.done`,
  `content_part.done`. Text from a later model call (after tools ran) is a new message
  item, which is how AIKit splits it too.
- thinking -> `reasoning_text.delta`... `response.reasoning_text.done` is deliberately
  never sent: AIKit 2.2 reads the top-level `text` of any event it does not know as answer
  text, so that event would paste the reasoning into the reply. The full reasoning arrives
  in the item's `output_item.done`, which is what AIKit folds into its thinking part (and
  what the SDK's accumulator keeps).
- client tools -> arguments stream as `function_call_arguments.delta`; the item is done
  when the call is parked for the client (the run then ends `completed`, as OpenAI's does,
  with the calls in `output`). A client call the loop refused (bad JSON arguments) is
  closed `incomplete` and left out of the final `output`: the model already got the
  error, nothing is left to run.
- server tools -> `mcp_call.in_progress`, `mcp_call_arguments.delta`..., then
  `mcp_call.completed` or `mcp_call.failed`. AIKit renders them as tool cards: `loading`
  when added, then `success` or `error`. A call awaiting a human's approval is closed with
  `status: calling` and `approval_request_id`, followed by an `mcp_approval_request` item;
  decide it through `/api/approvals/{id}` and send the turn again.
- the end: `response.completed` (run `completed` or `requires_action`), `response.incomplete`
  (`max_iterations`, `budget_exceeded` -> `incomplete_details.reason: "max_output_tokens"`,
  OpenAI's closest; `cancelled`/`interrupted` -> status `cancelled`), or an `error` event
  then `response.failed` (AIKit stops at `error`, SDK readers get the `response.error`).
  Every terminal response carries the full `output` and `usage`.

Ids are derived from the run (`resp_<run>`, `msg_<run>_<n>`, `rs_<run>_<n>`, `fc_<call id>`;
an `mcp_call` keeps our tool call id), so the encoder is deterministic: the non-streaming
answer is this encoder's final response for the same events, identical by construction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, assert_never

from pydantic import BaseModel

from app.api.encoders.responses_objects import (
    ItemKind,
    OutputItem,
    dumps,
    response_object,
    result_text,
    run_error_object,
    stream_error_object,
    usage_object,
)
from app.api.schemas.responses_events import (
    ContentPartAdded,
    ContentPartDone,
    FunctionCallArgumentsDelta,
    FunctionCallArgumentsDone,
    McpCallArgumentsDelta,
    McpCallArgumentsDone,
    McpCallCompleted,
    McpCallFailed,
    McpCallInProgress,
    OutputItemAdded,
    OutputItemDone,
    OutputTextDelta,
    OutputTextDone,
    ReasoningTextDelta,
    ResponseCompleted,
    ResponseCreated,
    ResponseErrorEvent,
    ResponseFailed,
    ResponseIncomplete,
    ResponseInProgress,
)
from app.api.schemas.responses_items import (
    IncompleteDetails,
    OutputText,
    ReasoningText,
    ResponseError,
    ResponseObject,
    ResponseStatus,
)
from app.domain.events import (
    ConfirmRequired,
    ErrorEvent,
    MessageEnd,
    PartUpdate,
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
    final: ResponseObject | None = None
    _seq: int = 0
    _items: list[OutputItem] = field(default_factory=list)
    _text: OutputItem | None = None
    _reasoning: OutputItem | None = None
    _tools: dict[str, OutputItem] = field(default_factory=dict)
    _error: ResponseError | None = None
    _refused: bool = False  # the model declined (content_filter)

    # -- framing ---------------------------------------------------------------------

    def _next(self) -> int:
        """The next event's `sequence_number`."""
        self._seq += 1
        return self._seq - 1

    @staticmethod
    def _emit(event: BaseModel) -> bytes:
        kind: str = getattr(event, "type")  # noqa: B009 - every event model has one
        data = event.__pydantic_serializer__.to_json(event)
        return b"event: %s\ndata: %s\n\n" % (kind.encode(), data)

    def _response(self, status: ResponseStatus, **extra: Any) -> ResponseObject:
        """The Response object as it stands (only finished items are in `output`)."""
        return response_object(
            response_id=self.response_id,
            model=self.model,
            created_at=self.created_at,
            request=self.request,
            status=status,
            **extra,
        )

    def encode(self, batch: list[SequencedEvent]) -> bytes:
        return b"".join(self._one(item) for item in batch)

    # -- events ----------------------------------------------------------------------

    def _one(self, item: SequencedEvent) -> bytes:
        event = item.event
        if isinstance(event, RunStart):
            created = self._response("in_progress")
            return self._emit(
                ResponseCreated(response=created, sequence_number=self._next())
            ) + self._emit(ResponseInProgress(response=created, sequence_number=self._next()))
        if isinstance(event, TextDeltaEvent):
            return self._text_delta(event.delta)
        if isinstance(event, ThinkingDeltaEvent):
            return self._thinking_delta(event.delta)
        if isinstance(event, ToolStart):
            return self._tool_start(event.part)
        if isinstance(event, ToolArgsDelta):
            return self._args_delta(event.tool_call_id, event.delta)
        if isinstance(event, ConfirmRequired | PartUpdate):
            # An update is of an earlier message's part: no item of this response.
            return self._confirm(event) if isinstance(event, ConfirmRequired) else b""
        if isinstance(event, ToolEnd):
            return self._tool_done(event.part, error=None)
        if isinstance(event, ToolError):
            return self._tool_done(event.part, error=event.error)
        if isinstance(event, MessageEnd):
            metadata = event.message.metadata or {}
            self._refused = metadata.get("finish_reason") == "content_filter"
            cut = metadata.get("status") == "incomplete"
            return self._close_all("incomplete" if cut else "completed")
        if isinstance(event, ErrorEvent):
            self._error = stream_error_object(event.code, event.message)
            error = ResponseErrorEvent(
                code=event.code, message=event.message, sequence_number=self._next()
            )
            return self._emit(error)
        if isinstance(event, RunEnd):
            return self._end(event)
        assert_never(event)

    def _open(self, kind: ItemKind, item_id: str, **fields: Any) -> tuple[OutputItem, bytes]:
        item = OutputItem(index=len(self._items), kind=kind, id=item_id, **fields)
        self._items.append(item)
        return item, self._emit(
            OutputItemAdded(
                output_index=item.index, item=item.wire(added=True), sequence_number=self._next()
            )
        )

    def _done(self, item: OutputItem) -> bytes:
        return self._emit(
            OutputItemDone(output_index=item.index, item=item.wire(), sequence_number=self._next())
        )

    def _text_delta(self, delta: str) -> bytes:
        out = self._close_reasoning("completed")
        if self._text is None:
            base = self.response_id.removeprefix("resp_")
            self._text, added = self._open("message", f"msg_{base}_{len(self._items)}")
            out += added + self._emit(
                ContentPartAdded(
                    item_id=self._text.id,
                    output_index=self._text.index,
                    content_index=0,
                    part=OutputText(text=""),
                    sequence_number=self._next(),
                )
            )
        self._text.text += delta
        return out + self._emit(
            OutputTextDelta(
                item_id=self._text.id,
                output_index=self._text.index,
                content_index=0,
                delta=delta,
                sequence_number=self._next(),
            )
        )

    def _thinking_delta(self, delta: str) -> bytes:
        out = self._close_text("completed")
        if self._reasoning is None:
            base = self.response_id.removeprefix("resp_")
            self._reasoning, added = self._open("reasoning", f"rs_{base}_{len(self._items)}")
            out += added + self._emit(
                ContentPartAdded(
                    item_id=self._reasoning.id,
                    output_index=self._reasoning.index,
                    content_index=0,
                    part=ReasoningText(text=""),
                    sequence_number=self._next(),
                )
            )
        self._reasoning.text += delta
        return out + self._emit(
            ReasoningTextDelta(
                item_id=self._reasoning.id,
                output_index=self._reasoning.index,
                content_index=0,
                delta=delta,
                sequence_number=self._next(),
            )
        )

    def _close_text(self, status: Literal["completed", "incomplete"]) -> bytes:
        item, self._text = self._text, None
        if item is None:
            return b""
        item.status = status
        where: dict[str, Any] = {"item_id": item.id, "output_index": item.index, "content_index": 0}
        done = self._emit(OutputTextDone(**where, text=item.text, sequence_number=self._next()))
        part = OutputText(text=item.text)
        return (
            done
            + self._emit(ContentPartDone(**where, part=part, sequence_number=self._next()))
            + self._done(item)
        )

    def _close_reasoning(self, status: Literal["completed", "incomplete"]) -> bytes:
        item, self._reasoning = self._reasoning, None
        if item is None:
            return b""
        item.status = status
        return self._emit(
            ContentPartDone(
                item_id=item.id,
                output_index=item.index,
                content_index=0,
                part=ReasoningText(text=item.text),
                sequence_number=self._next(),
            )
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
        started = McpCallInProgress(
            item_id=item.id, output_index=item.index, sequence_number=self._next()
        )
        return out + added + self._emit(started)

    def _args_delta(self, call_id: str, delta: str) -> bytes:
        item = self._tools.get(call_id)
        if item is None:
            return b""
        item.text += delta
        kind = FunctionCallArgumentsDelta if item.kind == "function_call" else McpCallArgumentsDelta
        return self._emit(
            kind(
                item_id=item.id, output_index=item.index, delta=delta, sequence_number=self._next()
            )
        )

    def _finish_args(self, item: OutputItem, part: ToolPart | None) -> bytes:
        """Settle the final arguments text (a server tool's may be pinned or edited)."""
        args = part.data.args if part is not None else None
        if args is not None and (item.kind == "mcp_call" or not item.text.strip()):
            item.text = dumps(args)
        kind = FunctionCallArgumentsDone if item.kind == "function_call" else McpCallArgumentsDone
        return self._emit(
            kind(
                item_id=item.id,
                output_index=item.index,
                arguments=item.text,
                sequence_number=self._next(),
            )
        )

    def _tool_done(self, part: ToolPart, *, error: str | None) -> bytes:
        item = self._tools.pop(part.id, None)
        if item is None:  # a call that was never announced (defensive: nothing to close)
            return b""
        out = self._finish_args(item, part)
        where: dict[str, Any] = {"item_id": item.id, "output_index": item.index}
        if item.kind == "function_call":
            # Only a refused call ends here (a client tool never runs on the server).
            item.status = "completed" if error is None else "incomplete"
            item.dropped = error is not None
            return out + self._done(item)
        if error is None:
            item.status, item.output = "completed", result_text(part.data.result)
            completed = McpCallCompleted(**where, sequence_number=self._next())
            return out + self._emit(completed) + self._done(item)
        item.status, item.output = "failed", error
        item.error = {"type": "mcp_tool_execution_error", "content": error}
        failed = McpCallFailed(**where, sequence_number=self._next())
        return out + self._emit(failed) + self._done(item)

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

    def _close_all(self, status: Literal["completed", "incomplete"]) -> bytes:
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
        usage = event.usage
        output = [i.wire() for i in self._items if not i.dropped]
        status: ResponseStatus = "completed"
        kind: type[ResponseCompleted | ResponseIncomplete | ResponseFailed] = ResponseCompleted
        incomplete: IncompleteDetails | None = None
        error: ResponseError | None = None
        if event.status in ("max_iterations", "budget_exceeded"):
            kind, status = ResponseIncomplete, "incomplete"
            incomplete = IncompleteDetails(reason="max_output_tokens")
        elif self._refused and event.status == "completed":
            kind, status = ResponseIncomplete, "incomplete"
            incomplete = IncompleteDetails(reason="content_filter")
        elif event.status in ("cancelled", "interrupted"):
            kind, status = ResponseIncomplete, "cancelled"
        elif event.status == "failed":
            kind, status = ResponseFailed, "failed"
            error = self._error or run_error_object(event.error)
        self.final = self._response(
            status,
            output=output,
            usage=usage_object(usage.input_tokens, usage.output_tokens, usage.cached_tokens),
            error=error,
            incomplete=incomplete,
        )
        return out + self._emit(kind(response=self.final, sequence_number=self._next()))
