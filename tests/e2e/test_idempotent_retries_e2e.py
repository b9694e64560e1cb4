"""The official openai SDK (sync client, real HTTP on loopback) against a live process:
its own retry of a conversation's response whose answer was lost on the way back (the
service handled it; the connection dropped before the client read it) sends the
`Idempotency-Key` it was given again, and the retry answers the same response: one user
message, one run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest

from app.providers.scripted import Script, ScriptedTurn
from tests.e2e.conftest import Launch, Service

pytestmark = pytest.mark.e2e

SCRIPT = Script(mode="rules", turns=[ScriptedTurn(match="^hello", text="Hello once.")])


class NextAnswerLost(httpx2.BaseTransport):
    """Real HTTP; once armed, the next answer is read whole and then lost (the
    connection resets before the client has it)."""

    def __init__(self) -> None:
        self._inner = httpx2.HTTPTransport()
        self.armed = False
        self.keys: list[str | None] = []  # the Idempotency-Key of each request since armed

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        response = self._inner.handle_request(request)
        if not self.armed and not self.keys:
            return response
        self.keys.append(request.headers.get("Idempotency-Key"))
        if self.armed:
            self.armed = False
            response.read()
            response.close()
            raise httpx2.ReadError("connection reset by peer", request=request)
        return response

    def close(self) -> None:
        self._inner.close()


def _service(launch: Launch, tmp_path: Path) -> Service:
    script = tmp_path / "script.json"
    script.write_text(SCRIPT.model_dump_json())
    return launch(None, DEFAULT_MODEL="scripted", SCRIPTED_SCRIPT=str(script))


def _client(service: Service, transport: NextAnswerLost) -> openai.OpenAI:
    http = httpx2.Client(transport=transport)
    return openai.OpenAI(api_key="unused", base_url=f"{service.base_url}/v1", http_client=http)


def _turns(client: openai.OpenAI, conversation_id: str) -> list[tuple[str, Any]]:
    items = client.conversations.items.list(conversation_id, order="asc", limit=100)
    return [(i.type, getattr(i, "role", None)) for i in items.data]


@pytest.fixture
def transport() -> NextAnswerLost:
    return NextAnswerLost()


@pytest.fixture
def client(launch: Launch, tmp_path: Path, transport: NextAnswerLost) -> Iterator[openai.OpenAI]:
    with _client(_service(launch, tmp_path), transport) as client:
        yield client


@pytest.mark.parametrize("stream", [False, True])
def test_the_sdks_own_retry_of_a_lost_response_is_one_turn(
    client: openai.OpenAI, transport: NextAnswerLost, stream: bool
) -> None:
    conversation = client.conversations.create()
    transport.armed = True

    key = {"Idempotency-Key": "3c9a2f0e-retry"}
    if stream:
        with client.responses.create(
            model="scripted",
            input="hello",
            conversation=conversation.id,
            stream=True,
            extra_headers=key,
        ) as stream_events:
            events = list(stream_events)
        assert [e.sequence_number for e in events] == list(range(len(events)))
        assert events[-1].type == "response.completed"
        response = events[-1].response
    else:
        response = client.responses.create(
            model="scripted", input="hello", conversation=conversation.id, extra_headers=key
        )

    assert transport.keys == [key["Idempotency-Key"]] * 2  # the SDK retried, same key
    transport.keys.clear()
    assert response.output_text == "Hello once."
    assert client.responses.retrieve(response.id).output_text == "Hello once."
    assert _turns(client, conversation.id) == [("message", "user"), ("message", "assistant")]
