"""A server that is not there, or goes away, costs its own tools only."""

from __future__ import annotations

import json
import logging
import os
import signal
import time
from typing import Any

import pytest
from mcp.client.session import ClientSession

from tests.mcp.conftest import (
    HttpServer,
    Mount,
    children,
    free_port,
    http_config,
    stdio_config,
    until,
)


async def test_an_unreachable_server_is_left_out_and_the_others_work(
    mount: Mount, http_server: HttpServer, caplog: pytest.LogCaptureFixture
) -> None:
    dead = http_config(http_server, name="dead", connect_timeout=2)
    dead = dead.model_copy(update={"url": f"http://127.0.0.1:{free_port()}/mcp"})

    mounted = await mount(dead, http_config(http_server))

    assert not any(n.startswith("dead__") for n in mounted.names())
    status = {s["name"]: s for s in mounted.sources.status()}
    assert status["dead"]["state"] == "unavailable"
    assert status["dead"]["tools"] == 0
    assert "ConnectError" in status["dead"]["error"]
    assert status["web"]["state"] == "connected"
    assert "MCP server unavailable" in caplog.text
    outcome = await mounted.outcome("dead__echo", {"text": "x"})
    assert outcome.result["error"] == "The tool `dead__echo` is not available."
    assert (await mounted.outcome("web__add", {"a": 1, "b": 2})).result == {"result": 3}


async def test_an_http_server_that_dies_mid_call_is_an_error_result_then_comes_back(
    mount: Mount, http_server: HttpServer
) -> None:
    mounted = await mount(http_config(http_server))

    started = time.monotonic()
    outcome = await mounted.outcome("web__die", {})

    assert outcome.status == "error"
    assert "web" in outcome.result["error"]
    assert time.monotonic() - started < 5
    await until(lambda: "web__add" not in mounted.names())
    assert mounted.sources.status()[0]["state"] == "unavailable"
    gone = await mounted.outcome("web__add", {"a": 1, "b": 2})
    assert gone.status == "error"

    http_server.start()  # the same port: the service reconnects by itself
    await until(lambda: "web__add" in mounted.names(), timeout=20)
    assert (await mounted.outcome("web__add", {"a": 1, "b": 2})).result == {"result": 3}


