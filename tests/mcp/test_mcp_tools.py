"""MCP servers' tools in our runtime: listed, called, failing, slow, gone, pinned, confirmed."""

from __future__ import annotations

import asyncio
import time

import pytest

from app.domain.tooling import ApprovalNeeded
from tests.mcp.conftest import HttpServer, Mount, http_config, stdio_config


async def test_an_http_servers_tools_are_mounted_under_its_name_and_called(
    mount: Mount, http_server: HttpServer
) -> None:
    mounted = await mount(http_config(http_server))

    assert {"web__echo", "web__add", "web__note"} <= mounted.names()
    assert mounted.sources.status() == [
        {"name": "web", "state": "connected", "tools": len(mounted.names())}
    ]
    outcome = await mounted.outcome("web__add", {"a": 2, "b": 3})
    assert outcome.status == "success"
    assert outcome.result == {"result": 5}
    assert (await mounted.outcome("web__echo", {"text": "hé"})).result == {"result": "hé"}


async def test_a_stdio_server_is_called_and_gets_only_its_allowed_environment(
    mount: Mount,
) -> None:
    mounted = await mount(stdio_config(env=["MCP_ALLOWED"]), envs={"local": {"MCP_ALLOWED": "yes"}})

    allowed = await mounted.outcome("local__env", {"name": "MCP_ALLOWED"})
    assert allowed.result == {"result": "yes"}
    # Nothing else of the service's environment reaches the subprocess.
    assert (await mounted.outcome("local__env", {"name": "PYTEST_CURRENT_TEST"})).result == {
        "result": "<unset>"
    }


async def test_a_tool_error_is_an_error_result_the_model_reads(
    mount: Mount, http_server: HttpServer
) -> None:
    mounted = await mount(http_config(http_server))

    outcome = await mounted.outcome("web__fail", {"reason": "disk full"})

    assert outcome.status == "error"
    assert "disk full" in outcome.result["error"]


async def test_invalid_arguments_are_refused_before_the_server_is_called(
    mount: Mount, http_server: HttpServer
) -> None:
    mounted = await mount(http_config(http_server))

    wrong_type = await mounted.outcome("web__add", {"a": "two", "b": 3})
    missing = await mounted.outcome("web__add", {"a": 2})
    undeclared = await mounted.outcome("web__add", {"a": 2, "b": 3, "c": 4})

    assert wrong_type.result["error"] == "Invalid arguments: a: 'two' is not of type 'integer'"
    assert missing.result["error"] == "Invalid arguments: 'b' is a required property"
    assert "c: this argument is not declared" in undeclared.result["error"]
    assert wrong_type.args is None  # refused before any call: nothing ran


async def test_a_call_past_its_timeout_ends_as_an_error_and_the_server_stays_usable(
    mount: Mount, http_server: HttpServer
) -> None:
    mounted = await mount(http_config(http_server, tools={"slow": {"timeout": 0.3}}))

    started = time.monotonic()
    outcome = await mounted.outcome("web__slow", {"seconds": 5})

    assert outcome.status == "error"
    assert "timed out after 0.3s" in outcome.result["error"]
    assert time.monotonic() - started < 3
    assert (await mounted.outcome("web__add", {"a": 1, "b": 1})).result == {"result": 2}


async def test_a_slow_server_does_not_hold_up_other_calls(
    mount: Mount, http_server: HttpServer
) -> None:
    mounted = await mount(http_config(http_server))

    slow = asyncio.create_task(mounted.outcome("web__slow", {"seconds": 1.5}, call_id="c1"))
    started = time.monotonic()
    quick = await mounted.outcome("web__add", {"a": 1, "b": 2}, call_id="c2")

    assert quick.result == {"result": 3}
    assert time.monotonic() - started < 1.0
    assert (await slow).result == {"result": "done"}


async def test_scope_arguments_are_pinned_and_hidden_from_the_model(
    mount: Mount, http_server: HttpServer
) -> None:
    mounted = await mount(http_config(http_server))
    spec = {s.name: s for s in mounted.runtime.specs(_ctx())}["web__note"]

    assert set(spec.parameters["properties"]) == {"text"}
    assert spec.parameters["required"] == ["text"]
    outcome = await mounted.outcome(
        "web__note", {"text": "hi", "workspace_id": "ws_other"}, scope={"workspace_id": "ws_1"}
    )
    assert outcome.result == {"workspace_id": "ws_1", "text": "hi"}
    assert outcome.args == {"text": "hi"}


async def test_a_confirm_policy_asks_for_an_approval_and_does_not_call(
    mount: Mount, http_server: HttpServer
) -> None:
    mounted = await mount(http_config(http_server, tools={"note": {"policy": "confirm"}}))

    needed = await mounted.invoke(
        "web__note", {"text": "hi"}, scope={"workspace_id": "ws_1"}, cid=None
    )

    assert isinstance(needed, ApprovalNeeded)
    assert needed.args == {"text": "hi"}


async def test_allow_and_deny_decide_which_tools_are_mounted(
    mount: Mount, http_server: HttpServer
) -> None:
    mounted = await mount(http_config(http_server, allow=["a*", "e*", "n*"], deny=["env", "ask"]))

    assert mounted.names() == {"web__add", "web__echo", "web__note"}


async def test_a_tool_whose_name_we_cannot_mount_is_left_out_and_the_rest_works(
    mount: Mount, http_server: HttpServer, caplog: pytest.LogCaptureFixture
) -> None:
    mounted = await mount(http_config(http_server))

    assert "web__dotted.name" not in mounted.names()
    assert "web__add" in mounted.names()
    assert "MCP tool left out" in caplog.text
    assert mounted.sources.status()[0]["state"] == "connected"


@pytest.mark.parametrize("transport", ["http", "stdio"])
async def test_the_older_handshake_works_too(
    mount: Mount, http_server: HttpServer, transport: str
) -> None:
    config = (
        http_config(http_server, handshake="legacy")
        if transport == "http"
        else stdio_config(handshake="legacy")
    )
    mounted = await mount(config)
    prefix = config.name

    assert (await mounted.outcome(f"{prefix}__add", {"a": 4, "b": 5})).result == {"result": 9}
    failed = await mounted.outcome(f"{prefix}__fail", {"reason": "nope"})
    assert failed.status == "error"
    assert "nope" in failed.result["error"]


def _ctx() -> object:
    from tests.tools.conftest import ALICE, run_ctx

    return run_ctx(ALICE, None)
