"""The upstream connections' sockets (`app.providers.network`): what httpcore's anyio
backend did (reads, timeouts, end of stream, TLS, keep-alive options), with less held by
an open stream parked in a read; and an open stream lets go of the request it sent."""

from __future__ import annotations

import asyncio
import datetime
import gc
import socket
import ssl
import types
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from pathlib import Path

import httpcore2
import httpx2
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from app.domain.messages import Message
from app.domain.stream import ModelRequest
from app.providers.network import LeanBackend
from app.providers.openai import OpenAIProvider
from app.providers.transport import UpstreamPool
from tests.providers.test_upstream_connection import raw_server

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
FRAME = b'data: {"n": 1}\n\n'


@asynccontextmanager
async def server(
    handle: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
    tls: ssl.SSLContext | None = None,
) -> AsyncIterator[int]:
    writers: list[asyncio.StreamWriter] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        with suppress(ConnectionError, asyncio.IncompleteReadError):
            await handle(reader, writer)

    srv = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=tls)
    try:
        yield srv.sockets[0].getsockname()[1]
    finally:
        srv.close()
        for writer in writers:
            writer.close()


async def head_then_silence(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.readuntil(b"\r\n\r\n")
    writer.write(HEAD + b"%x\r\n%s\r\n" % (len(FRAME), FRAME))
    await writer.drain()
    await reader.read()  # until the client closes


def pool() -> httpx2.AsyncClient:
    transport = UpstreamPool(max_connections=2, max_keepalive_connections=2)
    return httpx2.AsyncClient(transport=transport, timeout=httpx2.Timeout(5, read=0.3))


# Where the walk stops: what every connection shares, and the tasks waiting on it.
_SHARED = (type, types.ModuleType, types.FunctionType, types.FrameType, asyncio.Task)


def reachable(root: object) -> list[object]:
    """What a network stream holds of its own (not the loop, its transport, or tasks)."""
    seen: dict[int, object] = {}
    todo = [root]
    while todo:
        item = todo.pop()
        if id(item) in seen or isinstance(item, _SHARED):
            continue
        if isinstance(item, asyncio.AbstractEventLoop | asyncio.BaseTransport):
            continue
        seen[id(item)] = item
        todo.extend(gc.get_referents(item))
    return list(seen.values())


async def test_a_stream_parked_in_a_read_holds_no_waiter_queues_or_anyio_objects() -> None:
    async with server(head_then_silence) as port, pool() as http:
        url = f"http://127.0.0.1:{port}/"
        async with http.stream("POST", url, json={}) as response:
            pieces = response.aiter_raw()
            assert await anext(pieces) == FRAME
            reading = asyncio.ensure_future(anext(pieces))
            await asyncio.sleep(0.05)  # parked: the server sends nothing more
            held = reachable(response.extensions["network_stream"])
            # anyio's socket stream held two Events and a read queue (a 528-byte deque
            # block each) and its per-read cancel scope for as long as a stream was open.
            assert not [o for o in held if isinstance(o, deque)]
            assert not [o for o in held if type(o).__module__.startswith("anyio")]
            with pytest.raises(httpx2.ReadTimeout):
                await reading


async def read_all(http: httpx2.AsyncClient, port: int) -> bytes:
    async with http.stream("POST", f"http://127.0.0.1:{port}/", json={}) as response:
        return b"".join([piece async for piece in response.aiter_raw()])


async def test_a_silent_upstream_is_a_read_timeout_and_an_early_close_is_a_short_body() -> None:
    async def cut(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(HEAD + b"%x\r\n%s\r\n" % (len(FRAME), FRAME))
        await writer.drain()
        writer.close()

    async with server(head_then_silence) as port, pool() as http:
        with pytest.raises(httpx2.ReadTimeout):
            await read_all(http, port)
    async with server(cut) as port, pool() as http:
        with pytest.raises(httpx2.RemoteProtocolError):
            await read_all(http, port)


async def test_a_refused_connect_is_a_connect_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens there once closed
    async with pool() as http:
        with pytest.raises(httpx2.ConnectError):
            await http.get(f"http://127.0.0.1:{port}/")


async def test_upstream_sockets_get_the_keepalive_options() -> None:
    async with (
        server(head_then_silence) as port,
        pool() as http,
        http.stream("POST", f"http://127.0.0.1:{port}/", json={}) as response,
    ):
        sock = response.extensions["network_stream"].get_extra_info("socket")
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1


def self_signed(directory: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    server_side = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_side.load_cert_chain(cert_file, key_file)
    client_side = ssl.create_default_context(cafile=str(cert_file))
    return server_side, client_side


async def test_tls_is_started_on_the_connection_and_checks_the_certificate(tmp_path: Path) -> None:
    server_side, client_side = self_signed(tmp_path)

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(await reader.readexactly(5))
        await writer.drain()

    async with server(echo, tls=server_side) as port:
        backend = LeanBackend()
        stream = await backend.connect_tcp("127.0.0.1", port, timeout=5)
        secure = await stream.start_tls(client_side, server_hostname="localhost", timeout=5)
        assert secure.get_extra_info("ssl_object") is not None
        await secure.write(b"hello", timeout=5)
        assert await secure.read(100, timeout=5) == b"hello"
        await secure.aclose()

        plain = await backend.connect_tcp("127.0.0.1", port, timeout=5)
        with pytest.raises(httpcore2.ConnectError):  # a name the certificate does not carry
            await plain.start_tls(client_side, server_hostname="example.com", timeout=5)


CHUNK = (
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}'
    b"\n\n"
)


async def test_an_open_stream_keeps_nothing_of_the_request_it_sent() -> None:
    marker = "remember-me-" + "x" * 4000

    async def answer(writer: asyncio.StreamWriter) -> None:
        writer.write(HEAD + b"%x\r\n%s\r\n" % (len(CHUNK), CHUNK))
        await writer.drain()

    async with raw_server(answer) as url:
        provider = OpenAIProvider(
            api_key="sk-test-secret",
            base_url=f"{url}/v1",
            timeout=5,
            connect_timeout=2,
            max_retries=0,
        )
        request = ModelRequest(model="m", messages=[Message(role="user", content=marker)])
        stream = provider.stream(request)
        try:
            await anext(stream)  # streaming: the answer has begun, more is awaited
            gc.collect()
            tracked = gc.get_objects()
            sent = [
                r
                for o in tracked
                for r in gc.get_referents(o)
                if type(r) is bytes and marker.encode() in r
            ]
            assert not sent  # the request's JSON body
            # The request's headers (those of a request carrying this body: the client's
            # own template of its headers stays, with a one-byte body's length).
            headers = [
                o
                for o in tracked
                if isinstance(o, httpx2.Headers) and int(o.get("content-length", 0)) > 4000
            ]
            assert not headers
        finally:
            await stream.aclose()
            await provider.aclose()
