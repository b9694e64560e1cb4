"""The official openai SDK (sync client, its own HTTP stack) runs a conversation through
`/v1/conversations` and `responses.create(conversation=...)` against a live process over
loopback: the offline demo's tool turn shows up in the items as finished `mcp_call`s."""

from __future__ import annotations

import openai
import pytest

from tests.e2e.conftest import Launch

pytestmark = pytest.mark.e2e

ADA = (
    "add a Person node named Ada Lovelace and connect her to the Analytical Engine "
    "with a designed relation"
)


def test_the_openai_sdk_runs_a_conversation_over_loopback(launch: Launch) -> None:
    service = launch(EXAMPLE_TOOLS_ENABLED="true", DEFAULT_MODEL="scripted")
    client = openai.OpenAI(api_key="unused", base_url=f"{service.base_url}/v1", max_retries=0)

    conversation = client.conversations.create(metadata={"app": "e2e"})
    hello = client.responses.create(model="scripted", input="hello", conversation=conversation.id)
    events = list(
        client.responses.create(
            model="scripted", input=ADA, conversation=conversation.id, stream=True
        )
    )
    items = list(client.conversations.items.list(conversation.id, order="asc", limit=3))

    assert hello.output_text.startswith("Hello! I am chat-bff's offline scripted model")
    assert events[-1].type == "response.completed"
    kinds = [i.type for i in items]
    assert kinds[:3] == ["message", "message", "message"]
    calls = [i for i in items if i.type == "mcp_call"]
    assert [c.name for c in calls] == ["add_node", "add_node", "connect"]
    assert all(c.status == "completed" and c.output for c in calls)
    assert client.conversations.retrieve(conversation.id).metadata == {"app": "e2e"}
    assert client.conversations.delete(conversation.id).deleted
    with pytest.raises(openai.NotFoundError):
        client.conversations.retrieve(conversation.id)
