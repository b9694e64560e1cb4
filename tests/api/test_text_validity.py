"""Text enters valid at every edge: lone surrogates (and NUL) from a model, from a user or
from a signed token become U+FFFD, so what is streamed, stored and reloaded is the same,
on SQLite and Postgres."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from app.settings import Settings
from tests.api.sse_frames import parse
from tests.auth.tokens import HS_SECRET, bearer, hs_token, sqlite_settings
from tests.fakes.db import ApiClient, MakeApi
from tests.fakes.openai_upstream import Completion, FakeOpenAIUpstream

CONVERSATIONS = "/api/conversations"
# Half an emoji in each of two deltas (to rejoin), and a lone high surrogate (to replace).
DELTAS = ["smile \ud83d", "\ude00 and a lone \ud800 here."]
SHOWN = "smile \U0001f600 and a lone \ufffd here."


@pytest.fixture
async def openai_api(
    make_api: MakeApi, app_settings: Settings, openai_upstream: FakeOpenAIUpstream
) -> Any:
    settings = app_settings.model_copy(
        update={
            "openai_api_key": SecretStr("sk-test"),
            "openai_base_url": openai_upstream.base_url,
            "provider_max_retries": 0,
        }
    )
    async with make_api(settings) as api:
        yield api


async def test_a_models_lone_surrogates_are_streamed_stored_and_reloaded_alike(
    openai_api: ApiClient, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(Completion(text=DELTAS))
    cid = (await openai_api.post(CONVERSATIONS, json={})).json()["id"]

    started = await openai_api.post(f"{CONVERSATIONS}/{cid}/messages", json={"content": "Hi"})
    frames = parse((await openai_api.get(started.json()["events_url"])).text)
    detail = (await openai_api.get(f"{CONVERSATIONS}/{cid}")).json()

    streamed = "".join(f.data["delta"] for f in frames if f.event == "text_delta")
    assert frames[-1].data["status"] == "completed"
    assert streamed == SHOWN
    assert detail["active_run_id"] is None
    assert detail["messages"][-1]["content"][0]["data"]["text"] == SHOWN


async def test_a_models_lone_surrogate_does_not_break_openai_answers(
    openai_api: ApiClient, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(Completion(text=DELTAS), Completion(text=DELTAS))
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}]}

    whole = await openai_api.post("/v1/chat/completions", json=body)
    streamed = await openai_api.post("/v1/chat/completions", json={**body, "stream": True})

    assert whole.status_code == 200
    assert whole.json()["choices"][0]["message"]["content"] == SHOWN
    chunks = [
        json.loads(line[6:]) for line in streamed.text.splitlines() if line.startswith("data: {")
    ]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == SHOWN


@pytest.mark.parametrize(
    "content",
    [
        "lone \ud800 in a string",
        [{"type": "text", "data": {"text": "lone \ud800 in a part"}}],
    ],
    ids=["string", "parts"],
)
async def test_a_users_lone_surrogate_is_stored_as_a_replacement(
    api: ApiClient, content: Any
) -> None:
    cid = (await api.post(CONVERSATIONS, json={})).json()["id"]

    # httpx would refuse to encode a lone surrogate; send the JSON escape a browser sends.
    raw = json.dumps({"content": content}).encode()
    sent = await api.post(
        f"{CONVERSATIONS}/{cid}/messages",
        content=raw,
        headers={"content-type": "application/json"},
    )
    detail = (await api.get(f"{CONVERSATIONS}/{cid}")).json()

    assert sent.status_code == 202, sent.text
    user = detail["messages"][0]
    text = (
        user["content"] if isinstance(user["content"], str) else user["content"][0]["data"]["text"]
    )
    assert "\ufffd" in text and "\ud800" not in text


async def test_a_lone_surrogate_in_a_stateless_chat_is_answered(api: ApiClient) -> None:
    raw = json.dumps({"messages": [{"role": "user", "content": "hi \udfff"}]}).encode()

    response = await api.post(
        "/api/chat", content=raw, headers={"content-type": "application/json"}
    )

    assert response.status_code == 200, response.text
    assert response.json()["messages"][0]["content"] == "hi \ufffd"


async def test_a_signed_subject_with_a_lone_surrogate_is_a_valid_caller(
    make_api: MakeApi, tmp_path: Path
) -> None:
    settings = sqlite_settings(tmp_path, jwt_secret=SecretStr(HS_SECRET))
    token = hs_token(sub="eve\ud800")

    async with make_api(settings) as api:
        me = await api.get("/api/me", headers=bearer(token))

    assert me.status_code == 200, me.text
    assert me.json()["user_id"] == "eve\ufffd"
