"""A client that declares a body and then sends it a byte at a time, or stops sending,
gets 408 `request_timeout` once `REQUEST_BODY_TIMEOUT_SECONDS` has passed, and its
connection is closed: it no longer holds the connection and a request task for ever. The
route never runs, so nothing is stored. A body over the cap is read and dropped before
its 413 within the same deadline. Over real HTTP on loopback, from a raw socket, as the
server runs; the deadline is tiny, and nothing here measures time."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from app.api.http_protocol import LeanHttpToolsProtocol
from app.main import create_app
from app.settings import Settings
from tests.fakes.db import MakeApi
from tests.support import loopback

BOUND = 30  # the test fails (rather than hangs) if an answer never comes
CAP = 64 * 1024
TURN = b'{"model": "scripted", "messages": [{"role": "user", "content": "hel'


def _tiny(settings: Settings, **update: Any) -> Settings:
    """Deadlines short enough that a test waits a fraction of a second for them."""
    fast = {"request_body_timeout_seconds": 0.3, "upload_timeout_seconds": 0.2}
    return settings.model_copy(update={**fast, **update})


@asynccontextmanager
async def _served(
    make_api: MakeApi, settings: Settings
) -> AsyncIterator[tuple[httpx.AsyncClient, int]]:
    async with (
        make_api(settings) as api,
        loopback.serving(api.app, http=LeanHttpToolsProtocol) as (_, port),
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=BOUND) as client,
    ):
        yield client, port


def _head(path: str, length: int | None, method: str = "POST") -> bytes:
    framing = "Transfer-Encoding: chunked" if length is None else f"Content-Length: {length}"
    return (
        f"{method} {path} HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
        f"{framing}\r\n\r\n"
    ).encode()


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


class Answer:
    def __init__(self, status: int, headers: dict[str, str], body: bytes, closed: bool):
        self.status, self.headers, self.body, self.closed = status, headers, body, closed

    def error(self) -> dict[str, Any]:
        error: dict[str, Any] = json.loads(self.body)["error"]
        return error


async def _read_answer(reader: asyncio.StreamReader) -> Answer:
    status = int((await reader.readline()).split()[1])
    headers: dict[str, str] = {}
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers["content-length"]))
    try:
        closed = await reader.read(1) == b""
    except ConnectionResetError:  # a trickled byte that reached the closed socket
        closed = True
    return Answer(status, headers, body, closed)


async def _send(
    port: int, opening: bytes, *, trickle: bytes | None = None, every: float = 0.02
) -> Answer:
    """`opening` sent at once, then `trickle` over and over (or nothing more) until the
    server answers; the answer, and whether the server closed the connection after it."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)

    async def dribble() -> None:
        while trickle is not None:
            await asyncio.sleep(every)
            writer.write(trickle)
            await writer.drain()

    writer.write(opening)
    await writer.drain()
    sender = asyncio.create_task(dribble())
    try:
        return await asyncio.wait_for(_read_answer(reader), BOUND)
    finally:
        sender.cancel()
        await asyncio.gather(sender, return_exceptions=True)
        writer.close()


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/responses", "/api/chat"])
async def test_a_body_that_stops_arriving_is_408_and_the_connection_closed(
    make_api: MakeApi, app_settings: Settings, path: str, chunked: bool
) -> None:
    body = TURN.replace(b"messages", b"input") if path == "/v1/responses" else TURN
    opening = _head(path, None) + _chunk(body) if chunked else _head(path, 4096) + body

    async with _served(make_api, _tiny(app_settings)) as (client, port):
        answer = await _send(port, opening)
        healthy = await client.get("/healthz")

    assert answer.status == 408
    assert answer.closed
    assert answer.headers["connection"] == "close"
    assert answer.error()["code"] == "request_timeout"
    if path.startswith("/v1/"):  # OpenAI's shape, so its SDK reads the error
        assert set(answer.error()) == {"message", "type", "param", "code"}
    assert healthy.status_code == 200


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
async def test_a_body_sent_a_byte_at_a_time_is_408_once_its_deadline_passes(
    make_api: MakeApi, app_settings: Settings, chunked: bool
) -> None:
    """Every byte restarted no clock: the deadline counts from the request's start."""
    path = "/v1/chat/completions"
    opening = _head(path, None) + _chunk(TURN) if chunked else _head(path, 1 << 20) + TURN
    trickle = _chunk(b"l") if chunked else b"l"

    async with _served(make_api, _tiny(app_settings)) as (_, port):
        answer = await _send(port, opening, trickle=trickle)

    assert answer.status == 408
    assert answer.closed
    assert answer.error() == {
        "message": "The request body did not arrive within 0.5 s.",
        "type": "invalid_request_error",
        "param": None,
        "code": "request_timeout",
    }


