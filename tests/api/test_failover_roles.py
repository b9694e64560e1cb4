"""A fallback is resolved with the caller's roles like the model they asked for: a
fallback the caller may not choose never answers for them; failover goes on to the next
allowed one or fails as the primary did."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import SecretStr

from app.settings import Settings
from tests.auth.tokens import HS_SECRET, bearer, hs_token
from tests.fakes import failover
from tests.fakes.anthropic_upstream import AnthropicUpstream, MessageSpec, Text
from tests.fakes.db import ApiClient, MakeApi
from tests.fakes.openai_upstream import Completion, FakeOpenAIUpstream, server_error

USER = bearer(hs_token(sub="ursula", roles=["user"]))
STAFF = bearer(hs_token(sub="sam", roles=["user", "staff"]))
ASK = {"messages": [{"role": "user", "content": "Hi"}]}


STAFF_ONLY = {
    "id": "claude-staff",
    "provider": "anthropic",
    "upstream_model": "claude-opus-4-1",
    "roles": ["staff"],
}
BACKUP = {"id": "gpt-backup", "provider": "openai", "upstream_model": "gpt-4.1-nano"}


def catalogue(*fallbacks: str) -> str:
    return failover.catalogue(STAFF_ONLY, BACKUP, fallbacks=list(fallbacks))


@pytest.fixture
def settings(failover_settings: Settings) -> Settings:
    return failover_settings.model_copy(update={"jwt_secret": SecretStr(HS_SECRET)})


@pytest.fixture
async def api(make_api: MakeApi, settings: Settings) -> AsyncIterator[ApiClient]:
    update = {"models_json": catalogue("claude-staff", "gpt-backup")}
    async with make_api(settings.model_copy(update=update)) as client:
        yield client


async def test_a_fallback_the_caller_may_not_use_is_skipped_for_the_next_allowed_one(
    api: ApiClient, openai_upstream: FakeOpenAIUpstream, anthropic_upstream: AnthropicUpstream
) -> None:
    openai_upstream.enqueue(server_error(), Completion(text="The backup answers."))

    response = await api.post("/api/chat", json=ASK, headers=USER)

    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert body["choices"][0]["message"]["content"] == "The backup answers."
    assert body["message"]["metadata"]["model"] == "gpt-backup"
    assert anthropic_upstream.requests == []
    assert [b["model"] for b in openai_upstream.request_bodies()] == [
        "gpt-4o-mini",
        "gpt-4.1-nano",
    ]


async def test_a_caller_with_the_fallbacks_role_is_answered_by_it(
    api: ApiClient, openai_upstream: FakeOpenAIUpstream, anthropic_upstream: AnthropicUpstream
) -> None:
    openai_upstream.enqueue(server_error())
    anthropic_upstream.message(MessageSpec(blocks=[Text("Staff model here.")]))

    body = (await api.post("/api/chat", json=ASK, headers=STAFF)).json()

    assert body["message"]["metadata"]["model"] == "claude-staff"
    assert anthropic_upstream.requests[0].json["model"] == "claude-opus-4-1"


async def test_when_only_forbidden_fallbacks_are_left_the_primarys_failure_is_the_answer(
    make_api: MakeApi,
    settings: Settings,
    openai_upstream: FakeOpenAIUpstream,
    anthropic_upstream: AnthropicUpstream,
) -> None:
    openai_upstream.enqueue(server_error())
    update = {"models_json": catalogue("claude-staff")}
    async with make_api(settings.model_copy(update=update)) as api:
        response = await api.post("/api/chat", json=ASK, headers=USER)

    assert response.status_code == 502, response.text
    assert response.json()["error"]["code"] == "provider_unavailable"
    assert "Staff" not in response.text
    assert anthropic_upstream.requests == []
    assert len(openai_upstream.request_bodies()) == 1
