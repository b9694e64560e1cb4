"""Shared steps of the conversation-run tests: script the model, create, send, follow."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from app.providers.scripted import Script, ScriptedProvider, ScriptedTurn
from tests.api.sse_frames import Frame, parse
from tests.fakes.db import ApiClient

CONVERSATIONS = "/api/conversations"


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def play(client: ApiClient, *turns: ScriptedTurn, delay_ms: float = 0) -> ScriptedProvider:
    """Script the next model calls: a fresh sequence provider behind the `scripted` model."""
    provider = ScriptedProvider(Script(mode="sequence", turns=list(turns)), delay_ms=delay_ms)
    client.services.providers["scripted"] = provider
    return provider


async def create(client: ApiClient, **body: Any) -> str:
    response = await client.post(CONVERSATIONS, json=body)
    assert response.status_code == 201, response.text
    conversation_id: str = response.json()["id"]
    return conversation_id


async def send(client: ApiClient, cid: str, content: Any = "Hi", **body: Any) -> dict[str, Any]:
    response = await client.post(
        f"{CONVERSATIONS}/{cid}/messages", json={"content": content, **body}
    )
    assert response.status_code == 202, response.text
    started: dict[str, Any] = response.json()
    return started


async def events(client: ApiClient, url: str, **headers: str) -> list[Frame]:
    response = await client.get(url, headers=headers)
    assert response.status_code == 200, response.text
    return parse(response.text)


async def conversation(client: ApiClient, cid: str) -> dict[str, Any]:
    response = await client.get(f"{CONVERSATIONS}/{cid}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def until(client: ApiClient, cid: str, run_id: str, event_type: str) -> None:
    """Wait (live, in process) until the run has emitted an event of `event_type`."""
    owner = client.services.settings.local_user_id

    async def watch() -> None:
        async for batch in client.services.runs.follow(owner, run_id, conversation_id=cid):
            if any(item.event.type == event_type for item in batch):
                return
        raise AssertionError(f"the run ended without a {event_type} event")

    await asyncio.wait_for(watch(), timeout=5)


async def finished(client: ApiClient, started: dict[str, Any]) -> list[Frame]:
    frames = await events(client, started["events_url"])
    assert frames[-1].event == "run_end"
    return frames


def tools_of(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in message["content"] if p["type"] == "tool"]


def text_of(message: dict[str, Any]) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(p["data"]["text"] for p in content if p["type"] == "text")


CLAUDE = json.dumps(
    [{"id": "claude-test", "provider": "anthropic", "upstream_model": "claude-haiku-4-5"}]
)
