"""The parts builder folds provider deltas into AIKit parts."""

from __future__ import annotations

import tracemalloc

from app.domain.parts import TextPart, ThinkingPart, ToolPart
from app.domain.stream import (
    Finish,
    ProviderEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    Usage,
)
from app.translate.accumulator import PartsBuilder


def test_interleaved_parallel_tool_calls_land_in_their_own_parts() -> None:
    builder = PartsBuilder()
    events: list[ProviderEvent] = [
        TextDelta(text="Let me "),
        TextDelta(text="check."),
        ToolCallDelta(index=1, id="call_a", name="weather"),
        ToolCallDelta(index=2, id="call_b", name="time"),
        ToolCallDelta(index=1, args_delta='{"city": '),
        ToolCallDelta(index=2, args_delta='{"tz": "UTC"}'),
        ToolCallDelta(index=1, args_delta='"Paris"}'),
        Usage(input_tokens=10, output_tokens=5),
        Finish(reason="tool_calls"),
    ]
    for event in events:
        builder.feed(event)
    response = builder.build()
    text, first, second = response.parts
    assert isinstance(text, TextPart) and text.data.text == "Let me check."
    assert isinstance(first, ToolPart) and first.data.args == {"city": "Paris"}
    assert isinstance(second, ToolPart) and second.data.args == {"tz": "UTC"}
    assert first.id == "call_a" and first.data.status == "loading"
    assert response.finish_reason == "tool_calls"
    assert (response.input_tokens, response.output_tokens) == (10, 5)


def test_invalid_json_arguments_give_an_error_part_with_a_readable_body() -> None:
    builder = PartsBuilder()
    builder.feed(
        ToolCallDelta(index=0, id="call_x", name="search", args_delta='{"q": "unterminated')
    )
    (part,) = builder.build().parts
    assert isinstance(part, ToolPart)
    assert part.data.status == "error"
    assert part.data.args is None
    assert part.data.bodyContent is not None and "not valid JSON" in part.data.bodyContent


def test_nan_in_a_models_arguments_is_not_json_and_the_tool_never_runs() -> None:
    # Python's parser takes NaN; Postgres JSONB refused such args at the run's write.
    builder = PartsBuilder()
    builder.feed(ToolCallDelta(index=0, id="call_n", name="score", args_delta='{"x": NaN}'))
    (part,) = builder.build().parts
    assert isinstance(part, ToolPart)
    assert part.data.status == "error"
    assert part.data.args is None
    assert part.data.bodyContent is not None and "not valid JSON" in part.data.bodyContent


def test_empty_arguments_mean_an_empty_object() -> None:
    builder = PartsBuilder()
    builder.feed(ToolCallDelta(index=0, id="call_y", name="now"))
    (part,) = builder.build().parts
    assert isinstance(part, ToolPart) and part.data.args == {} and part.data.status == "loading"


def test_a_new_id_at_a_known_index_starts_a_new_call() -> None:
    """Some OpenAI-compatible servers send each whole call at index 0 with its own id."""
    builder = PartsBuilder()
    builder.feed(ToolCallDelta(index=0, id="call_1", name="a", args_delta='{"x": 1}'))
    builder.feed(ToolCallDelta(index=0, id="call_2", name="b", args_delta='{"y": 2}'))
    first, second = builder.build().parts
    assert isinstance(first, ToolPart) and first.id == "call_1" and first.data.args == {"x": 1}
    assert isinstance(second, ToolPart) and second.id == "call_2" and second.data.args == {"y": 2}


def test_a_repeated_id_at_the_same_index_continues_the_call() -> None:
    builder = PartsBuilder()
    builder.feed(ToolCallDelta(index=0, id="call_1", name="a", args_delta='{"x": '))
    builder.feed(ToolCallDelta(index=0, id="call_1", args_delta="1}"))
    (part,) = builder.build().parts
    assert isinstance(part, ToolPart) and part.data.args == {"x": 1}


def _fed_long_answer(builder: PartsBuilder, tokens: int) -> str:
    """Thinking, text, a tool call's arguments: `tokens` deltas each, fresh strings as a
    stream parses them. The text the parts must come to."""
    text = []
    for n in range(tokens):
        piece = f" t{n % 10}"
        builder.feed(ThinkingDelta(text=piece.upper()))
        text.append(piece)
    for piece in text:
        builder.feed(TextDelta(text=piece))
    builder.feed(ToolCallDelta(index=0, id="call_l", name="echo", args_delta='{"s": "'))
    for piece in text:
        builder.feed(ToolCallDelta(index=0, args_delta=piece.strip()))
    builder.feed(ToolCallDelta(index=0, args_delta='"}'))
    return "".join(text)


def test_a_long_answer_is_built_as_streamed() -> None:
    for tokens in (0, 1, 15, 16, 17, 1000):
        builder = PartsBuilder()
        expected = _fed_long_answer(builder, tokens)
        parts = builder.build().parts
        thinking, text, call = parts if tokens else (None, None, parts[0])
        if tokens:
            assert isinstance(thinking, ThinkingPart) and thinking.data.content == expected.upper()
            assert isinstance(text, TextPart) and text.data.text == expected
        assert isinstance(call, ToolPart)
        assert call.data.args == {"s": expected.replace(" ", "")}


def test_an_answer_being_streamed_holds_its_text_not_each_delta() -> None:
    """While a stream is open its answer is kept for the message; a delta's string costs
    ~60 bytes around a few characters, so kept one by one a long answer held ~15 times
    its text for as long as the stream was open."""
    builder = PartsBuilder()
    tracemalloc.start()
    try:
        began = tracemalloc.get_traced_memory()[0]
        expected = _fed_long_answer(builder, 3000)  # 9,000 characters of text a segment
        held = tracemalloc.get_traced_memory()[0] - began
    finally:
        tracemalloc.stop()
    assert len(expected) == 9000
    assert held < 3 * 2 * len(expected)  # three segments: ~1.2x their text each, not ~20x
