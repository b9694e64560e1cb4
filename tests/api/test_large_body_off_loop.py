"""A large JSON body is parsed and checked off the event loop: while it is read, the
process answers its other requests (`/healthz`, other streams), where the parse of a body
near 1 MB held all of them."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest

from app.domain import jsontext
from tests.fakes.db import ApiClient

BIG: Any = {
    "model": "scripted",
    "messages": [{"role": "user", "content": [{"type": "text", "text": "a"}] * 4}] * 2048,
}


async def test_health_is_answered_while_a_large_body_is_parsed(
    api: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsing = threading.Event()
    health_answered = threading.Event()
    seen_while_parsing: list[bool] = []
    loads = jsontext.loads

    def slow_loads(text: str) -> Any:
        parsing.set()
        # On the loop this waits out its bound, since /healthz cannot be answered meanwhile.
        seen_while_parsing.append(health_answered.wait(10))
        return loads(text)

    monkeypatch.setattr(jsontext, "loads", slow_loads)

    async def health() -> int:
        while not parsing.is_set():
            await asyncio.sleep(0.001)
        status = (await api.get("/healthz")).status_code
        health_answered.set()
        return status

    body = json.dumps(BIG).encode()
    chat, status = await asyncio.gather(
        api.post(
            "/v1/chat/completions", content=body, headers={"content-type": "application/json"}
        ),
        health(),
    )

    assert status == 200
    assert chat.status_code == 200, chat.text
    assert seen_while_parsing == [True]
