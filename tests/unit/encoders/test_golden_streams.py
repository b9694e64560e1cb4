"""Every wire encoder writes, byte for byte, the stream recorded for each scenario run.

The recorded streams in `tests/fixtures/encoders/<wire>/` are what the encoders wrote when
they were pinned; a refactor that changes one byte of any of them fails here. To record
them again after an intended change of a wire, run these tests with
`UPDATE_GOLDEN_STREAMS=1` and review the diff of the fixtures like code.

Events are fed in batches of three, as the event log hands them over, so an encoder that
kept state wrongly across batches would show here too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from openai.types.chat import ChatCompletionChunk
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

from app.api.encoders import native
from app.api.encoders.chat_chunks import ChatChunkEncoder
from app.api.encoders.responses import ResponsesEncoder
from app.domain.events import RunEvent, SequencedEvent
from tests.unit.encoders.scenarios import CLIENT_TOOLS, HELD_TOOLS, SCENARIOS

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "encoders"
BATCH = 3
CREATED = 1700000000
RESPONSES_REQUEST = {
    "instructions": "Be brief.",
    "max_output_tokens": 256,
    "metadata": {"ticket": "42"},
    "parallel_tool_calls": False,
    "temperature": 0.2,
    "tool_choice": "auto",
    "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}],
}

Encode = Callable[[list[SequencedEvent]], bytes]


def _chat(include_usage: bool) -> Encode:
    return ChatChunkEncoder(
        completion_id="chatcmpl-g1",
        model="scripted",
        created=CREATED,
        client_tools=CLIENT_TOOLS,
        include_usage=include_usage,
    ).encode


def _responses() -> ResponsesEncoder:
    return ResponsesEncoder(
        response_id="resp_g1",
        model="scripted",
        created_at=CREATED,
        client_tools=CLIENT_TOOLS,
        held_tools=HELD_TOOLS,
        request=RESPONSES_REQUEST,
    )


WIRES: dict[str, Callable[[], Encode]] = {
    "native": lambda: lambda batch: b"".join(native.frames(batch)),
    "chat-completions": lambda: _chat(include_usage=False),
    "chat-completions-with-usage": lambda: _chat(include_usage=True),
    "responses": lambda: _responses().encode,
}


def encode_in_batches(encode: Encode, events: list[RunEvent]) -> bytes:
    log = [SequencedEvent(seq=n, event=e) for n, e in enumerate(events, start=1)]
    return b"".join(encode(log[i : i + BATCH]) for i in range(0, len(log), BATCH))


def check_golden(path: Path, written: bytes) -> None:
    if os.environ.get("UPDATE_GOLDEN_STREAMS"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(written)
        pytest.skip(f"recorded {path.relative_to(GOLDEN)}")
    assert path.exists(), f"no recorded stream at {path}; record it with UPDATE_GOLDEN_STREAMS=1"
    assert written.decode() == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.parametrize("wire", sorted(WIRES))
def test_each_wire_writes_the_recorded_stream(wire: str, scenario: str) -> None:
    written = encode_in_batches(WIRES[wire](), SCENARIOS[scenario])
    check_golden(GOLDEN / wire / f"{scenario}.sse", written)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_the_non_streaming_response_is_the_streams_terminal_response(scenario: str) -> None:
    encoder = _responses()
    written = encode_in_batches(encoder.encode, SCENARIOS[scenario])
    last = written.rstrip(b"\n").rsplit(b"\n\n", 1)[-1]
    terminal = json.loads(last.split(b"\n", 1)[1].removeprefix(b"data: "))
    assert encoder.final is not None
    assert encoder.final.model_dump(mode="json") == terminal["response"]


RESPONSE_EVENTS: TypeAdapter[ResponseStreamEvent] = TypeAdapter(ResponseStreamEvent)
# AIKit's `waitingSubmission` item is not one of OpenAI's: AIKit's own adapter checks it
# (tests/e2e/aikit); every other item and event must still be the SDK's.
AIKIT_ONLY = "mcp_submission_request"


def _openai_part(body: dict[str, Any]) -> dict[str, Any] | None:
    """The frame without AIKit's own item (None: the frame is only about that item)."""
    item = body.get("item")
    if isinstance(item, dict) and item.get("type") == AIKIT_ONLY:
        return None
    response = body.get("response")
    if isinstance(response, dict):
        output = [i for i in response["output"] if i.get("type") != AIKIT_ONLY]
        return {**body, "response": {**response, "output": output}}
    return body


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_recorded_responses_frame_is_an_event_the_openai_sdk_accepts(scenario: str) -> None:
    recorded = (GOLDEN / "responses" / f"{scenario}.sse").read_text(encoding="utf-8")
    for block in recorded.removesuffix("\n\n").split("\n\n"):
        name, data = block.split("\n")
        body = json.loads(data.removeprefix("data: "))
        assert name == f"event: {body['type']}"
        checked = _openai_part(body)
        if checked is not None:
            RESPONSE_EVENTS.validate_python(checked)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_recorded_chat_chunk_is_a_chunk_the_openai_sdk_accepts(scenario: str) -> None:
    recorded = (GOLDEN / "chat-completions-with-usage" / f"{scenario}.sse").read_text("utf-8")
    *chunks, done = recorded.removesuffix("\n\n").split("\n\n")
    assert done == "data: [DONE]"
    for chunk in chunks:
        body = json.loads(chunk.removeprefix("data: "))
        if "error" in body:
            assert set(body["error"]) == {"message", "type", "code"}
        else:
            ChatCompletionChunk.model_validate(body, strict=True)
