"""Each streamed `chat.completion.chunk` becomes provider events, whatever server sent it."""

from __future__ import annotations

from typing import Any

import pytest
from openai.types.chat import ChatCompletionChunk

from app.domain.stream import Finish, ResponseMeta, TextDelta, ThinkingDelta, ToolCallDelta, Usage
from app.translate.openai_chat.stream import chunk_to_events
from tests.support.non_streaming import completion_to_events
from tests.unit.translate.openai_chat.wire import call, chunk


@pytest.mark.parametrize(
    ("data", "events"),
    [
        pytest.param(chunk({"content": "Hi"}), [TextDelta(text="Hi")], id="content"),
        pytest.param(chunk({"role": "assistant", "content": ""}), [], id="empty-role-chunk"),
        pytest.param(
            chunk({"reasoning_content": "hmm"}), [ThinkingDelta(text="hmm")], id="reasoning-content"
        ),
        pytest.param(chunk({"reasoning": "hmm"}), [ThinkingDelta(text="hmm")], id="reasoning"),
        pytest.param(chunk({"refusal": "I can't."}), [TextDelta(text="I can't.")], id="refusal"),
        pytest.param(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 1,
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "t", "arguments": ""},
                        }
                    ]
                }
            ),
            [ToolCallDelta(index=1, id="c1", name="t")],
            id="tool-call-start-at-index-1",
        ),
        pytest.param(
            chunk(
                {
                    "tool_calls": [
                        {"index": 0, "function": {"arguments": '{"a"'}},
                        {"index": 1, "function": {"arguments": "{}"}},
                    ]
                }
            ),
            [ToolCallDelta(index=0, args_delta='{"a"'), ToolCallDelta(index=1, args_delta="{}")],
            id="parallel-pieces",
        ),
        pytest.param(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": None,
                            "id": "c1",
                            "function": {"name": "t", "arguments": {"a": 1}},
                        }
                    ]
                }
            ),
            [ToolCallDelta(index=0, id="c1", name="t", args_delta='{"a": 1}')],
            id="compatible-server-null-index-object-arguments",
        ),
        pytest.param(chunk({}, "stop"), [Finish(reason="stop")], id="finish-stop"),
        pytest.param(
            chunk({}, "tool_calls"), [Finish(reason="tool_calls")], id="finish-tool-calls"
        ),
        pytest.param(
            chunk({}, "function_call"), [Finish(reason="tool_calls")], id="finish-function-call"
        ),
        pytest.param(chunk({}, "length"), [Finish(reason="length")], id="finish-length"),
        pytest.param(
            chunk({}, "content_filter"), [Finish(reason="content_filter")], id="finish-filter"
        ),
        pytest.param(
            chunk(None, usage={"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}),
            [Usage(input_tokens=5, output_tokens=3)],
            id="usage-chunk",
        ),
    ],
)
def test_chunk_becomes_provider_events(data: dict[str, Any], events: list[Any]) -> None:
    assert chunk_to_events(data) == events


def test_first_chunk_carries_the_response_id_and_model() -> None:
    events = chunk_to_events(chunk({"content": "Hi"}), first=True)
    assert events[0] == ResponseMeta(response_id="chatcmpl-1", model="gpt-x")


def test_sdk_chunk_objects_are_accepted() -> None:
    sdk_chunk = ChatCompletionChunk.model_validate(
        chunk({"content": "Hi", "reasoning_content": "hmm"}, created=1)
    )
    assert chunk_to_events(sdk_chunk) == [ThinkingDelta(text="hmm"), TextDelta(text="Hi")]


def test_non_streaming_completion_becomes_the_same_events_a_stream_gives() -> None:
    body = {
        "id": "chatcmpl-2",
        "model": "gpt-x",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": "Looking.",
                    "tool_calls": [call("c1", "t", '{"a":1}')],
                },
            }
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": 4},
    }
    assert completion_to_events(body) == [
        ResponseMeta(response_id="chatcmpl-2", model="gpt-x"),
        TextDelta(text="Looking."),
        ToolCallDelta(index=0, id="c1", name="t", args_delta='{"a":1}'),
        Usage(input_tokens=9, output_tokens=4),
        Finish(reason="tool_calls"),
    ]
