"""Budgets beyond the caller's own: a role's members together (`BUDGET_ROLE_TOTALS`) and
each API key (`BUDGET_API_KEYS`). Both are sums over the stored usage, so they hold on
SQLite and Postgres, across instances and restarts; a spent one refuses the next run
(429 with the scope and when it resets) and one crossed mid-run ends it `budget_exceeded`."""

from __future__ import annotations

from typing import Any

from app.domain.identity import Caller
from app.domain.usage import Budgets
from app.providers.scripted import ScriptedTurn
from app.settings import Settings
from app.usage.policy import BudgetPolicy
from tests.api.sse_frames import parse
from tests.api.test_budgets import LONG, budgeted, play, stateless
from tests.auth.tokens import bearer, hs_token
from tests.fakes.db import ApiClient, MakeApi

ALICE = bearer(hs_token(sub="alice", roles=["interns"]))
CAROL = bearer(hs_token(sub="carol", roles=["interns"]))
DAVE = bearer(hs_token(sub="dave", roles=["staff"]))
ADMIN = bearer(hs_token(sub="root", roles=["admin"]))


async def new_key(api: ApiClient, owner: str) -> dict[str, str]:
    body = {"name": "ci", "owner_id": owner, "roles": ["user"]}
    created = await api.post("/api/admin/api-keys", json=body, headers=ADMIN)
    assert created.status_code == 201, created.text
    return {"Authorization": f"Bearer {created.json()['key']}"}


async def test_a_roles_total_is_shared_by_its_members_and_spares_other_roles(
    make_api: MakeApi, app_settings: Settings
) -> None:
    totals = {"interns": {"tokens_per_day": 120}}
    async with make_api(budgeted(app_settings, budget_role_totals=totals)) as api:
        play(api, ScriptedTurn(text=LONG), ScriptedTurn(text="Fine."))
        alice = parse((await stateless(api, ALICE)).text)[-1].data
        refused = await stateless(api, CAROL)  # carol spent nothing herself
        dave = parse((await stateless(api, DAVE)).text)[-1].data
        report = (await api.get("/api/usage", headers=CAROL)).json()
    assert alice["status"] == "budget_exceeded"
    assert alice["error"]["scope"] == "role:interns"
    assert refused.status_code == 429
    error = refused.json()["error"]
    assert (error["budget"], error["scope"], error["limit"]) == (
        "tokens_per_day",
        "role:interns",
        120,
    )
    assert error["resets_at"].endswith("T00:00:00Z")
    assert dave["status"] == "completed"
    [budget] = report["budgets"]
    assert budget["scope"] == "role:interns" and budget["remaining"] <= 0


async def test_an_api_keys_budget_caps_the_key_not_its_owner(
    make_api: MakeApi, app_settings: Settings
) -> None:
    keys = {"*": {"tokens_per_day": 120}}
    async with make_api(budgeted(app_settings, budget_api_keys=keys)) as api:
        play(api, ScriptedTurn(text=LONG), ScriptedTurn(text="Still me."))
        key = await new_key(api, "alice")
        first = parse((await stateless(api, key)).text)[-1].data
        refused = await stateless(api, key)
        other_key = await new_key(api, "alice")
        own_token = parse((await stateless(api, bearer(hs_token(sub="alice")))).text)[-1].data
    assert first["status"] == "budget_exceeded"
    assert first["error"]["scope"] == "api_key"
    assert refused.status_code == 429
    assert refused.json()["error"]["scope"] == "api_key"
    assert own_token["status"] == "completed"  # the owner's JWT is not the key
    assert other_key  # a second key starts with its own, unspent budget:
    async with make_api(budgeted(app_settings, budget_api_keys=keys)) as restarted:
        play(restarted, ScriptedTurn(text="New key."))
        fresh = parse((await stateless(restarted, other_key)).text)[-1].data
        again = await stateless(restarted, key)  # a restart forgets nothing
    assert fresh["status"] == "completed"
    assert again.status_code == 429


async def test_a_key_of_its_own_budget_overrides_every_keys(
    make_api: MakeApi, app_settings: Settings
) -> None:
    async with make_api(budgeted(app_settings)) as api:
        key = await new_key(api, "alice")
        listed: Any = (await api.get("/api/admin/api-keys", headers=ADMIN)).json()
    key_id = listed["data"][0]["id"]
    keys = {"*": {"tokens_per_day": 120}, key_id: {"tokens_per_day": 0, "cost_per_day": 50}}
    async with make_api(budgeted(app_settings, budget_api_keys=keys)) as api:
        play(api, ScriptedTurn(text=LONG))
        end = parse((await stateless(api, key)).text)[-1].data
    assert end["status"] == "completed"  # 0: no token budget for this key


def test_group_and_key_budgets_are_read_from_the_policy() -> None:
    policy = BudgetPolicy(
        Budgets(),
        {},
        role_totals={"interns": {"cost_per_month": 200}},
        api_keys={"*": {"tokens_per_day": 5}, "key_1": {"cost_per_day": 1}},
    )
    intern = Caller("u", frozenset({"interns", "user"}), api_key_id="key_1")
    assert policy.groups(intern) == [("interns", Budgets(cost_per_month=200))]
    assert policy.for_api_key("key_1") == Budgets(tokens_per_day=5, cost_per_day=1)
    assert policy.for_api_key("key_2") == Budgets(tokens_per_day=5)
    assert policy.for_api_key(None) == Budgets()
    assert policy.enabled
