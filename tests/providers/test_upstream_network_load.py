"""The upstream sockets (`app.providers.network`) on a worker short of CPU and with bodies
larger than the buffers: a connect that keeps within its timeout while every event-loop
turn is slow, answers and requests of megabytes both ways, a host name."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import httpx2
import pytest

from app.providers.transport import UpstreamPool

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def client(timeout: httpx2.Timeout | None = None) -> httpx2.AsyncClient:
    pool = UpstreamPool(max_connections=4, max_keepalive_connections=4)
    return httpx2.AsyncClient(transport=pool, timeout=timeout or httpx2.Timeout(10))


async def read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        (
            int(line.split(b":")[1])
            for line in head.lower().split(b"\r\n")
            if line.startswith(b"content-length:")
        ),
        0,
    )
    return await reader.readexactly(length)


def answer(body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)


@asynccontextmanager
async def server(handle: Handler) -> AsyncIterator[int]:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await handle(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    listener = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield listener.sockets[0].getsockname()[1]
    finally:
        listener.close()


async def echo_length(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    body = await read_request(reader)
    writer.write(answer(b"%d" % len(body)))
    await writer.drain()


def test_a_connect_keeps_within_its_timeout_while_every_event_loop_turn_is_slow() -> None:
    """A worker short of CPU turns its loop slowly (5,000 streams opening on a third of a
    core): the connect must not need many turns. anyio's happy-eyeballs connect took five
    even for one literal address, 1.5 s here, and timed out."""
    uvloop = pytest.importorskip("uvloop")

    async def scenario() -> int:
        loop = asyncio.get_running_loop()
        slow = True

        def slow_turn() -> None:  # every turn of the loop takes 0.3 s
            time.sleep(0.3)
            if slow:
                loop.call_soon(slow_turn)

        async with server(echo_length) as port, client(httpx2.Timeout(30, connect=1.0)) as http:
            loop.call_soon(slow_turn)
            try:
                response = await http.post(f"http://127.0.0.1:{port}/", content=b"four")
            finally:
                slow = False
            return int(response.text)

    assert uvloop.run(scenario()) == 4


async def test_an_answer_larger_than_the_read_buffer_arrives_whole_while_read_slowly() -> None:
    body = bytes(range(256)) * 8192  # 2 MB: reading pauses and resumes on the way

    async def big(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(answer(body))
        await writer.drain()

    async with server(big) as port, client() as http:
        async with http.stream("GET", f"http://127.0.0.1:{port}/") as response:
            received = bytearray()
            async for piece in response.aiter_raw():
                received += piece
                await asyncio.sleep(0.001)
        assert bytes(received) == body


async def test_a_request_larger_than_the_send_buffer_is_sent_whole() -> None:
    body = b"x" * (8 * 1024 * 1024)  # more than the kernel takes at once: the write waits

    async with server(echo_length) as port, client() as http:
        response = await http.post(f"http://127.0.0.1:{port}/", content=body)
    assert response.text == str(len(body))


async def test_a_host_name_is_resolved_and_connected_to() -> None:
    async with server(echo_length) as port, client() as http:
        response = await http.post(f"http://localhost:{port}/", content=b"abc")
    assert response.text == "3"
