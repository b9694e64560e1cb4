"""A model's stream enters the service as valid text.

Providers hand over what upstream sent: a JSON escape of a lone surrogate (`"\\ud800"`),
NUL, or an emoji whose UTF-16 halves arrive in two deltas. `valid_events` passes every
event through, with the text of text and thinking deltas made valid (a pair split across
deltas is rejoined, never replaced) and tool-call names and argument text cleaned, so the
event log, every wire encoder and the database see the same valid text.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace

from app.domain.stream import ProviderEvent, StreamReset, TextDelta, ThinkingDelta, ToolCallDelta
from app.domain.text import SurrogateJoiner, valid_text


async def valid_events(events: AsyncIterator[ProviderEvent]) -> AsyncIterator[ProviderEvent]:
    text = SurrogateJoiner()
    thinking = SurrogateJoiner()
    async for event in events:
        if isinstance(event, TextDelta):
            fixed = text.feed(event.text)
            yield event if fixed == event.text else TextDelta(text=fixed)
            continue
        if isinstance(event, ThinkingDelta):
            fixed = thinking.feed(event.text)
            yield event if fixed == event.text else replace(event, text=fixed)
            continue
        if isinstance(event, StreamReset):  # what was held back belongs to a void attempt
            text, thinking = SurrogateJoiner(), SurrogateJoiner()
            yield event
            continue
        # Anything else ends a run of text: a half pair still held back has no partner.
        if rest := text.flush():
            yield TextDelta(text=rest)
        if rest := thinking.flush():
            yield ThinkingDelta(text=rest)
        if isinstance(event, ToolCallDelta):
            yield _valid_call(event)
            continue
        yield event
    if rest := text.flush():
        yield TextDelta(text=rest)
    if rest := thinking.flush():
        yield ThinkingDelta(text=rest)


def _valid_call(event: ToolCallDelta) -> ToolCallDelta:
    call_id = valid_text(event.id) if event.id else event.id
    name = valid_text(event.name) if event.name else event.name
    args = valid_text(event.args_delta)
    if (call_id, name, args) == (event.id, event.name, event.args_delta):
        return event
    return replace(event, id=call_id, name=name, args_delta=args)