async def test_a_turn_whose_body_stalls_stores_nothing(
    make_api: MakeApi, app_settings: Settings
) -> None:
    settings = _tiny(app_settings, cors_origins=["https://chat.example.com"])
    async with _served(make_api, settings) as (client, port):
        created = (await client.post("/api/conversations", json={"title": "t"})).json()
        path = f"/api/conversations/{created['id']}/messages"
        stalled = await _send(port, _head(path, 4096) + b'{"content": "hel', trickle=b"l")
        renamed = await _send(
            port, _head(f"/api/conversations/{created['id']}", 4096, "PATCH") + b'{"title": "x'
        )
        conversation = (await client.get(f"/api/conversations/{created['id']}")).json()

    assert (stalled.status, renamed.status) == (408, 408)
    assert stalled.error() == {
        "code": "request_timeout",
        "message": "The request body did not arrive within 0.3 s.",
    }
    assert conversation["title"] == "t"
    assert conversation["messages"] == []


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
async def test_a_body_over_the_cap_sent_slowly_is_413_once_its_deadline_passes(
    make_api: MakeApi, app_settings: Settings, chunked: bool
) -> None:
    """The refused body is read and dropped before the 413 (so a client still sending
    reads it), but not for longer than any body may take."""
    settings = _tiny(app_settings, max_body_bytes=CAP)
    path = "/api/conversations"
    start = b'{"title": "' + b"a" * 1024
    if chunked:  # past the cap, then more and more slowly
        opening, trickle = _head(path, None) + _chunk(start + b"a" * CAP), _chunk(b"a")
    else:  # declared past the cap, well under the 64 MiB read and dropped
        opening, trickle = _head(path, 4 * CAP) + start, b"a"

    async with _served(make_api, settings) as (client, port):
        answer = await _send(port, opening, trickle=trickle)
        listed = (await client.get("/api/conversations")).json()

    assert answer.status == 413
    assert answer.closed
    assert answer.error()["code"] == "payload_too_large"
    assert listed["data"] == []


async def test_an_upload_that_stalls_before_its_file_is_408(
    make_api: MakeApi, app_settings: Settings
) -> None:
    """The upload's own deadline counts from its file's first byte; before it, the body's
    deadline (with the upload's time added, as for every route that carries files)."""
    opening = (
        b"POST /api/files HTTP/1.1\r\nHost: test\r\nContent-Length: 4096\r\n"
        b"Content-Type: multipart/form-data; boundary=b0undary\r\n\r\n"
        b'--b0undary\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nchat'
    )

    settings = _tiny(app_settings)
    async with _served(make_api, settings) as (_, port):
        answer = await _send(port, opening)

    assert answer.status == 408
    assert answer.closed
    assert answer.error() == {
        "code": "request_timeout",
        "message": "The request body did not arrive within 0.5 s.",
    }
    files = settings.files_dir
    assert not files.exists() or not [p for p in files.rglob("*") if p.is_file()]


