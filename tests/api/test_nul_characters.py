"""NUL characters: text like any other once it enters (U+FFFD), refused only where no
value could hold one (a path, a query).

Postgres text and JSONB cannot hold U+0000. A client that sends one in a body gets it
stored as U+FFFD, never a database error; a model that emits one still gets its answer
stored.
"""

from __future__ import annotations

import json

from app.providers.scripted import Script, ScriptedProvider, ScriptedTurn
from app.settings import Settings
from tests.api.sse_frames import parse
from tests.fakes.db import ApiClient, MakeApi

CONVERSATIONS = "/api/conversations"


async def test_a_nul_in_a_json_body_becomes_a_replacement_character(api: ApiClient) -> None:
    response = await api.post(CONVERSATIONS, json={"title": "bad\x00title"})

    assert response.status_code == 201
    assert response.json()["title"] == "bad\ufffdtitle"


async def test_a_nul_in_the_path_is_a_400(api: ApiClient) -> None:
    response = await api.get(f"{CONVERSATIONS}/conv_%00x")

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_characters"


async def test_a_nul_in_the_query_is_a_400(api: ApiClient) -> None:
    response = await api.get(CONVERSATIONS, params={"q": "a\x00b"})

    assert response.status_code == 400


async def test_a_nul_on_the_openai_surface_reaches_the_model_as_a_replacement(
    api: ApiClient,
) -> None:
    body = {"model": "scripted", "messages": [{"role": "user", "content": "a\x00"}]}

    response = await api.post("/v1/chat/completions", json=body)

    assert response.status_code == 200


async def test_an_escaped_backslash_before_u0000_is_ordinary_text(api: ApiClient) -> None:
    response = await api.post(CONVERSATIONS, json={"title": "path C:\\u0000"})

    assert response.status_code == 201
    assert response.json()["title"] == "path C:\\u0000"


async def test_a_model_that_emits_nul_still_gets_its_answer_stored(
    make_api: MakeApi, app_settings: Settings
) -> None:
    turn = ScriptedTurn(text="before\x00after")
    provider = ScriptedProvider(Script(mode="sequence", turns=[turn]), delay_ms=0)
    async with make_api(app_settings, providers={"scripted": provider}) as api:
        cid = (await api.post(CONVERSATIONS, json={})).json()["id"]
        sent = await api.post(
            f"{CONVERSATIONS}/{cid}/messages",
            json={"content": "hi"},
            headers={"accept": "text/event-stream"},
        )
        frames = parse(sent.text)
        detail = (await api.get(f"{CONVERSATIONS}/{cid}")).json()

    assert frames[-1].data["status"] == "completed"
    answer = detail["messages"][-1]
    assert answer["content"][0]["data"]["text"] == "before\ufffdafter"
    assert "\x00" not in json.dumps(detail)
