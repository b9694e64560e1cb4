"""A Python SDK generated from openapi/openapi.json works against a real chat-bff process.

The document promises that front ends and SDKs can be generated from it; this proves it
with openapi-python-client: generation with `--fail-on-warning` (any model it cannot
express fails the test), then the generated package, typed models and all, creates and
lists conversations and runs a non-streaming `/api/chat` turn whose answer parses into
typed parts.
"""

from __future__ import annotations

import importlib
import time
from types import ModuleType
from typing import Any

import jwt
import pytest

from tests.e2e.conftest import PACKAGE, Launch, Service

pytestmark = pytest.mark.e2e

SECRET = "generated-sdk-secret-0123456789-abcdefghij"


@pytest.fixture(scope="module")
def service(module_launch: Launch) -> Service:
    return module_launch(JWT_SECRET=SECRET, SCRIPTED_DELAY_MS="0")


def _module(name: str) -> Any:
    return importlib.import_module(f"{PACKAGE}.{name}")


def _token(user: str) -> str:
    now = int(time.time())
    return jwt.encode(
        {"sub": user, "roles": ["user"], "iat": now, "exp": now + 600}, SECRET, algorithm="HS256"
    )


def test_a_generated_sdk_drives_conversations_and_chat(sdk: ModuleType, service: Service) -> None:
    models = _module("models")
    create = _module("api.conversations.create_conversation")
    listing = _module("api.conversations.list_conversations")
    chat = _module("api.chat.run_chat_turn")

    with sdk.AuthenticatedClient(base_url=service.base_url, token=_token("alice")) as client:
        created = create.sync(client=client, body=models.ConversationCreate(title="From the SDK"))
        assert isinstance(created, models.ConversationOut)
        assert created.title == "From the SDK"

        page = listing.sync(client=client)
        assert isinstance(page, models.ConversationList)
        assert [c.id for c in page.data] == [created.id]

        request = models.ChatRequest.from_dict(
            {"messages": [{"role": "user", "content": "Hello there"}]}
        )
        answer = chat.sync(client=client, body=request)
        assert isinstance(answer, models.ChatResponse), answer
        assert answer.status == models.ChatResponseStatus.COMPLETED
        assert isinstance(answer.message.content, list)
        texts = [p for p in answer.message.content if isinstance(p, models.TextPart)]
        assert texts and texts[0].data.text
        assert answer.choices[0].message.content == "".join(t.data.text for t in texts)


def test_errors_parse_into_the_documented_error_model(sdk: ModuleType, service: Service) -> None:
    models = _module("models")
    get = _module("api.conversations.get_conversation")

    with sdk.AuthenticatedClient(base_url=service.base_url, token=_token("bob")) as client:
        missing = get.sync(client=client, conversation_id="conv_missing")
        assert isinstance(missing, models.ErrorResponse)
        assert missing.error.code == "not_found"

    with sdk.AuthenticatedClient(base_url=service.base_url, token="not-a-jwt") as client:
        refused = get.sync(client=client, conversation_id="conv_missing")
        assert isinstance(refused, models.ErrorResponse)
        assert refused.error.code == "unauthorized"
