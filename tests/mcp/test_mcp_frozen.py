"""A server that freezes (stopped, not dead: its sockets still accept) or drops the
connection: the status says so as its tools leave, calls end as error results, and the
service connects again once the server is back, with nothing of the old connection left."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

import pytest

from tests.mcp.conftest import (
    HttpServer,
    Mount,
    Mounted,
    children,
    connections_to,
    http_config,
    stdio_config,
    until,
)
from tests.mcp.test_mcp_user_headers import HEADERS, _forwarder

# Generous: a stalled call or close of the SDK waits 300 s (its HTTP read timeout).
_NEVER = 90.0


@pytest.mark.parametrize("transport", ["http-legacy", "stdio"])
async def test_a_frozen_server_reads_unavailable_as_its_tools_leave_and_comes_back(
    mount: Mount, http_server: HttpServer, transport: str
) -> None:
    # The probe finds the freeze; closing the connection then says goodbye to a server
    # that never answers (a DELETE of the older handshake's session, a stdio process that
    # ignores its closed stdin). /readyz read `connected` all along, 150 s and more.
    before = children()
    if transport == "stdio":
        config = stdio_config(ping_seconds=0.05)
    else:
        config = http_config(http_server, handshake="legacy", ping_seconds=0.05)
    config = config.model_copy(update={"connect_timeout": 5})
    mounted = await mount(config)
    add = f"{config.name}__add"
    await until(lambda: add in mounted.names(), timeout=30)
    assert http_server.proc is not None
    frozen = http_server.proc.pid if transport != "stdio" else (children() - before).pop()

    os.kill(frozen, signal.SIGSTOP)
    try:
        await until(lambda: add not in mounted.names(), timeout=30)
        [status] = mounted.sources.status()
        assert status["state"] == "unavailable", status
        assert status["error"] == "timed out"
    finally:
        with contextlib.suppress(ProcessLookupError):  # stdio: the close killed it
            os.kill(frozen, signal.SIGCONT)

    await until(lambda: add in mounted.names(), timeout=_NEVER)
    assert mounted.sources.status()[0]["state"] == "connected"
    assert (await mounted.outcome(add, {"a": 1, "b": 2})).result == {"result": 3}
    if transport == "stdio":
        assert frozen not in children()  # a new process: the frozen one was not left behind


async def test_a_call_on_its_own_connection_to_a_frozen_server_ends_at_its_timeout(
    mount: Mount, http_server: HttpServer
) -> None:
    # A server with per-user headers is called on a connection of the call's own. The
    # tool's timeout cut the call, then closing that connection waited for the server's
    # answer to the DELETE: the run hung for minutes with no tool result.
    config = http_config(
        http_server, handshake="legacy", user_headers=HEADERS, timeout=2, connect_timeout=3
    )
    mounted = await mount(config, forwarder=_forwarder())
    assert http_server.proc is not None
    shared = connections_to(http_server.port)
    call = asyncio.ensure_future(mounted.outcome("web__slow", {"seconds": 10}))
    await until(lambda: connections_to(http_server.port) > shared)  # the call's own
    await asyncio.sleep(0.5)  # its handshake done, the call sent

    os.kill(http_server.proc.pid, signal.SIGSTOP)
    try:
        outcome = await asyncio.wait_for(call, _NEVER)
        assert outcome.status == "error"
        assert outcome.result["error"] == "The tool `web__slow` timed out after 2s."
        await until(lambda: connections_to(http_server.port) == shared)  # its own closed
    finally:
        os.kill(http_server.proc.pid, signal.SIGCONT)


async def _with_own_connections(mount: Mount, server: HttpServer, handshake: str) -> Mounted:
    """The server mounted with per-user headers: each call on a connection of its own."""
    config = http_config(server, handshake=handshake, user_headers=HEADERS)
    mounted: Mounted = await mount(config, forwarder=_forwarder())
    return mounted


@pytest.mark.parametrize("handshake", ["auto", "legacy"])
async def test_a_call_on_its_own_connection_reads_the_servers_own_error(
    mount: Mount, http_server: HttpServer, handshake: str
) -> None:
    # The call's failure crossed the SDK's task groups, which wrap it: the model read
    # "failed unexpectedly" instead of the server's message.
    mounted = await _with_own_connections(mount, http_server, handshake)

    outcome = await mounted.outcome("web__fail", {"reason": "no such file"})

    assert outcome.status == "error"
    assert "no such file" in outcome.result["error"]


@pytest.mark.parametrize("handshake", ["auto", "legacy"])
async def test_a_server_that_drops_a_calls_own_connection_is_an_error_naming_it(
    mount: Mount, http_server: HttpServer, handshake: str
) -> None:
    mounted = await _with_own_connections(mount, http_server, handshake)

    outcome = await asyncio.wait_for(mounted.outcome("web__die", {}), _NEVER)

    assert outcome.status == "error"
    assert outcome.result["error"].startswith("The MCP server `web` went away")
    await until(lambda: connections_to(http_server.port) == 0)  # nothing left open
