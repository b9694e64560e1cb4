"""The official openai SDK (sync client, its own HTTP stack) against a live process on
loopback: a conversation's Responses stream dropped mid-way resumes with
`responses.retrieve(id, stream=True, starting_after=N)`, also after the process restarted;
and a pending approval is answered with an `mcp_approval_response` item, the continuing
response starting with the finished `mcp_call`."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import openai
import pytest

from app.providers.scripted import Script, ScriptedToolCall, ScriptedTurn
from tests.e2e.conftest import Launch, Service

pytestmark = pytest.mark.e2e

LONG = " ".join(f"word{n}" for n in range(120))
SCRIPT = Script(
    mode="rules",
    turns=[
        ScriptedTurn(match="^long", text=LONG),
        ScriptedTurn(
            match="^delete",
            tool_calls=[
                ScriptedToolCall(id="call_add", name="add_node", args={"label": "P", "name": "x"}),
                ScriptedToolCall(id="call_del", name="delete_node", args={"id": "x"}),
            ],
        ),
        ScriptedTurn(after_tool="delete_node", text="Deleted x."),
    ],
)


def _service(launch: Launch, tmp_path: Path, db: Path | None = None) -> Service:
    script = tmp_path / "script.json"
    script.write_text(SCRIPT.model_dump_json())
    return launch(
        db,
        EXAMPLE_TOOLS_ENABLED="true",
        DEFAULT_MODEL="scripted",
        SCRIPTED_SCRIPT=str(script),
        SCRIPTED_DELAY_MS="5",
    )


def _client(service: Service) -> openai.OpenAI:
    return openai.OpenAI(api_key="unused", base_url=f"{service.base_url}/v1", max_retries=0)


def test_a_dropped_stream_resumes_after_the_last_event_seen_also_after_a_restart(
    launch: Launch, tmp_path: Path
) -> None:
    service = _service(launch, tmp_path)
    client = _client(service)
    conversation = client.conversations.create()

    seen: list[Any] = []
    with client.responses.create(
        model="scripted", input="long answer please", conversation=conversation.id, stream=True
    ) as stream:
        for event in stream:
            seen.append(event)
            if len(seen) == 12:
                break  # the connection drops here
    response_id = seen[0].response.id
    rest = list(
        client.responses.retrieve(response_id, stream=True, starting_after=seen[-1].sequence_number)
    )

    numbers = [e.sequence_number for e in seen + rest]
    assert numbers == list(range(len(numbers)))
    assert rest[-1].type == "response.completed"
    text = "".join(e.delta for e in seen + rest if e.type == "response.output_text.delta")
    assert text == LONG

    service.stop()
    again = _service(launch, tmp_path, db=service.db)
    client = _client(again)
    replay = list(client.responses.retrieve(response_id, stream=True))
    assert [e.sequence_number for e in replay] == numbers
    assert [e.type for e in replay] == [e.type for e in seen + rest]
    assert client.responses.retrieve(response_id).output_text == LONG


def test_an_approval_is_answered_in_band_and_the_call_finishes(
    launch: Launch, tmp_path: Path
) -> None:
    client = _client(_service(launch, tmp_path))

    paused = client.responses.create(model="scripted", input="delete x")
    ask = next(i for i in paused.output if i.type == "mcp_approval_request")
    history: Any = [
        {"role": "user", "content": "delete x"},
        *[i.model_dump(exclude_none=True) for i in paused.output],
        {"type": "mcp_approval_response", "approval_request_id": ask.id, "approve": True},
    ]
    events = list(client.responses.create(model="scripted", input=history, stream=True))

    done = [e.item for e in events if e.type == "response.output_item.done"]
    call = done[0]
    assert call.type == "mcp_call"
    assert (call.id, call.status) == ("call_del", "completed")
    assert events[-1].type == "response.completed"
    assert events[-1].response.output_text == "Deleted x."
    with pytest.raises(openai.ConflictError) as caught:
        client.responses.create(model="scripted", input=history)
    assert cast(dict[str, Any], caught.value.body)["code"] == "already_decided"
