"""An AG-UI input carrying client tool results, sent again (same `threadId`, `runId` and
input: `HttpAgent` retrying after a dropped connection) while the run those results
started still goes on, re-attaches to that run, as a retried turn does: it was a 404
`tool_call_not_found` (the calls no longer wait), though the client's results were taken.
Read over real HTTP on loopback: the first stream stays open while the run goes on."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from httpx_sse import aconnect_sse

from app.providers.scripted import Script, ScriptedProvider, ScriptedToolCall, ScriptedTurn
from app.settings import Settings
from tests.api.test_agui import PICK, picked, run, user
from tests.fakes.db import ApiClient, MakeApi
from tests.support.loopback import served

SCRIPT = Script(
    mode="rules",
    turns=[
        ScriptedTurn(after_tool="pick_color", text="Painting it.", stall_seconds=120),
        ScriptedTurn(
            match="color",
            tool_calls=[ScriptedToolCall(name="pick_color", args={"hint": "warm"})],
        ),
    ],
)


@pytest.fixture
async def client(make_api: MakeApi, app_settings: Settings) -> AsyncIterator[ApiClient]:
    async with make_api(app_settings, providers={"scripted": ScriptedProvider(SCRIPT)}) as api:
        yield api


async def _started(http: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    """The input's `RUN_STARTED` event (the run then goes on, stalled)."""
    async with aconnect_sse(http, "POST", "/api/agui", json=body) as source:
        source.response.raise_for_status()
        async for event in source.aiter_sse():
            data: dict[str, Any] = json.loads(event.data)
            if data["type"] == "RUN_STARTED":
                return data
    raise AssertionError("no RUN_STARTED")


async def test_tool_results_sent_again_while_their_run_goes_on_re_attach_to_it(
    client: ApiClient,
) -> None:
    asked = await run(client, "t-res", [user("pick a color")], tools=[PICK])
    start = next(e for e in asked if e["type"] == "TOOL_CALL_START")
    body = {"threadId": "t-res", "runId": "run-res", "messages": picked(start), "tools": [PICK]}

    async with served(client.app) as base, httpx.AsyncClient(base_url=base, timeout=10) as http:
        first = await _started(http, body)
        try:
            again = await _started(http, body)
        finally:
            await http.post("/api/agui/t-res/stop")

    ours = first["metadata"]["chatBff"]["runId"]
    assert again["metadata"]["chatBff"]["runId"] == ours
    assert again["runId"] == "run-res"
