"""The parts builder folds provider deltas into AIKit parts."""

from __future__ import annotations

from app.domain.parts import TextPart, ToolPart
from app.domain.stream import Finish, TextDelta, ToolCallDelta, Usage
from app.translate.accumulator import PartsBuilder


def test_interleaved_parallel_tool_calls_land_in_their_own_parts() -> None:
    builder = PartsBuilder()
    for event in [
        TextDelta(text="Let me "),
        TextDelta(text="check."),
        ToolCallDelta(index=1, id="call_a", name="weather"),
        ToolCallDelta(index=2, id="call_b", name="time"),
        ToolCallDelta(index=1, args_delta='{"city": '),
        ToolCallDelta(index=2, args_delta='{"tz": "UTC"}'),
        ToolCallDelta(index=1, args_delta='"Paris"}'),
        Usage(input_tokens=10, output_tokens=5),
        Finish(reason="tool_calls"),
    ]:
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


def test_empty_arguments_mean_an_empty_object() -> None:
    builder = PartsBuilder()
    builder.feed(ToolCallDelta(index=0, id="call_y", name="now"))
    (part,) = builder.build().parts
    assert isinstance(part, ToolPart) and part.data.args == {} and part.data.status == "loading"
