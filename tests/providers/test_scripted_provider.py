"""The scripted provider as a long-running server uses it."""

from __future__ import annotations

from app.domain.messages import Message
from app.domain.stream import ModelRequest, ResponseMeta
from app.providers.scripted import Script, ScriptedProvider, ScriptedTurn


async def call(provider: ScriptedProvider, text: str) -> list[object]:
    request = ModelRequest(model="scripted", messages=[Message(role="user", content=text)])
    return [event async for event in provider.stream(request)]


async def test_only_the_most_recent_hundred_requests_are_kept() -> None:
    provider = ScriptedProvider(Script(turns=[ScriptedTurn(text="ok")]), delay_ms=0)
    for i in range(150):
        await call(provider, f"message {i}")
    assert len(provider.requests) == 100
    assert provider.requests[0].messages[-1].text() == "message 50"
    assert provider.requests[-1].messages[-1].text() == "message 149"


async def test_response_ids_keep_counting_past_the_kept_requests() -> None:
    provider = ScriptedProvider(Script(turns=[ScriptedTurn(text="ok")]), delay_ms=0)
    for i in range(101):
        events = await call(provider, f"message {i}")
    meta = events[0]
    assert isinstance(meta, ResponseMeta)
    assert meta.response_id == "scripted-101"
