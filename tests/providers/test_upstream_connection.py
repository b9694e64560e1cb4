"""The HTTP/1.1 connection under the upstream pool (`app.providers.connection`): a request
leaves in one write, and a body comes up one network read at a time, byte for byte."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager, suppress
from typing import Any

import httpcore2
import httpx2
import pytest

from app.providers.transport import UpstreamPool
from tests.fakes.openai_upstream import Completion, FakeOpenAIUpstream


class _RecordingStream(httpcore2.AsyncNetworkStream):
    def __init__(self, inner: httpcore2.AsyncNetworkStream, writes: list[bytes]) -> None:
        self._inner = inner
        self._writes = writes

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._inner.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if buffer:
            self._writes.append(buffer)
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class RecordingBackend(httpcore2.AsyncNetworkBackend):
    """httpcore's own network backend, noting every write the connection makes."""

    def __init__(self) -> None:
        self._inner = httpcore2.AnyIOBackend()
        self.writes: list[bytes] = []

    async def connect_tcp(self, *args: Any, **kwargs: Any) -> httpcore2.AsyncNetworkStream:
        return _RecordingStream(await self._inner.connect_tcp(*args, **kwargs), self.writes)

    async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore2.AsyncNetworkStream:
        raise NotImplementedError

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def client(backend: httpcore2.AsyncNetworkBackend | None = None) -> httpx2.AsyncClient:
    pool = UpstreamPool(max_connections=4, max_keepalive_connections=4, network_backend=backend)
    return httpx2.AsyncClient(transport=pool, timeout=httpx2.Timeout(5))


async def test_a_request_with_a_body_leaves_in_one_write(
    openai_upstream: FakeOpenAIUpstream,
) -> None:
    openai_upstream.enqueue(Completion(text="one"), Completion(text="two"))
    backend = RecordingBackend()
    body = {"model": "m", "messages": [{"role": "user", "content": "Hi"}], "stream": False}
    async with client(backend) as http:
        url = openai_upstream.base_url + "/chat/completions"
        answers = [await http.post(url, json=body) for _ in range(2)]
    assert [a.status_code for a in answers] == [200, 200]
    assert len(backend.writes) == 2  # one per request, on one kept-alive connection
    for write in backend.writes:
        head, _, sent = write.partition(b"\r\n\r\n")
        assert head.startswith(b"POST /v1/chat/completions HTTP/1.1")
        assert sent == answers[0].request.content
    assert openai_upstream.request_bodies() == [body, body]


async def test_a_request_without_a_body_is_sent_whole_and_answered(
    openai_upstream: FakeOpenAIUpstream,
) -> None:
    openai_upstream.enqueue(Completion(text="unused"))
    backend = RecordingBackend()
    async with client(backend) as http:
        answer = await http.get(openai_upstream.base_url + "/models")
    assert answer.status_code == 404  # the fake upstream's answer: the request reached it
    assert len(backend.writes) == 1
    assert backend.writes[0].startswith(b"GET /v1/models HTTP/1.1")
    assert backend.writes[0].endswith(b"\r\n\r\n")


async def test_every_request_sends_the_heads_lines_as_the_first_one_did(
    openai_upstream: FakeOpenAIUpstream,
) -> None:
    """Lines already checked once go out the same; a new length, a new header too."""
    openai_upstream.enqueue(*(Completion(text=t) for t in ("a", "b", "c")))
    backend = RecordingBackend()
    bodies = [
        {"model": "m", "messages": [{"role": "user", "content": c}]} for c in ("x", "x", "xy")
    ]
    async with client(backend) as http:
        url = openai_upstream.base_url + "/chat/completions"
        await http.post(url, json=bodies[0])
        await http.post(url, json=bodies[1])
        await http.post(url, json=bodies[2], headers={"X-Extra": "1"})
    heads = [w.partition(b"\r\n\r\n")[0] for w in backend.writes]
    assert heads[0] == heads[1]
    assert heads[2].lower().count(b"content-length:") == 1
    assert heads[2].count(b"\r\n") == heads[0].count(b"\r\n") + 1
    assert openai_upstream.request_bodies() == bodies


