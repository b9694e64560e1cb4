"""The offline demo script: which turn answers which message."""

from __future__ import annotations

from app.domain.messages import Message
from app.domain.stream import ModelRequest, TextDelta, ToolCallDelta
from app.providers.scripted import ScriptedProvider, load_script


async def _answer(*messages: Message) -> tuple[str, list[str]]:
    provider = ScriptedProvider(load_script(None), delay_ms=0)
    text, tools = "", []
    async for event in provider.stream(ModelRequest(model="scripted", messages=list(messages))):
        if isinstance(event, TextDelta):
            text += event.text
        elif isinstance(event, ToolCallDelta) and event.name:
            tools.append(event.name)
    return text, tools


def _user(text: str) -> Message:
    return Message(role="user", content=text)


async def test_a_greeting_and_anything_else_still_get_text() -> None:
    greeting, none = await _answer(_user("hello there"))
    fallback, also_none = await _answer(_user("what is the weather?"))

    assert greeting.startswith("Hello!") and none == []
    assert "offline scripted model" in fallback and also_none == []


async def test_the_ada_message_adds_both_nodes_then_connects_them() -> None:
    ada = _user(
        "add a Person node named Ada Lovelace and connect her to the Analytical Engine "
        "with a designed relation"
    )
    _, first = await _answer(ada)
    assert first == ["add_node", "add_node"]

    added = Message.model_validate(
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool",
                    "id": "c1",
                    "data": {"toolName": "add_node", "toolCallId": "c1", "status": "success"},
                }
            ],
        }
    )
    _, second = await _answer(ada, added)
    assert second == ["connect"]


async def test_delete_and_propose_ask_for_the_human_paths() -> None:
    assert (await _answer(_user("delete Ada Lovelace")))[1] == ["delete_node"]
    assert (await _answer(_user("propose a birth year for Ada")))[1] == ["set_property"]
    assert (await _answer(_user("show me the graph")))[1] == ["get_graph"]