async def test_a_followed_stream_whose_request_declared_a_body_outlives_the_deadline(
    make_api: MakeApi, app_settings: Settings
) -> None:
    """No route reads the body of a GET: a stream's watcher waits on it for as long as the
    stream is open, so the body's deadline would cut the stream (an unhandled error) once
    it passed. The follow stream is still open after it, and tells the next run."""
    async with _served(make_api, _tiny(app_settings)) as (client, port):
        created = (await client.post("/api/conversations", json={"title": "t"})).json()
        path = f"/api/conversations/{created['id']}/events"
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(_head(path, 5, "GET"))  # a body declared, never sent
        await writer.drain()
        try:
            seen = await asyncio.wait_for(reader.readuntil(b"event: follow"), BOUND)
            # A body stalled after the follow began is refused once its deadline (no
            # longer than the follow's) passed: the follow's has passed too.
            stalled = await _send(port, _head("/api/conversations", 4096) + b'{"title": "')
            sent = await client.post(
                f"/api/conversations/{created['id']}/messages", json={"content": "hello"}
            )
            seen += await asyncio.wait_for(reader.readuntil(b"event: run_end"), BOUND)
        finally:
            writer.close()

    assert stalled.status == 408
    assert sent.status_code in (200, 202)
    assert b"event: message_added" in seen


# --- the request's head -------------------------------------------------------------------


def _head_tiny(settings: Settings) -> Settings:
    return _tiny(settings, request_headers_timeout_seconds=0.3)


@asynccontextmanager
async def _started(settings: Settings) -> AsyncIterator[tuple[httpx.AsyncClient, int]]:
    """The app started by the server, as in production: its lifespan tells the protocol
    the head's deadline."""
    app = create_app(settings)
    async with (
        loopback.serving(app, http=LeanHttpToolsProtocol, lifespan="on") as (_, port),
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=BOUND) as client,
    ):
        yield client, port


async def _closed_without_answer(reader: asyncio.StreamReader) -> bool:
    try:
        return await asyncio.wait_for(reader.read(1), BOUND) == b""
    except ConnectionResetError:
        return True


async def test_a_connection_that_sends_nothing_is_closed(app_settings: Settings) -> None:
    """A client that opens connections and sends nothing (a slowloris) no longer holds
    them for ever: each is closed, with nothing written, as an idle kept-alive one is."""
    async with _started(_head_tiny(app_settings)) as (client, port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        closed = await _closed_without_answer(reader)
        writer.close()
        healthy = await client.get("/healthz")

    assert closed
    assert healthy.status_code == 200


@pytest.mark.parametrize("kept_alive", [False, True], ids=["first-request", "kept-alive"])
async def test_a_head_sent_a_byte_at_a_time_is_408_and_the_connection_closed(
    app_settings: Settings, kept_alive: bool
) -> None:
    """Headers that never end: 408 `request_timeout` in the JSON error body, also for the
    second request of a kept-alive connection, every byte restarting no clock."""
    head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: test\r\n"
    async with _started(_head_tiny(app_settings)) as (_, port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        if kept_alive:
            writer.write(b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
            first = await asyncio.wait_for(_read_answer_open(reader), BOUND)
            assert first == 200
        writer.write(head)

        async def dribble() -> None:
            while True:
                await asyncio.sleep(0.02)
                writer.write(b"X-Slow: 1\r\n")
                await writer.drain()

        sender = asyncio.create_task(dribble())
        try:
            answer = await asyncio.wait_for(_read_answer(reader), BOUND)
        finally:
            sender.cancel()
            await asyncio.gather(sender, return_exceptions=True)
            writer.close()

    assert answer.status == 408
    assert answer.closed
    assert answer.headers["content-type"] == "application/json"
    assert answer.error()["code"] == "request_timeout"
    assert set(answer.error()) == {"message", "type", "param", "code"}


async def _read_answer_open(reader: asyncio.StreamReader) -> int:
    """An answer's status, its body read, the connection left open for the next one."""
    status = int((await reader.readline()).split()[1])
    length = 0
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    await reader.readexactly(length)
    return status


async def test_a_request_whose_head_arrived_is_not_cut_by_the_head_deadline(
    app_settings: Settings,
) -> None:
    """The head's deadline ends with the head: a body that follows it later than that
    (within its own deadline) is answered."""
    settings = _tiny(app_settings, request_headers_timeout_seconds=0.2)
    settings = settings.model_copy(update={"request_body_timeout_seconds": 30.0})
    body = TURN + b'lo"}]}'
    async with _started(settings) as (_, port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(_head("/v1/chat/completions", len(body)))
        await writer.drain()
        await asyncio.sleep(0.6)
        writer.write(body)
        status = await asyncio.wait_for(_read_answer_open(reader), BOUND)
        writer.close()

    assert status == 200
