"""The parts builder folds provider deltas into AIKit parts."""

from __future__ import annotations

from app.domain.parts import TextPart, ToolPart
from app.domain.stream import Finish, ProviderEvent, TextDelta, ToolCallDelta, Usage
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
