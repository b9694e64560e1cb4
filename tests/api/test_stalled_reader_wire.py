"""A stream's reader that stops reading (its TCP window full) holds the server's memory
within the transport's buffer, does not hold up its run (which ends and is stored for
every other reader), and is let go of once it has taken nothing for
`STREAM_SEND_TIMEOUT_SECONDS`: its connection was kept for as long as the client held
its socket open, since closing a transport waits for its buffer to be read. Over real
HTTP on loopback, from a raw socket that reads the answer's first bytes and then nothing,
the app started by the server as in production (its lifespan tells the protocol the
timeout); the timeout is tiny, and nothing here measures time."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
import uvicorn

from app.api.http_protocol import LeanHttpToolsProtocol
from app.domain.stream import ModelRequest, ProviderEvent
from app.main import create_app
from app.providers.scripted import Script, ScriptedProvider, ScriptedTurn
from app.settings import Settings
from tests.support import loopback

BOUND = 30  # the test fails (rather than hangs) if the server never lets go
ANSWER = "word " * 20_000  # ~100 KB of text, far more than the socket buffers take


@asynccontextmanager
async def _served(
    settings: Settings, model: ScriptedProvider | None = None
) -> AsyncIterator[tuple[uvicorn.Server, int]]:
    """The app behind the server; `model` (default: the scripted `ANSWER`) answers."""
    if model is None:
        script = Script(mode="sequence", turns=[ScriptedTurn(text=ANSWER)])
        model = ScriptedProvider(script, delay_ms=0)
    app = create_app(settings)
    async with loopback.serving(app, http=LeanHttpToolsProtocol, lifespan="on") as served:
        app.state.services.providers["scripted"] = model
        yield served


async def _stop_reading(port: int, path: str, body: dict[str, Any]) -> socket.socket:
    """A request whose answer's first bytes are read, and then nothing more."""
    loop = asyncio.get_running_loop()
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    await loop.sock_connect(sock, ("127.0.0.1", port))
    data = json.dumps(body).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: test\r\nAccept: text/event-stream\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
    )
    await loop.sock_sendall(sock, head.encode() + data)
    assert (await loop.sock_recv(sock, 12)).startswith(b"HTTP/1.1 200")
    return sock


async def _let_go(server: uvicorn.Server, sock: socket.socket) -> bool:
    """Whether the server lets go of the connection of `sock` (within the bound)."""
    client = tuple(sock.getsockname())  # the server's view of the client: (host, port)
    connections = server.server_state.connections

    async def gone() -> None:
        while any(getattr(c, "client", None) == client for c in connections):
            await asyncio.sleep(0.05)

    try:
        await asyncio.wait_for(gone(), BOUND)
    except TimeoutError:
        return False
    return True


async def test_a_turn_whose_reader_stops_reading_is_stored_and_the_reader_let_go(
    app_settings: Settings,
) -> None:
    settings = app_settings.model_copy(update={"stream_send_timeout_seconds": 0.5})
    async with (
        _served(settings) as (server, port),
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=BOUND) as client,
    ):
        cid = (await client.post("/api/conversations", json={"title": "t"})).json()["id"]
        sock = await _stop_reading(port, f"/api/conversations/{cid}/messages", {"content": "Hi"})
        released = await _let_go(server, sock)
        sock.close()
        for _ in range(BOUND * 20):  # the run, not its stalled reader, decides when it ends
            conversation = (await client.get(f"/api/conversations/{cid}")).json()
            if len(conversation["messages"]) == 2:
                break
            await asyncio.sleep(0.05)

    assert released
    answer = conversation["messages"][1]
    assert answer["content"] == [{"type": "text", "data": {"text": ANSWER}}]
    assert "status" not in answer["metadata"]  # complete, not cut short


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/api/chat"])
async def test_a_stateless_stream_whose_reader_stops_reading_lets_it_go(
    app_settings: Settings, path: str, caplog: pytest.LogCaptureFixture
) -> None:
    settings = app_settings.model_copy(update={"stream_send_timeout_seconds": 0.5})
    body = {"model": "scripted", "stream": True, "messages": [{"role": "user", "content": "Hi"}]}
    async with _served(settings) as (server, port):
        sock = await _stop_reading(port, path, body)
        released = await _let_go(server, sock)
        sock.close()
        for _ in range(BOUND * 20):  # the request's task ends once its client is gone
            if not server.server_state.tasks:
                break
            await asyncio.sleep(0.05)
        tasks_left = len(server.server_state.tasks)

    assert released
    assert tasks_left == 0
    # A client that stops reading is no fault of the service's: no error, no traceback.
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


class _Endless(ScriptedProvider):
    """The scripted answer, fast, and then a model that never finishes: the run is still
    going when its reader is dropped. `closed`: the model call was stopped."""

    def __init__(self) -> None:
        script = Script(mode="sequence", turns=[ScriptedTurn(text=ANSWER)])
        super().__init__(script, delay_ms=0)
        self.closed = asyncio.Event()

    async def stream(self, request: ModelRequest) -> AsyncGenerator[ProviderEvent, None]:
        try:
            async for event in super().stream(request):
                yield event
            await asyncio.Event().wait()
        finally:
            self.closed.set()


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/api/chat"])
async def test_a_stateless_run_whose_reader_is_dropped_is_cancelled_as_on_a_hang_up(
    app_settings: Settings, path: str
) -> None:
    """`on_disconnect=cancel` (the default): a reader dropped for taking nothing is gone
    as surely as one that hung up, and nobody else can read a stateless run."""
    settings = app_settings.model_copy(update={"stream_send_timeout_seconds": 0.5})
    body = {"model": "scripted", "stream": True, "messages": [{"role": "user", "content": "Hi"}]}
    model = _Endless()
    async with _served(settings, model) as (server, port):
        sock = await _stop_reading(port, path, body)
        released = await _let_go(server, sock)
        sock.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(model.closed.wait(), BOUND)
        stopped = model.closed.is_set()  # before the server's shutdown stops every run

    assert released
    assert stopped
