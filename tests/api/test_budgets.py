"""Budgets: a spent budget refuses a run (429 budget_exceeded, with when it resets); a run
that goes past one ends as `budget_exceeded` with its partial answer kept; budgets are
sums over the stored usage, so they survive a restart."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from pydantic import SecretStr

from app.domain.identity import Caller
from app.domain.usage import Budgets, resets_at
from app.providers.scripted import Script, ScriptedProvider, ScriptedTurn
from app.settings import Settings
from app.usage.policy import BudgetPolicy
from tests.api.runs.helpers import CONVERSATIONS, conversation, create, finished, send
from tests.api.sse_frames import parse
from tests.auth.tokens import HS_SECRET, bearer, hs_token
from tests.fakes.db import ApiClient, MakeApi

ALICE = bearer(hs_token(sub="alice", roles=["staff"]))
BOB = bearer(hs_token(sub="bob", roles=["vip"]))
PRICED = json.dumps(
    [
        {
            "id": "scripted",
            "provider": "scripted",
            "upstream_model": "scripted-demo",
            "price": {"input": 1000.0, "output": 2000.0},
        }
    ]
)
LONG = "The quick brown fox jumps over the lazy dog. " * 40  # ~1800 characters


def budgeted(app_settings: Settings, **budgets: Any) -> Settings:
    return app_settings.model_copy(
        update={"models_json": PRICED, "jwt_secret": SecretStr(HS_SECRET), **budgets}
    )


def play(api: ApiClient, *turns: ScriptedTurn) -> None:
    provider = ScriptedProvider(Script(mode="sequence", turns=list(turns)), delay_ms=0)
    api.services.providers["scripted"] = provider


async def stateless(api: ApiClient, headers: dict[str, str]) -> Any:
    body = {"messages": [{"role": "user", "content": "Tell me a story"}], "stream": True}
    return await api.post("/api/chat", json=body, headers=headers)


async def test_a_run_that_crosses_its_token_budget_ends_with_its_partial_answer_kept(
    make_api: MakeApi, app_settings: Settings
) -> None:
    async with make_api(budgeted(app_settings, budget_tokens_per_day=120)) as api:
        play(api, ScriptedTurn(text=LONG))
        api.headers.update(ALICE)
        cid = await create(api)
        frames = await finished(api, await send(api, cid, "Tell me a story"))
        end = frames[-1].data
        stored = (await conversation(api, cid))["messages"][-1]
    assert end["status"] == "budget_exceeded"
    assert end["error"]["code"] == "budget_exceeded"
    assert end["error"]["budget"] == "tokens_per_day"
    assert end["error"]["resets_at"].endswith("Z")
    assert end["usage"]["estimated"] is True  # cut before the provider reported usage
    assert [f.event for f in frames][-2:] == ["message_end", "run_end"]  # no cut stream
    text = "".join(f.data["delta"] for f in frames if f.event == "text_delta")
    assert 0 < len(text) < len(LONG)
    assert stored["metadata"]["status"] == "incomplete"
    assert stored["metadata"]["reason"] == "budget_exceeded"
    assert stored["content"][0]["data"]["text"] == text


async def test_a_spent_budget_refuses_the_next_run_with_when_it_resets_even_after_a_restart(
    make_api: MakeApi, app_settings: Settings
) -> None:
    settings = budgeted(app_settings, budget_tokens_per_day=120)
    async with make_api(settings) as api:
        play(api, ScriptedTurn(text=LONG))
        first = await stateless(api, ALICE)
        assert parse(first.text)[-1].data["status"] == "budget_exceeded"
        refused = await stateless(api, ALICE)
    async with make_api(settings) as restarted:
        again = await stateless(restarted, ALICE)
    for answer in (refused, again):
        assert answer.status_code == 429
        error = answer.json()["error"]
        assert error["code"] == "budget_exceeded"
        assert error["budget"] == "tokens_per_day"
        assert error["limit"] == 120
        now = datetime.now(UTC)
        assert error["resets_at"] == resets_at("tokens_per_day", now).isoformat().replace(
            "+00:00", "Z"
        )
        assert 1 <= int(answer.headers["retry-after"]) <= 86_400


async def test_a_conversation_turn_is_refused_before_its_message_is_stored(
    make_api: MakeApi, app_settings: Settings
) -> None:
    async with make_api(budgeted(app_settings, budget_tokens_per_day=120)) as api:
        play(api, ScriptedTurn(text=LONG))
        api.headers.update(ALICE)
        cid = await create(api)
        await finished(api, await send(api, cid, "Tell me a story"))
        refused = await api.post(f"{CONVERSATIONS}/{cid}/messages", json={"content": "More"})
        messages = (await conversation(api, cid))["messages"]
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "budget_exceeded"
    assert [m["role"] for m in messages] == ["user", "assistant"]


async def test_a_cost_budget_stops_a_run_and_budgets_are_per_user_and_per_role(
    make_api: MakeApi, app_settings: Settings
) -> None:
    settings = budgeted(
        app_settings, budget_cost_per_month=0.2, budget_roles={"vip": {"cost_per_month": 0}}
    )
    async with make_api(settings) as api:
        play(api, ScriptedTurn(text=LONG), ScriptedTurn(text=LONG))
        alice = parse((await stateless(api, ALICE)).text)[-1].data
        bob = parse((await stateless(api, BOB)).text)[-1].data
        report = (await api.get("/api/usage", headers=ALICE)).json()
    assert alice["status"] == "budget_exceeded"
    assert alice["error"]["budget"] == "cost_per_month"
    assert bob["status"] == "completed"  # the vip role has no cost budget
    [budget] = report["budgets"]
    assert budget["budget"] == "cost_per_month" and budget["remaining"] <= 0


async def test_a_finished_answer_within_budget_completes(
    make_api: MakeApi, app_settings: Settings
) -> None:
    async with make_api(budgeted(app_settings, budget_tokens_per_day=10_000)) as api:
        play(api, ScriptedTurn(text="Short answer."))
        end = parse((await stateless(api, ALICE)).text)[-1].data
        report = (await api.get("/api/usage", headers=ALICE)).json()
    assert end["status"] == "completed"
    [budget] = report["budgets"]
    assert budget["budget"] == "tokens_per_day"
    assert (
        budget["remaining"] == 10_000 - end["usage"]["input_tokens"] - end["usage"]["output_tokens"]
    )


def test_several_roles_get_the_most_generous_budget() -> None:
    policy = BudgetPolicy(
        Budgets(tokens_per_day=100, cost_per_month=5.0),
        {"pro": {"tokens_per_day": 1000}, "unlimited": {"cost_per_month": 0}},
    )
    both = policy.for_caller(Caller("u", frozenset({"pro", "unlimited"})))
    assert both == Budgets(tokens_per_day=1000, cost_per_month=0.0)
    assert policy.for_caller(Caller("u", frozenset())).tokens_per_day == 100


async def test_two_instances_on_one_database_share_a_budget(
    make_api: MakeApi, app_settings: Settings
) -> None:
    settings = budgeted(app_settings, budget_tokens_per_day=120)
    async with make_api(settings) as first, make_api(settings) as second:
        play(first, ScriptedTurn(text=LONG))
        spent = parse((await stateless(first, ALICE)).text)[-1].data
        refused = await stateless(second, ALICE)
        other_user = await stateless(second, BOB)
    assert spent["status"] == "budget_exceeded"
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "budget_exceeded"
    assert other_user.status_code == 200  # budgets are per user


async def test_an_agui_run_past_its_budget_finishes_saying_why(
    make_api: MakeApi, app_settings: Settings
) -> None:
    async with make_api(budgeted(app_settings, budget_tokens_per_day=120)) as api:
        play(api, ScriptedTurn(text=LONG))
        body = {
            "threadId": "t-budget",
            "runId": "r1",
            "messages": [{"id": "u1", "role": "user", "content": "Tell me a story"}],
        }
        response = await api.post("/api/agui", json=body, headers=ALICE)
    frames = [
        json.loads(b.removeprefix("data: "))
        for b in response.text.split("\n\n")
        if b.startswith("data: ")
    ]
    finished = frames[-1]
    assert finished["type"] == "RUN_FINISHED"
    [ours] = [v for k, v in finished["metadata"].items() if isinstance(v, dict)]
    assert ours["status"] == "budget_exceeded"
    assert ours["error"]["code"] == "budget_exceeded"
    assert finished["usage"][0]["inputTokens"] > 0
