"""Every run ends in a stored final state: time limits, and a database that refuses the end."""

from __future__ import annotations

from app.providers.scripted import Script, ScriptedProvider, ScriptedTurn
from app.settings import Settings
from tests.api.runs.helpers import conversation, create, finished, send
from tests.fakes.db import MakeApi


async def test_a_run_over_its_time_limit_fails_and_keeps_its_partial_text(
    make_api: MakeApi, app_settings: Settings
) -> None:
    slow = ScriptedProvider(
        Script(mode="sequence", turns=[ScriptedTurn(text="Some words and then more", delay_ms=200)])
    )
    settings = app_settings.model_copy(update={"run_timeout_seconds": 0.5})

    async with make_api(settings, providers={"scripted": slow}) as api:
        cid = await create(api)
        frames = await finished(api, await send(api, cid))
        answer = (await conversation(api, cid))["messages"][-1]

    assert frames[-1].data["status"] == "failed"
    assert frames[-1].data["error"]["code"] == "run_timeout"
    assert [f.event for f in frames if f.event == "error"] == ["error"]
    assert answer["metadata"]["status"] == "incomplete"
    assert answer["content"][0]["data"]["text"] == "".join(
        f.data["delta"] for f in frames if f.event == "text_delta"
    )
