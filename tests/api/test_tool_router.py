"""The tool router seen from outside: the operators' route endpoint, readiness, and a chat
turn that offers the model only the routed tools."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from app.settings import Settings
from tests.fakes.db import ApiClient, MakeApi
from tests.fakes.openai_upstream import Completion, FakeOpenAIUpstream

OPS = ["app.examples.ops"]


def settings_for(tmp_path: Path, **extra: Any) -> Settings:
    return Settings(
        _env_file=None,
        environment="test",
        database_url=f"sqlite+aiosqlite:///{tmp_path / 'router.db'}",
        files_dir=tmp_path / "files",
        tool_modules=OPS,
        example_tools_enabled=False,
        provider_max_retries=0,
        **extra,
    )


@pytest.fixture
async def ops(make_api: MakeApi, tmp_path: Path) -> AsyncIterator[ApiClient]:
    async with make_api(settings_for(tmp_path, tool_router_embeddings="none")) as api:
        yield api


async def test_the_route_endpoint_shows_the_choice_and_why(ops: ApiClient) -> None:
    response = await ops.post("/api/tools/route", json={"text": "Удали старые бэкапы"})

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["routed"] is True
    assert body["available"] == 25  # 24 example tools and the capabilities tool
    assert set(body["tools"]) == {
        "list_backups", "create_backup", "restore_backup", "delete_backup", "list_capabilities"
    }  # fmt: skip
    assert body["keyword_hits"]["delete_backup"] == ["ru:бэкап"]
    assert body["intended"] is not None
    assert body["negated"] is False
    assert "keywords only" in body["embeddings"]


async def test_a_negated_request_is_routed_without_a_mutating_intent(ops: ApiClient) -> None:
    body = (await ops.post("/api/tools/route", json={"text": "не удаляй бэкап"})).json()

    assert body["negated"] is True
    assert "delete_backup" in body["tools"]
    assert body["intended"] in (None, "list_backups")


async def test_readiness_names_the_router_state(ops: ApiClient) -> None:
    response = await ops.get("/readyz")

    assert response.status_code == 200
    state = response.json()["toolRouter"]
    assert state["mode"] == "auto"
    assert "keywords only" in state["embeddings"]


async def test_the_route_endpoint_needs_text(ops: ApiClient) -> None:
    assert (await ops.post("/api/tools/route", json={"text": ""})).status_code in (400, 422)


async def offered(
    make_api: MakeApi, tmp_path: Path, upstream: FakeOpenAIUpstream, **settings: Any
) -> list[str]:
    """The tools the model was offered for one chat turn asking for dashboards."""
    upstream.enqueue(Completion(text="Here are the dashboards."))
    chosen = settings_for(
        tmp_path,
        openai_api_key=SecretStr("sk-test-not-real"),
        openai_base_url=upstream.base_url,
        **settings,
    )
    async with make_api(chosen) as api:
        body = {"messages": [{"role": "user", "content": "show me the dashboards"}]}
        response = await api.post("/api/chat", json={**body, "stream": False})
    assert response.status_code == 200, response.text
    (sent,) = upstream.request_bodies()
    return [t["function"]["name"] for t in sent["tools"]]


async def test_a_chat_turn_offers_the_model_only_the_routed_tools(
    make_api: MakeApi, tmp_path: Path, openai_upstream: FakeOpenAIUpstream
) -> None:
    names = await offered(make_api, tmp_path, openai_upstream, tool_router_embeddings="none")

    assert names == ["list_dashboards", "create_dashboard", "share_dashboard",
                     "list_capabilities"]  # fmt: skip


async def test_with_routing_off_a_chat_turn_offers_every_tool(
    make_api: MakeApi, tmp_path: Path, openai_upstream: FakeOpenAIUpstream
) -> None:
    names = await offered(make_api, tmp_path, openai_upstream, tool_router="off")

    assert len(names) == 24  # no capabilities tool either: nothing is routed


async def test_a_tool_the_client_forces_by_name_stays_offered_when_routing_would_drop_it(
    make_api: MakeApi, tmp_path: Path, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(Completion(text="Here are the dashboards."))
    chosen = settings_for(
        tmp_path,
        openai_api_key=SecretStr("sk-test-not-real"),
        openai_base_url=openai_upstream.base_url,
        tool_router_embeddings="none",
    )
    forced = {"type": "function", "function": {"name": "list_backups"}}
    async with make_api(chosen) as api:
        body = {"messages": [{"role": "user", "content": "show me the dashboards"}]}
        response = await api.post("/api/chat", json={**body, "tool_choice": forced})
    assert response.status_code == 200, response.text
    (sent,) = openai_upstream.request_bodies()
    assert sent["tool_choice"] == forced
    assert "list_backups" in [t["function"]["name"] for t in sent["tools"]]
