"""A lean HTTP/1.1 load generator on raw asyncio Protocols (no HTTP library in the way).

One `Conn` is one keep-alive connection carrying one request at a time. While a response
streams in, `data_received` counts a marker (one per delivered token: ` zq` in OpenAI
chunks, `event: text_delta` in native SSE) and stamps the arrival time, so time to first
token and the gaps between delivered tokens are measured where the bytes land, at the
cost of a `bytes.count` per read. Several tokens in one read are one arrival: the gaps
are the waits between arrivals, the stalls a reader sees (a server that holds tokens back
and sends them in bursts shows long gaps, not many zero ones).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

_END = b"\r\n0\r\n\r\n"


@dataclass
class Result:
    status: int = 0
    sent_at: float = 0.0
    first_token_at: float | None = None
    last_token_at: float | None = None
    done_at: float = 0.0
    tokens: int = 0
    reads: int = 0  # reads that carried at least one token
    gaps: list[float] = field(default_factory=list)
    body: bytes = b""
    error: str | None = None

    @property
    def ttft(self) -> float | None:
        return None if self.first_token_at is None else self.first_token_at - self.sent_at

    def json(self) -> Any:
        return json.loads(self.body)


def post(
    path: str, payload: dict[str, Any], *, port: int, accept: str = "application/json"
) -> bytes:
    body = json.dumps(payload, separators=(",", ":")).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n"
        f"accept: {accept}\r\ncontent-length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def get(path: str, *, port: int) -> bytes:
    return f"GET {path} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n\r\n".encode()


class Conn(asyncio.Protocol):
    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._future: asyncio.Future[Result] | None = None
        self._result = Result()
        self._marker = b""
        self._gaps = False
        self._capture = False
        self._head = b""
        self._in_body = False
        self._length: int | None = None
        self._received = 0
        self._carry = b""
        self._tail = b""
        self._last = 0.0

    @classmethod
    async def open(cls, port: int) -> Conn:
        loop = asyncio.get_running_loop()
        _, conn = await loop.create_connection(cls, "127.0.0.1", port)
        return conn

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop: not a subclass

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.lost.done():
            self.lost.set_result(None)
        self._fail("connection lost")

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def partial(self, reason: str) -> Result:
        """What has arrived of the request in flight, marked failed: a run bounded in time
        still counts the chunks that arrived before the bound."""
        self._result.error = reason
        self._result.done_at = time.perf_counter()
        return self._result

    def _fail(self, reason: str) -> None:
        if self._future is not None and not self._future.done():
            self._result.error = reason
            self._result.done_at = time.perf_counter()
            self._future.set_result(self._result)

    def send(
        self, request: bytes, *, marker: bytes = b"", gaps: bool = False, capture: bool = False
    ) -> asyncio.Future[Result]:
        assert self.transport is not None
        self._future = asyncio.get_running_loop().create_future()
        self._result = Result()
        self._marker, self._gaps, self._capture = marker, gaps, capture
        self._head, self._in_body, self._length, self._received = b"", False, None, 0
        self._carry, self._tail = b"", b""
        self._result.sent_at = time.perf_counter()
        self.transport.write(request)
        return self._future

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        if self._future is None or self._future.done():
            return
        if not self._in_body:
            self._head += data
            end = self._head.find(b"\r\n\r\n")
            if end < 0:
                return
            head, data = self._head[:end], self._head[end + 4 :]
            self._in_body = True
            lines = head.decode("latin-1").split("\r\n")
            self._result.status = int(lines[0].split(" ", 2)[1])
            for line in lines[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    self._length = int(value.strip())
            if not data and self._length != 0:
                return
        self._body(data, now)

    def _body(self, data: bytes, now: float) -> None:
        result = self._result
        if self._capture:
            result.body += data
        if self._marker:
            window = self._carry + data
            found = window.count(self._marker)
            self._carry = window[-(len(self._marker) - 1) :] if len(self._marker) > 1 else b""
            if found:
                if result.first_token_at is None:
                    result.first_token_at = now
                elif self._gaps:
                    result.gaps.append(now - self._last)
                self._last = result.last_token_at = now
                result.tokens += found
                result.reads += 1
        if self._length is not None:
            self._received += len(data)
            done = self._received >= self._length
        else:
            self._tail = (self._tail + data)[-len(_END) :]
            done = self._tail == _END or (self._received == 0 and data == _END[2:])
            self._received += len(data)
        if done:
            result.done_at = now
            assert self._future is not None
            self._future.set_result(result)


async def open_conns(port: int, count: int) -> list[Conn]:
    conns: list[Conn] = []
    for start in range(0, count, 50):  # don't overflow an accept backlog all at once
        batch = min(50, count - start)
        conns += await asyncio.gather(*(Conn.open(port) for _ in range(batch)))
    return conns


async def run_requests(
    port: int,
    requests: Sequence[bytes],
    *,
    concurrency: int,
    marker: bytes = b"",
    gaps: bool = False,
    capture: bool = False,
    timeout: float = 60.0,
    conns: list[Conn] | None = None,
) -> tuple[list[Result], float]:
    """Send `requests` over `concurrency` keep-alive connections; (results, wall seconds).

    Connections are opened before the clock starts, so every worker fires at once: with
    `concurrency == len(requests)` all streams are in flight together.
    """
    own = conns is None
    pool = conns if conns is not None else await open_conns(port, concurrency)
    results: list[Result] = [Result(error="not run") for _ in requests]
    next_index = 0
    deadline = time.perf_counter() + timeout

    async def worker(conn: Conn) -> None:
        nonlocal next_index
        while next_index < len(requests):
            index = next_index
            next_index += 1
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                return
            future = conn.send(requests[index], marker=marker, gaps=gaps, capture=capture)
            try:
                results[index] = await asyncio.wait_for(future, remaining)
            except TimeoutError:
                results[index] = conn.partial("timeout")
                conn.close()
                return
            if results[index].error is not None:
                return

    started = time.perf_counter()
    await asyncio.gather(*(worker(c) for c in pool))
    wall = time.perf_counter() - started
    if own:
        for conn in pool:
            conn.close()
    return results, wall
