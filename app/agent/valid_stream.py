"""A model's stream enters the service as valid text.

Providers hand over what upstream sent: a JSON escape of a lone surrogate (`"\\ud800"`),
NUL, or an emoji whose UTF-16 halves arrive in two deltas. `ValidStream` passes every
event through, with the text of text and thinking deltas made valid (a pair split across
deltas is rejoined, never replaced) and tool-call names and argument text cleaned, so the
event log, every wire encoder and the database see the same valid text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from app.domain.stream import ProviderEvent, StreamReset, TextDelta, ThinkingDelta, ToolCallDelta
from app.domain.text import SurrogateJoiner, valid_text


class ValidStream:
    """One model call's events made valid as they pass, one event at a time.

    A plain object the agent's loop calls, not an async generator around the provider's
    stream: a generator layer costs its own suspension and resumption per event, on the
    path every token takes. `feed` returns what to relay for an event (usually the event
    itself; a delta held back for its pair's other half relays nothing until it comes);
    `flush` what is still held when the stream ends.
    """

    __slots__ = ("_text", "_thinking")

    def __init__(self) -> None:
        self._text = SurrogateJoiner()
        self._thinking = SurrogateJoiner()

    def feed(self, event: ProviderEvent) -> Sequence[ProviderEvent]:
        if isinstance(event, TextDelta):
            fixed = self._text.feed(event.text)
            return (event if fixed == event.text else TextDelta(text=fixed),)
        if isinstance(event, ThinkingDelta):
            fixed = self._thinking.feed(event.text)
            return (event if fixed == event.text else replace(event, text=fixed),)
        if isinstance(event, StreamReset):  # what was held back belongs to a void attempt
            self._text, self._thinking = SurrogateJoiner(), SurrogateJoiner()
            return (event,)
        # Anything else ends a run of text: a half pair still held back has no partner.
        out = self.flush()
        out.append(_valid_call(event) if isinstance(event, ToolCallDelta) else event)
        return out

    def flush(self) -> list[ProviderEvent]:
        out: list[ProviderEvent] = []
        if rest := self._text.flush():
            out.append(TextDelta(text=rest))
        if rest := self._thinking.flush():
            out.append(ThinkingDelta(text=rest))
        return out


def _valid_call(event: ToolCallDelta) -> ToolCallDelta:
    call_id = valid_text(event.id) if event.id else event.id
    name = valid_text(event.name) if event.name else event.name
    args = valid_text(event.args_delta)
    if (call_id, name, args) == (event.id, event.name, event.args_delta):
        return event
    return replace(event, id=call_id, name=name, args_delta=args)
