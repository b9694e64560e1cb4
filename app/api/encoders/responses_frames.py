"""The Responses encoder's state and framing: sequence numbers, `event:`/`data:` frames,
output items added and done, and closing the open text or reasoning item.

Split from the sequencing (`responses.py`) and the tool items (`responses_tools.py`) so
each stays readable; the three are one encoder (`ResponsesEncoder`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from app.api.encoders.responses_objects import ItemKind, OutputItem, response_object
from app.api.schemas.responses_events import (
    ContentPartDone,
    OutputItemAdded,
    OutputItemDone,
    OutputTextDone,
)
from app.api.schemas.responses_items import (
    OutputText,
    ReasoningText,
    ResponseError,
    ResponseObject,
    ResponseStatus,
)


@dataclass
class ResponsesFrames:
    """Stateful and deterministic: the same events always make the same frames.

    `request` is what the Response object echoes back (instructions, tools in Responses
    shape, tool_choice, temperature, max_output_tokens, metadata, parallel_tool_calls).
    `held_tools` are the server tools whose calls may wait for a person (a `confirm`
    policy, or a tool that may ask the user mid-call): their calls are announced only once
    known to run (see `responses_tools`). `client_submissions` shows a client call the
    client must answer as an `mcp_submission_request` item instead of a `function_call`.
    After `run_end`, `final` holds the terminal Response object.
    """

    response_id: str
    model: str
    created_at: int
    client_tools: frozenset[str]
    held_tools: frozenset[str] = frozenset()
    client_submissions: bool = False  # client calls as `mcp_submission_request` items
    request: dict[str, Any] = field(default_factory=dict)
    final: ResponseObject | None = None
    _seq: int = 0
    _items: list[OutputItem] = field(default_factory=list)
    _text: OutputItem | None = None
    _reasoning: OutputItem | None = None
    _tools: dict[str, OutputItem] = field(default_factory=dict)
    _held: dict[str, OutputItem] = field(default_factory=dict)  # calls not announced yet
    _error: ResponseError | None = None
    _refused: bool = False  # the model declined (content_filter)
    _cut_short: bool = False  # the answer stopped at its output token limit

    @property
    def last_sequence_number(self) -> int:
        """The `sequence_number` of the last frame written (-1 before any)."""
        return self._seq - 1

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

    def snapshot(self) -> ResponseObject:
        """The Response now: `final` once the run ended, else in progress with the items
        finished so far (what a retrieve of a running response answers)."""
        if self.final is not None:
            return self.final
        open_ids = {id(i) for i in (self._text, self._reasoning, *self._tools.values())}
        done = [i.wire() for i in self._items if not i.dropped and id(i) not in open_ids]
        return self._response("in_progress", output=done)

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
        # No `reasoning_text.done`: see `responses.py` (AIKit would paste it as answer text).
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
