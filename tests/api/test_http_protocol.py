"""The server's HTTP protocol (`--http app.api.http_protocol:LeanHttpToolsProtocol`, as
the image and `dev.py serve` run uvicorn): the same bytes on the wire as uvicorn's own
httptools protocol, for a stream, pipelined requests and a client that hangs up, while
an open connection holds none of the deques uvicorn's makes up front (~2.3 KB each
connection)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
from collections import deque
from collections.abc import AsyncIterator, MutableMapping
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from app.api.http_protocol import SERVER_TABLES, LeanHttpToolsProtocol, ServerTables
from tests.support import loopback

PROTOCOLS: dict[str, type[asyncio.Protocol]] = {
    "uvicorn": HttpToolsProtocol,
    "lean": LeanHttpToolsProtocol,
}


class StreamingApp:
    """`/stream` sends one event, then waits for the client to hang up; anything else
    answers with its path at once."""

    def __init__(self) -> None:
        self.disconnected = asyncio.Event()
        self.streaming = asyncio.Event()

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        start = {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"text/event-stream"),
                (b"x-path", scope["path"].encode()),
            ],
        }
        await send(start)
        if scope["path"] != "/stream":
            await send({"type": "http.response.body", "body": scope["path"].encode()})
            return
        await send({"type": "http.response.body", "body": b"data: one\n\n", "more_body": True})
        self.streaming.set()
        while (await receive())["type"] != "http.disconnect":
            pass
        self.disconnected.set()


@contextlib.asynccontextmanager
async def serving(
    protocol: type[asyncio.Protocol], app: StreamingApp
) -> AsyncIterator[tuple[uvicorn.Server, int]]:
    async with loopback.serving(app, http=protocol, date_header=False) as served:
        yield served


async def _read_until(reader: asyncio.StreamReader, marker: bytes, times: int = 1) -> bytes:
    got = b""
    while got.count(marker) < times:
        piece = await asyncio.wait_for(reader.read(4096), 10)
        assert piece, got
        got += piece
    return got


def _deques_held(protocol: object) -> int:
    """Deques reachable from the connection's protocol through its attributes (and theirs:
    the request cycle, the flow control, their events), not through the app, the server
    or the transport (the event loop's)."""
    seen: set[int] = set()
    found = 0
    todo: list[tuple[object, int]] = [(protocol, 0)]
    while todo:
        obj, depth = todo.pop()
        if id(obj) in seen or depth > 4:
            continue
        seen.add(id(obj))
        if isinstance(obj, deque):
            found += 1
            continue
        holder = getattr(obj, "__dict__", None)
        slots = [getattr(obj, name, None) for name in getattr(type(obj), "__slots__", ())]
        children = list(holder.values()) if isinstance(holder, dict) else []
        children += slots
        if isinstance(obj, list | tuple):
            children += list(obj)
        for child in children:
            ours = type(child).__module__.startswith(("uvicorn.protocols", "app.api"))
            if ours or isinstance(child, asyncio.Event | deque | list | tuple):
                todo.append((child, depth + 1))
    return found


async def _stream_then_hang_up(name: str) -> tuple[bytes, int]:
    app = StreamingApp()
    async with serving(PROTOCOLS[name], app) as (server, port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /stream HTTP/1.1\r\nhost: t\r\n\r\n")
        got = await _read_until(reader, b"data: one\n\n")
        await asyncio.wait_for(app.streaming.wait(), 10)
        gc.collect()
        (connection,) = server.server_state.connections
        held = _deques_held(connection)
        writer.close()
        await asyncio.wait_for(app.disconnected.wait(), 10)  # the app hears the hang-up
    return got, held


async def test_a_stream_is_sent_as_uvicorn_sends_it_and_its_hang_up_reaches_the_app() -> None:
    theirs, held_by_theirs = await _stream_then_hang_up("uvicorn")
    ours, held_by_ours = await _stream_then_hang_up("lean")
    assert ours == theirs
    assert ours.startswith(b"HTTP/1.1 200 OK\r\n")
    assert held_by_theirs == 3  # the pipeline and two events' waiters: what this saves
    assert held_by_ours == 0


async def test_pipelined_requests_are_answered_in_order() -> None:
    answers = {}
    for name, protocol in PROTOCOLS.items():
        async with serving(protocol, StreamingApp()) as (_, port):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"".join(f"GET /{n} HTTP/1.1\r\nhost: t\r\n\r\n".encode() for n in "abc"))
            answers[name] = await _read_until(reader, b"\r\n0\r\n\r\n", times=3)
            writer.close()
    assert answers["lean"] == answers["uvicorn"]
    assert [line for line in answers["lean"].split(b"\r\n") if line.startswith(b"x-path")] == [
        b"x-path: /a",
        b"x-path: /b",
        b"x-path: /c",
    ]


def _app_with_tables() -> tuple[FastAPI, ServerTables]:
    """An app whose lifespan puts its `ServerTables` in its state, as the service's does."""
    tables = ServerTables()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[dict[str, Any]]:
        yield {SERVER_TABLES: tables}

    return FastAPI(lifespan=lifespan), tables


async def _kept_alive(port: int) -> asyncio.StreamWriter:
    """A connection that has had one answer and stays open (HTTP/1.1 keep-alive)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /none HTTP/1.1\r\nhost: t\r\n\r\n")
    await _read_until(reader, b"Not Found")
    return writer


async def test_each_app_is_given_the_connections_of_the_server_it_runs_in() -> None:
    first_app, first_tables = _app_with_tables()
    second_app, second_tables = _app_with_tables()
    lean = LeanHttpToolsProtocol
    async with (
        loopback.serving(first_app, http=lean, lifespan="on") as (first, first_port),
        loopback.serving(second_app, http=lean, lifespan="on") as (second, second_port),
    ):
        writers = [await _kept_alive(first_port), await _kept_alive(second_port)]
        for server, tables in ((first, first_tables), (second, second_tables)):
            (connections, tasks) = tables()
            assert connections is server.server_state.connections
            assert tasks is server.server_state.tasks
            assert len(connections) == 1
        for writer in writers:
            writer.close()


async def test_under_uvicorn_protocol_an_app_is_given_no_server_connections() -> None:
    app, tables = _app_with_tables()
    async with loopback.serving(app, http=HttpToolsProtocol, lifespan="on") as (_, port):
        writer = await _kept_alive(port)
        assert tables() == []
        writer.close()


@pytest.mark.parametrize(
    "request_bytes",
    [
        "GET /api/conversations?q=straße HTTP/1.1\r\nhost: t\r\n\r\n".encode(),
        b"GET /api/models HTTP/1.1\r\nhost: t\r\nno colon here\r\n\r\n",
        b"POST /api/chat HTTP/1.1\r\nhost: t\r\ncontent-length: 5\r\n"
        b"transfer-encoding: chunked\r\n\r\n0\r\n\r\n",
    ],
    ids=["raw-utf8-in-url", "malformed-header", "length-and-chunked"],
)
async def test_a_request_the_parser_refuses_is_a_400_with_the_json_error_body(
    request_bytes: bytes,
) -> None:
    async with serving(LeanHttpToolsProtocol, StreamingApp()) as (_, port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(request_bytes)
        answer = await asyncio.wait_for(reader.read(), 10)  # the server closes
        writer.close()

    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ")
    assert b"content-type: application/json" in head.lower()
    assert json.loads(body)["error"]["code"] == "invalid_request"