@pytest.mark.parametrize(
    "headers",
    [
        {"X-Evil": "a\x00b"},  # no line h11 refuses is sent, whatever went before it
        {"Transfer-Encoding": "gzip"},
    ],
)
async def test_a_head_h11_refuses_is_refused_after_good_ones(
    openai_upstream: FakeOpenAIUpstream, headers: dict[str, str]
) -> None:
    openai_upstream.enqueue(Completion(text="one"))
    backend = RecordingBackend()
    body = {"model": "m", "messages": [{"role": "user", "content": "Hi"}]}
    async with client(backend) as http:
        url = openai_upstream.base_url + "/chat/completions"
        assert (await http.post(url, json=body)).status_code == 200
        request = http.build_request("POST", url, json=body)
        for name, value in headers.items():
            request.headers[name] = value
        with pytest.raises(httpx2.LocalProtocolError):
            await http.send(request)
    assert len(backend.writes) == 1


@asynccontextmanager
async def raw_server(
    respond: Callable[[asyncio.StreamWriter], Awaitable[None]], *, connections: int = 1
) -> AsyncIterator[str]:
    """An HTTP/1.1 server whose answers are written by `respond`, byte for byte."""
    accepted: list[asyncio.StreamWriter] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.lower().split(b"\r\n")
                        if line.startswith(b"content-length:")
                    ),
                    0,
                )
                await reader.readexactly(length)
                await respond(writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()
        for writer in accepted:
            writer.close()
            with suppress(ConnectionError):
                await writer.wait_closed()
    assert len(accepted) == connections  # 1: every request on one, it stayed reusable


def chunked(pieces: Iterable[bytes]) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"


HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
FRAMES = [b'data: {"n": %d}\n\n' % n for n in range(20)]


async def test_chunks_that_arrive_in_one_read_come_up_as_one_piece_with_the_same_bytes() -> None:
    async def respond(writer: asyncio.StreamWriter) -> None:
        writer.write(HEAD + chunked(FRAMES))  # one write: one read on the client's side
        await writer.drain()

    async with raw_server(respond) as url, client() as http:
        for _ in range(2):
            async with http.stream("POST", url, json={}) as response:
                pieces = [piece async for piece in response.aiter_raw()]
            assert pieces == [b"".join(FRAMES)]


async def test_a_chunk_comes_up_as_soon_as_it_arrives_while_the_rest_is_awaited() -> None:
    release = asyncio.Event()

    async def respond(writer: asyncio.StreamWriter) -> None:
        writer.write(HEAD + b"%x\r\n%s\r\n" % (len(FRAMES[0]), FRAMES[0]))
        await writer.drain()
        await release.wait()
        writer.write(chunked(FRAMES[1:]))
        await writer.drain()

    async with raw_server(respond) as url, client() as http:
        async with http.stream("POST", url, json={}) as response:
            pieces = response.aiter_raw()
            first = await asyncio.wait_for(anext(pieces), 2)  # not held for the rest
            release.set()
            rest = [piece async for piece in pieces]
        assert first == FRAMES[0]
        assert b"".join(rest) == b"".join(FRAMES[1:])


async def test_a_chunked_answer_saying_connection_close_is_not_followed_on_its_connection() -> None:
    closing = HEAD.replace(b"\r\n\r\n", b"\r\nconnection: close\r\n\r\n")

    async def respond(writer: asyncio.StreamWriter) -> None:
        writer.write(closing + chunked(FRAMES))
        await writer.drain()

    async with raw_server(respond, connections=2) as url, client() as http:
        for _ in range(2):
            async with http.stream("POST", url, json={}) as response:
                assert b"".join([p async for p in response.aiter_raw()]) == b"".join(FRAMES)


async def test_a_chunked_body_cut_short_is_a_protocol_error() -> None:
    async def respond(writer: asyncio.StreamWriter) -> None:
        writer.write(HEAD + chunked(FRAMES)[:-20])
        await writer.drain()
        writer.close()

    async with (
        raw_server(respond) as url,
        client() as http,
        http.stream("POST", url, json={}) as response,
    ):
        with pytest.raises(httpx2.RemoteProtocolError, match="incomplete chunked read"):
            async for _ in response.aiter_raw():
                pass
