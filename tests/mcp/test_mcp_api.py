"""MCP servers configured through `MCP_SERVERS`, seen through the API: the catalogue,
`/readyz`, a conversation whose model calls an MCP tool, and an approval for one."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import SecretStr, ValidationError

from app.config_errors import configuration_error
from app.providers.scripted import Script, ScriptedProvider, ScriptedToolCall, ScriptedTurn
from app.settings import Settings
from tests.api.test_approvals import _ok, create, follow, say
from tests.fakes.db import ApiClient, MakeApi
from tests.mcp.conftest import HttpServer, free_port

SCRIPT = Script(
    mode="rules",
    turns=[
        ScriptedTurn(after_tool="web__add", text="The sum is in."),
        ScriptedTurn(after_tool="web__echo", text="Echoed."),
        ScriptedTurn(
            match="^add", tool_calls=[ScriptedToolCall(name="web__add", args={"a": 2, "b": 3})]
        ),
        ScriptedTurn(
            match="^echo", tool_calls=[ScriptedToolCall(name="web__echo", args={"text": "hi"})]
        ),
        ScriptedTurn(text="Hello."),
    ],
)


def servers(http_server: HttpServer) -> list[dict[str, Any]]:
    return [
        {
            "name": "web",
            "transport": "streamable-http",
            "url": http_server.url,
            "headers": {"Authorization": "Bearer not-shown"},
            "tools": {"echo": {"policy": "confirm"}},
            "deny": ["die", "grow", "ask", "remove", "whoami"],
        },
        {
            "name": "gone",
            "transport": "streamable-http",
            "url": f"http://127.0.0.1:{free_port()}/mcp",
            "connect_timeout": 2,
        },
    ]


@pytest.fixture
async def client(
    make_api: MakeApi, app_settings: Settings, http_server: HttpServer
) -> AsyncIterator[ApiClient]:
    settings = app_settings.model_copy(
        update={"mcp_servers": SecretStr(json.dumps(servers(http_server)))}
    )
    async with make_api(settings, providers={"scripted": ScriptedProvider(SCRIPT)}) as api:
        yield api


async def test_readyz_names_each_server_and_an_unreachable_one_does_not_make_it_unready(
    client: ApiClient,
) -> None:
    response = await client.get("/readyz")

    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    sources = {s["name"]: s for s in body["toolSources"]}
    assert sources["web"]["state"] == "connected"
    assert sources["web"]["tools"] == 6
    assert sources["gone"]["state"] == "unavailable"
    assert sources["gone"]["tools"] == 0
    assert "ConnectError" in sources["gone"]["error"]


async def test_the_catalogue_lists_the_servers_tools_with_their_policies(
    client: ApiClient,
) -> None:
    tools = {t["name"]: t for t in (await _ok(await client.get("/api/tools")))["data"]}

    assert set(tools) == {
        "web__echo",
        "web__add",
        "web__fail",
        "web__slow",
        "web__note",
        "web__env",
    }
    assert tools["web__echo"]["policy"] == "confirm"
    assert tools["web__add"]["policy"] == "auto"
    assert set(tools["web__note"]["parameters"]["properties"]) == {"text"}


async def test_a_model_calls_an_mcp_tool_and_reads_its_result(client: ApiClient) -> None:
    cid = await create(client)

    frames = await say(client, cid, "add two and three")

    end = next(f for f in frames if f.event == "tool_end")
    assert end.data["part"]["data"]["toolName"] == "web__add"
    assert end.data["part"]["data"]["status"] == "success"
    assert end.data["part"]["data"]["result"] == {"result": 5}
    assert frames[-1].data["status"] == "completed"


async def test_a_confirm_tool_waits_for_a_human_then_the_server_runs_it(
    client: ApiClient,
) -> None:
    cid = await create(client)

    frames = await say(client, cid, "echo please")

    confirm = next(f for f in frames if f.event == "confirm_required")
    assert frames[-1].data["status"] == "requires_action"
    decided = await _ok(
        await client.post(
            f"/api/approvals/{confirm.data['approval_id']}", json={"decision": "approve"}
        )
    )
    assert decided["part"]["data"]["status"] == "success"
    assert decided["part"]["data"]["result"] == {"result": "hi"}
    resumed = await follow(client, decided["events_url"])
    assert resumed[-1].data["status"] == "completed"


def test_a_bad_mcp_servers_setting_stops_the_start_naming_the_problem_and_no_value() -> None:
    bad = [{"name": "x", "transport": "streamable-http", "headers": {"Authorization": "s3cret"}}]

    with pytest.raises(ValidationError) as caught:
        Settings(_env_file=None, mcp_servers=json.dumps(bad))
    problems = configuration_error(caught.value).problems

    assert problems == ["MCP_SERVERS: entry 0: server 'x': streamable-http needs a url"]
    assert "s3cret" not in str(problems)


async def test_the_capabilities_tool_is_offered_when_only_mcp_servers_bring_tools(
    make_api: MakeApi, app_settings: Settings, http_server: HttpServer
) -> None:
    # The service's own tools are off here: before the servers mounted theirs, the
    # catalogue was empty and the router had nothing to route.
    settings = app_settings.model_copy(
        update={
            "mcp_servers": SecretStr(json.dumps(servers(http_server)[:1])),
            "tool_router": "on",
        }
    )
    async with make_api(settings, providers={"scripted": ScriptedProvider(SCRIPT)}) as api:
        tools = {t["name"] for t in (await _ok(await api.get("/api/tools")))["data"]}

    assert "list_capabilities" in tools
    assert "web__add" in tools