def _count_probes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The liveness requests the service sends from now on (answered or not): `ping`, or
    `server/discover` once connected (the connect-time probe of `auto` is one too)."""
    sent: list[str] = []
    for method in ("send_ping", "send_discover"):
        original = getattr(ClientSession, method)

        async def counted(
            self: ClientSession, *a: Any, _o: Any = original, _m: str = method, **kw: Any
        ) -> Any:
            sent.append(_m)
            return await _o(self, *a, **kw)

        monkeypatch.setattr(ClientSession, method, counted)
    return sent


@pytest.mark.parametrize("handshake", ["auto", "legacy"])
@pytest.mark.parametrize("transport", ["http", "stdio"])
async def test_a_healthy_server_stays_mounted_across_liveness_probes(
    mount: Mount,
    http_server: HttpServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    transport: str,
    handshake: str,
) -> None:
    # 2026-07-28 removed `ping` (a server answers it "Method not found", over HTTP a 404):
    # probing with it took a healthy server's tools out at every probe until it reconnected.
    config = http_config(http_server) if transport == "http" else stdio_config()
    config = config.model_copy(update={"ping_seconds": 0.05, "handshake": handshake})
    mounted = await mount(config)
    prefix = config.name
    probes = _count_probes(monkeypatch)

    calls = 0
    while len(probes) < 5:  # several probes, each between tool calls
        outcome = await mounted.outcome(f"{prefix}__add", {"a": calls, "b": 1})
        assert outcome.result == {"result": calls + 1}, outcome.result
        assert mounted.sources.status()[0]["state"] == "connected"
        calls += 1

    assert set(probes) == {"send_discover" if handshake == "auto" else "send_ping"}
    assert "MCP server unavailable" not in caplog.text


async def test_a_server_that_stops_answering_is_found_out_by_the_probe(
    mount: Mount, http_server: HttpServer
) -> None:
    # Frozen, not dead: its sockets stay open (the change stream too), only the probe
    # notices. It must still notice on 2026-07-28 connections, which have no `ping`.
    mounted = await mount(http_config(http_server, ping_seconds=0.05, connect_timeout=2))
    assert http_server.proc is not None
    assert "web__add" in mounted.names()

    os.kill(http_server.proc.pid, signal.SIGSTOP)
    try:
        await until(lambda: mounted.sources.status()[0]["state"] == "unavailable")
        assert mounted.sources.status()[0]["error"] == "timed out"
        assert "web__add" not in mounted.names()
    finally:
        os.kill(http_server.proc.pid, signal.SIGCONT)
    await until(lambda: "web__add" in mounted.names(), timeout=20)
    assert (await mounted.outcome("web__add", {"a": 1, "b": 2})).result == {"result": 3}


async def test_a_stdio_server_that_exits_mid_call_is_an_error_result(mount: Mount) -> None:
    mounted = await mount(stdio_config())

    outcome = await mounted.outcome("local__die", {})

    assert outcome.status == "error"
    assert "local" in outcome.result["error"]
    # The supervisor starts a new process: the tools come back.
    await until(lambda: mounted.sources.status()[0]["state"] == "unavailable")
    await until(lambda: "local__add" in mounted.names(), timeout=20)
    assert (await mounted.outcome("local__add", {"a": 2, "b": 2})).result == {"result": 4}


@pytest.mark.parametrize("transport", ["http", "stdio"])
async def test_a_changed_tool_list_is_mounted_again(
    mount: Mount, http_server: HttpServer, transport: str
) -> None:
    config = http_config(http_server) if transport == "http" else stdio_config()
    mounted = await mount(config)
    prefix = config.name
    assert f"{prefix}__extra" not in mounted.names()

    assert (await mounted.outcome(f"{prefix}__grow", {})).status == "success"

    await until(lambda: f"{prefix}__extra" in mounted.names())
    assert (await mounted.outcome(f"{prefix}__extra", {})).result == {"result": "extra"}


async def test_a_stdio_servers_own_log_lines_are_debug_records_naming_it(
    mount: Mount, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG", logger="chat_bff.mcp.stderr")
    mounted = await mount(stdio_config())

    await mounted.outcome("local__echo", {"text": "hi"})
    await until(lambda: any("echo called" in r.getMessage() for r in _stderr(caplog)))

    records = _stderr(caplog)
    assert {r.levelname for r in records} == {"DEBUG"}
    assert {getattr(r, "mcp_server", None) for r in records} == {"local"}


def _stderr(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "chat_bff.mcp.stderr"]


async def test_a_server_asking_mid_call_the_older_way_hears_decline_and_the_call_ends(
    mount: Mount, http_server: HttpServer, caplog: pytest.LogCaptureFixture
) -> None:
    # On the older handshake a server asks with an `elicitation/create` request in the
    # middle of the call, which cannot wait for a person (the answer may reach another
    # instance, or never): the server hears "decline" at once, ends its call its own
    # way, and the service says so in its log. (On 2026-07-28 the SDK's server has no
    # back-channel for that request; it asks with an input_required result instead.)
    mounted = await mount(http_config(http_server, handshake="legacy"))

    with caplog.at_level(logging.WARNING, logger="chat_bff.mcp"):
        outcome = await mounted.outcome("web__ask", {})

    assert outcome.status == "success", outcome.result
    assert "answered decline" in json.dumps(outcome.result)
    [record] = [r for r in caplog.records if "elicitation/create" in r.getMessage()]
    assert record.levelname == "WARNING"
    assert getattr(record, "mcp_server", None) == "web"


async def test_closing_stops_a_stdio_servers_process(mount: Mount) -> None:
    before = children()
    mounted = await mount(stdio_config())
    started = children() - before
    assert len(started) == 1

    await mounted.sources.aclose()

    await until(lambda: not (children() & started))
    assert mounted.sources.status()[0]["state"] == "stopped"
    assert "local__add" not in mounted.names()
