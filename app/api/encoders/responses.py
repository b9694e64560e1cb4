"""OpenAI Responses streaming: run events -> `event: <type>` / `data: {type, sequence_number,
...}` frames, the wire the openai SDK's `responses.create(stream=True)` / `responses.stream`
and Gravity UI AIKit's `useOpenAIStreamAdapter` read.

This module is the sequencing: which frames an event writes, in which order, when an item
is added and done; tool items are `responses_tools`, state and framing `responses_frames`.
What the Response object and its items look like is `responses_objects`.

Output items, in the order they happen, each added and then done before the run ends:

- text -> `content_part.added`, `output_text.delta`..., `output_text.done`,
  `content_part.done`. Text from a later model call (after tools ran) is a new message
  item, which is how AIKit splits it too.
- thinking -> `reasoning_text.delta`... `response.reasoning_text.done` is deliberately
  never sent: AIKit 2.2 reads the top-level `text` of any event it does not know as answer
  text, so that event would paste the reasoning into the reply. The full reasoning arrives
  in the item's `output_item.done`, which is what AIKit folds into its thinking part (and
  what the SDK's accumulator keeps).
- tool calls -> `function_call`, `mcp_call` and `mcp_approval_request` items, see
  `responses_tools` (which also says how a decided approval comes back).
- the end: `response.completed` (run `completed` or `requires_action`), `response.incomplete`
  (an answer the model stopped at its output token limit, finish `length` ->
  `incomplete_details.reason: "max_output_tokens"`, and so are `max_iterations` and
  `budget_exceeded`, OpenAI's closest; a refusal -> `"content_filter"`; `cancelled`,
  only a client's cancel, -> status `cancelled`), or `response.failed` with the
  Response's `error` (`failed`, and `interrupted`: the run's process stopped or died
  under it, which a client polling a background response must tell from its own
  cancel), after an `error` event when the run streamed one (AIKit stops at `error`,
  SDK readers get the `response.error`).
  Every terminal response carries the full `output` and `usage`.

Ids come from the run (`resp_<run>`, `msg_<run>_<n>`, `rs_<run>_<n>`, `fc_<call id>`; an
`mcp_call` keeps our id): the non-streaming answer is this encoder's final response for the
same events. Output cannot be taken back: Responses runs never fail over after the first
byte, and a `step_reset` of a run another wire started writes nothing (see the README)."""

from __future__ import annotations

from typing import Literal, assert_never

from app.api.encoders.responses_objects import (
    run_error_object,
    stream_error_object,
    usage_object,
)
from app.api.encoders.responses_tools import ResponsesToolItems, ToolEvent
from app.api.schemas.responses_events import (
    ContentPartAdded,
    OutputTextDelta,
    ReasoningTextDelta,
    ResponseCompleted,
    ResponseCreated,
    ResponseErrorEvent,
    ResponseFailed,
    ResponseIncomplete,
    ResponseInProgress,
    StreamError,
)
from app.api.schemas.responses_items import (
    IncompleteDetails,
    OutputText,
    ReasoningText,
    ResponseError,
    ResponseStatus,
)
from app.domain.events import (
    ErrorEvent,
    MessageEnd,
    RunEnd,
    RunStart,
    SequencedEvent,
    StepReset,
    TextDeltaEvent,
    ThinkingDeltaEvent,
)


class ResponsesEncoder(ResponsesToolItems):
    """Feed it a run's event batches in order (`encode`); see `ResponsesFrames`."""

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
        if isinstance(event, ToolEvent):
            return self._tool_event(event)
        if isinstance(event, StepReset):  # never for runs this wire started (see above)
            return b""
        if isinstance(event, MessageEnd):
            metadata = event.message.metadata or {}
            self._refused = metadata.get("finish_reason") == "content_filter"
            self._cut_short = metadata.get("finish_reason") == "length"
            cut = metadata.get("status") == "incomplete"
            return self._close_all("incomplete" if cut else "completed")
        if isinstance(event, ErrorEvent):
            self._error = stream_error_object(event.code, event.message)
            error = ResponseErrorEvent(
                code=event.code,
                message=event.message,
                error=StreamError(type=self._error.code, code=event.code, message=event.message),
                sequence_number=self._next(),
            )
            return self._emit(error)
        if isinstance(event, RunEnd):
            return self._end(event)
        assert_never(event)

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

    def _close_all(self, status: Literal["completed", "incomplete"]) -> bytes:
        out = self._close_text(status) + self._close_reasoning(status)
        for call_id in list(self._held):  # held calls that never settled: shown ended
            out += self._announce_held(call_id)
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
        elif self._cut_short and event.status == "completed":
            kind, status = ResponseIncomplete, "incomplete"
            incomplete = IncompleteDetails(reason="max_output_tokens")
        elif event.status == "cancelled":
            kind, status = ResponseIncomplete, "cancelled"
        elif event.status in ("failed", "interrupted"):
            kind, status = ResponseFailed, "failed"
            cut = event.status == "interrupted"
            error = self._error or run_error_object(event.error, interrupted=cut)
        self.final = self._response(
            status,
            output=output,
            usage=usage_object(usage.input_tokens, usage.output_tokens, usage.cached_tokens),
            error=error,
            incomplete=incomplete,
        )
        return out + self._emit(kind(response=self.final, sequence_number=self._next()))
