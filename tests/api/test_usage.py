"""Usage accounting: every model call is booked (tokens, cached tokens, cost, estimated or
reported), shown on the wires, in `GET /api/usage`, the admin view and the metrics."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import SecretStr

from app.providers.scripted import Script, ScriptedProvider, ScriptedTurn
from app.settings import Settings
from tests.api.runs.helpers import create, finished, send
from tests.api.sse_frames import parse
from tests.auth.tokens import HS_SECRET, bearer, hs_token
from tests.fakes.db import ApiClient, MakeApi
from tests.fakes.openai_upstream import Completion, FakeOpenAIUpstream

ALICE = bearer(hs_token(sub="alice", roles=["staff"]))
BOB = bearer(hs_token(sub="bob", roles=["staff", "beta"]))
ROOT = bearer(hs_token(sub="root", roles=["admin"]))
PRICED = json.dumps(
    [
        {
            "id": "scripted",
            "provider": "scripted",
            "upstream_model": "scripted-demo",
            "price": {"input": 1.0, "output": 2.0, "cached": 0.5},
        }
    ]
)


def priced_settings(app_settings: Settings, **extra: Any) -> Settings:
    return app_settings.model_copy(
        update={"models_json": PRICED, "jwt_secret": SecretStr(HS_SECRET), **extra}
    )


def play(api: ApiClient, *turns: ScriptedTurn) -> ScriptedProvider:
    provider = ScriptedProvider(Script(mode="sequence", turns=list(turns)), delay_ms=0)
    api.services.providers["scripted"] = provider
    return provider


@pytest.fixture
async def api(make_api: MakeApi, app_settings: Settings) -> AsyncIterator[ApiClient]:
    async with make_api(priced_settings(app_settings)) as client:
        yield client


async def chat(api: ApiClient, text: str, headers: dict[str, str]) -> dict[str, Any]:
    body = {"messages": [{"role": "user", "content": text}]}
    response = await api.post("/api/chat", json=body, headers=headers)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


async def my_usage(api: ApiClient, headers: dict[str, str], **query: str) -> dict[str, Any]:
    response = await api.get("/api/usage", params=query, headers=headers)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_a_call_with_provider_usage_is_booked_with_its_cost(api: ApiClient) -> None:
    play(api, ScriptedTurn(text="Hello there, how are you?", cached_tokens=2))
    answer = await chat(api, "Say hello to me please, in a friendly way", ALICE)
    run_usage = answer["run_usage"]
    assert run_usage["estimated"] is False
    assert run_usage["cached_tokens"] == 2
    prompt, output = run_usage["input_tokens"], run_usage["output_tokens"]
    expected_cost = ((prompt - 2) * 1.0 + 2 * 0.5 + output * 2.0) / 1_000_000
    assert run_usage["cost"] == pytest.approx(expected_cost)
    assert answer["usage"]["prompt_tokens_details"] == {"cached_tokens": 2}
    assert answer["usage"]["cost"] == pytest.approx(expected_cost)

    report = await my_usage(api, ALICE)
    [day] = report["days"]
    assert day["model"] == "scripted"
    assert (day["input_tokens"], day["output_tokens"], day["cached_tokens"]) == (prompt, output, 2)
    assert day["calls"] == 1 and day["estimated_calls"] == 0
    assert report["totals"]["cost"] == pytest.approx(expected_cost)
    assert report["budgets"] == []
    assert (await my_usage(api, BOB))["days"] == []  # only the caller's own


async def test_a_call_without_provider_usage_is_counted_and_marked_estimated(
    api: ApiClient,
) -> None:
    play(api, ScriptedTurn(text="An answer of some forty characters long.", usage="absent"))
    answer = await chat(api, "Hi", ALICE)
    assert answer["run_usage"]["estimated"] is True
    assert answer["run_usage"]["input_tokens"] > 0
    assert answer["run_usage"]["output_tokens"] == 10  # 40 characters, 4 a token
    assert answer["usage"]["estimated"] is True
    [day] = (await my_usage(api, ALICE))["days"]
    assert day["estimated_calls"] == 1 and day["output_tokens"] == 10


async def test_every_model_call_of_a_conversation_run_is_booked_with_its_conversation(
    api: ApiClient,
) -> None:
    play(api, ScriptedTurn(text="one"), ScriptedTurn(text="two"))
    api.headers.update(ALICE)
    cid = await create(api)
    await finished(api, await send(api, cid, "first"))
    started = await send(api, cid, "second")
    frames = await finished(api, started)
    end = frames[-1].data
    assert end["usage"]["model_calls"] == 1 and end["usage"]["cost"] > 0
    async with api.services.db.read() as tx:
        rows = await tx.usage.by_day_and_model("alice", "2000-01-01", "2999-01-01")
    assert rows[0].calls == 2
    from sqlalchemy import select

    from app.store.tables.usage import UsageRow

    async with api.services.db.read() as tx:
        runs = (await tx.session.execute(select(UsageRow.run_id, UsageRow.conversation_id))).all()
    assert {c for _, c in runs} == {cid}
    assert started["run_id"] in {r for r, _ in runs}


async def test_the_admin_view_sums_per_user_and_per_role(api: ApiClient) -> None:
    play(api, ScriptedTurn(text="a"), ScriptedTurn(text="b"), ScriptedTurn(text="c"))
    await chat(api, "one", ALICE)
    await chat(api, "two", BOB)
    await chat(api, "three", BOB)
    response = await api.get("/api/admin/usage", headers=ROOT)
    assert response.status_code == 200, response.text
    report = response.json()
    users = {u["user_id"]: u["calls"] for u in report["users"]}
    roles = {r["role"]: r["calls"] for r in report["roles"]}
    assert users == {"alice": 1, "bob": 2}
    assert roles == {"staff": 3, "beta": 2}
    assert (await api.get("/api/admin/usage", headers=ALICE)).status_code == 404


async def test_a_report_takes_a_range_of_days(api: ApiClient) -> None:
    play(api, ScriptedTurn(text="a"))
    await chat(api, "one", ALICE)
    past = await my_usage(api, ALICE, **{"from": "2020-01-01", "to": "2020-01-31"})
    assert past["days"] == [] and past["totals"]["calls"] == 0
    backwards = await api.get(
        "/api/usage", params={"from": "2020-02-01", "to": "2020-01-01"}, headers=ALICE
    )
    assert backwards.status_code == 400


async def test_usage_is_counted_in_the_metrics(api: ApiClient) -> None:
    play(api, ScriptedTurn(text="Hello", cached_tokens=1))
    await chat(api, "Hi there", ALICE)
    metrics = (await api.get("/metrics")).text
    assert 'chatbff_tokens_cached_total{model="scripted"} 1.0' in metrics
    assert 'chatbff_cost_total{model="scripted"}' in metrics


async def test_streamed_chat_completions_carry_cached_tokens_and_cost(api: ApiClient) -> None:
    play(api, ScriptedTurn(text="Hello", cached_tokens=1))
    body = {
        "model": "scripted",
        "messages": [{"role": "user", "content": "Hi there"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    response = await api.post("/v1/chat/completions", json=body, headers=ALICE)
    assert response.status_code == 200
    chunks = [
        json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: {")
    ]
    usage = chunks[-1]["usage"]
    assert usage["prompt_tokens_details"] == {"cached_tokens": 1}
    assert usage["cost"] > 0


async def test_responses_carry_cached_tokens(api: ApiClient) -> None:
    play(api, ScriptedTurn(text="Hello", cached_tokens=1))
    body = {"model": "scripted", "input": "Hi there"}
    response = await api.post("/v1/responses", json=body, headers=ALICE)
    assert response.status_code == 200, response.text
    assert response.json()["usage"]["input_tokens_details"]["cached_tokens"] == 1


async def test_native_run_end_carries_the_usage(api: ApiClient) -> None:
    play(api, ScriptedTurn(text="Hello", cached_tokens=1))
    body = {"messages": [{"role": "user", "content": "Hi there, friend"}], "stream": True}
    response = await api.post("/api/chat", json=body, headers=ALICE)
    end = parse(response.text)[-1]
    assert end.event == "run_end"
    assert end.data["usage"]["cached_tokens"] == 1
    assert end.data["usage"]["cost"] > 0
    assert end.data["usage"]["estimated"] is False


GPT = json.dumps(
    [
        {
            "id": "gpt-test",
            "provider": "openai",
            "upstream_model": "gpt-4o-mini",
            "price": {"input": 0.15, "output": 0.6, "cached": 0.075},
        }
    ]
)


@pytest.fixture
async def gpt(
    make_api: MakeApi, app_settings: Settings, openai_upstream: FakeOpenAIUpstream
) -> AsyncIterator[ApiClient]:
    settings = priced_settings(
        app_settings,
        models_json=GPT,
        openai_api_key=SecretStr("sk-test-not-real"),
        openai_base_url=openai_upstream.base_url,
        provider_max_retries=0,
    )
    async with make_api(settings) as client:
        yield client


async def test_usage_the_openai_upstream_reports_is_booked_as_reported(
    gpt: ApiClient, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(Completion(text="Hello!", usage=(1000, 200), cached_tokens=400))
    answer = await chat(gpt, "Hi", ALICE)
    assert openai_upstream.request_bodies()[0]["stream_options"] == {"include_usage": True}
    cost = (600 * 0.15 + 400 * 0.075 + 200 * 0.6) / 1_000_000
    assert answer["usage"]["prompt_tokens"] == 1000
    assert answer["usage"]["prompt_tokens_details"] == {"cached_tokens": 400}
    assert answer["usage"]["cost"] == pytest.approx(cost)
    [day] = (await my_usage(gpt, ALICE))["days"]
    assert (day["model"], day["input_tokens"], day["output_tokens"]) == ("gpt-test", 1000, 200)
    assert day["cached_tokens"] == 400 and day["estimated_calls"] == 0
    assert day["cost"] == pytest.approx(cost)


async def test_an_openai_compatible_upstream_without_usage_is_estimated(
    gpt: ApiClient, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(Completion(text="x" * 80, usage=None))
    answer = await chat(gpt, "Hi", ALICE)
    assert answer["run_usage"]["estimated"] is True
    assert answer["run_usage"]["output_tokens"] == 20
    [day] = (await my_usage(gpt, ALICE))["days"]
    assert day["estimated_calls"] == 1 and day["output_tokens"] == 20


@pytest.mark.parametrize("loose", ["0", "1733011200"])
@pytest.mark.parametrize("bound", ["from", "to"])
async def test_a_day_is_iso_text_never_a_unix_time(api: ApiClient, bound: str, loose: str) -> None:
    # `to=0` was read as 1970-01-01: a report of nothing, with no word of the mistake.
    days = {"from": "2026-12-01", "to": "2026-12-31"}
    for url, headers in (("/api/usage", ALICE), ("/api/admin/usage", ROOT)):
        response = await api.get(url, params={**days, bound: loose}, headers=headers)
        assert response.status_code == 422, response.text
        assert response.json()["error"]["code"] == "validation_error"
        assert response.json()["error"]["param"] == f"query.{bound}"

    report = await my_usage(api, ALICE, **days)
    assert (report["start"], report["end"]) == ("2026-12-01", "2026-12-31")
