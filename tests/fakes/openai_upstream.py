"""A wire-exact fake OpenAI upstream: `POST /v1/chat/completions` on 127.0.0.1.

A tiny HTTP/1.1 server on asyncio streams, in a thread of its own so that sync tests,
async tests, a uvicorn process under test and the benchmark can all point an SDK at it.
It is hand-rolled rather than an ASGI app because the tests need what a framework hides:
aborting a response mid-body (a cut stream), seeing the instant a client hangs up, and
replaying recorded SSE bytes exactly as the real API sent them.

Per test, queue replies in order (`enqueue`); each request takes the next one, or
`default` when the queue is empty. A request with neither gets a 400 and fails the test at
teardown. Every request is recorded (`requests`), every streamed answer has a `StreamLog`
(when it opened, when and how it ended). Replies are encoded when enqueued, so serving
them costs only socket writes (`delay=0` is the fast path for the benchmark).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


# --- replies ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Encoded:
    """A reply ready for the wire: a status, headers and either SSE frames or a body.

    `delay` paces the frames; a body (an error, a whole answer) is sent after it."""

    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    frames: tuple[bytes, ...] | None = None
    body: bytes = b""
    delay: float = 0.0
    cut_after: int | None = None


def _frame(payload: dict[str, Any] | str) -> bytes:
    data = payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"))
    return f"data: {data}\n\n".encode()


def replay(path: Path | str, *, delay: float = 0.0, cut_after: int | None = None) -> Encoded:
    """A recorded SSE body, byte for byte, one frame per write (`cut_after` frames, then abort)."""
    file = Path(path)
    raw = (file if file.is_absolute() else FIXTURES / file).read_bytes()
    frames = [f + b"\n\n" for f in raw.split(b"\n\n") if f.strip()]
    return Encoded(
        headers=(("content-type", "text/event-stream; charset=utf-8"),),
        frames=tuple(frames),
        delay=delay,
        cut_after=cut_after,
    )


@dataclass(frozen=True)
class ToolCall:
    """A tool call the fake model makes; `pieces` is how many deltas its arguments take."""

    name: str
    args: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None
    pieces: int = 4


@dataclass(frozen=True)
class Completion:
    """A model answer built from a spec, served as SSE chunks or as one JSON body.

    `interleave` streams parallel tool calls' pieces round-robin, as real upstreams may;
    `first_tool_index` lets indexes start at 1 after text (some compatible servers do).
    """

    text: str | list[str] = ""
    reasoning: str | list[str] = ""
    tool_calls: tuple[ToolCall, ...] | list[ToolCall] = ()
    usage: tuple[int, int] | None = (11, 7)
    cached_tokens: int | None = None  # reported as `prompt_tokens_details.cached_tokens`
    finish_reason: str | None = None
    model: str = "gpt-4o-mini-2024-07-18"
    id: str = "chatcmpl-fake"
    interleave: bool = False
    first_tool_index: int = 0
    delay: float = 0.0
    cut_after: int | None = None

    def _finish(self) -> str:
        return self.finish_reason or ("tool_calls" if self.tool_calls else "stop")

    def _args(self, call: ToolCall) -> str:
        return call.args if isinstance(call.args, str) else json.dumps(call.args)

    def _call_id(self, n: int, call: ToolCall) -> str:
        return call.id or f"call_fake_{n}"

    def _usage(self) -> dict[str, Any] | None:
        if self.usage is None:
            return None
        p, c = self.usage
        usage: dict[str, Any] = {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}
        if self.cached_tokens is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": self.cached_tokens}
        return usage

    @cached_property
    def streamed(self) -> Encoded:
        """The SSE rendering, built once per spec (a benchmark reuses one spec)."""
        return self._stream()

    @cached_property
    def whole(self) -> Encoded:
        """The non-streaming `chat.completion` body, built once per spec."""
        return self._body()

    def _stream(self) -> Encoded:
        base = {"id": self.id, "object": "chat.completion.chunk", "created": 1, "model": self.model}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            return _frame({**base, "choices": [choice], "usage": None})

        frames = [chunk({"role": "assistant", "content": "", "refusal": None})]
        frames += [chunk({"reasoning_content": p}) for p in _pieces(self.reasoning)]
        frames += [chunk({"content": p}) for p in _pieces(self.text)]
        per_call: list[list[bytes]] = []
        for n, call in enumerate(self.tool_calls):
            index = self.first_tool_index + n
            head = {
                "index": index,
                "id": self._call_id(n, call),
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }
            pieces = [chunk({"tool_calls": [head]})]
            args = self._args(call)
            step = max(1, -(-len(args) // max(1, call.pieces)))
            for start in range(0, len(args), step):
                piece = {"index": index, "function": {"arguments": args[start : start + step]}}
                pieces.append(chunk({"tool_calls": [piece]}))
            per_call.append(pieces)
        if self.interleave:
            longest = max((len(p) for p in per_call), default=0)
            frames += [p[i] for i in range(longest) for p in per_call if i < len(p)]
        else:
            frames += [f for p in per_call for f in p]
        frames.append(chunk({}, self._finish()))
        if self.usage is not None:
            frames.append(_frame({**base, "choices": [], "usage": self._usage()}))
        frames.append(_frame("[DONE]"))
        return Encoded(
            headers=(("content-type", "text/event-stream; charset=utf-8"),),
            frames=tuple(frames),
            delay=self.delay,
            cut_after=self.cut_after,
        )

    def _body(self) -> Encoded:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": "".join(_pieces(self.text)) or None,
            "refusal": None,
        }
        if self.reasoning:
            message["reasoning_content"] = "".join(_pieces(self.reasoning))
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": self._call_id(n, c),
                    "type": "function",
                    "function": {"name": c.name, "arguments": self._args(c)},
                }
                for n, c in enumerate(self.tool_calls)
            ]
        payload = {
            "id": self.id,
            "object": "chat.completion",
            "created": 1,
            "model": self.model,
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": self._finish()}
            ],
            "usage": self._usage(),
        }
        return _json_reply(200, payload)


def _pieces(text: str | list[str]) -> list[str]:
    if isinstance(text, list):
        return text
    # Split like a tokenizer would, roughly: each word with its leading space.
    out: list[str] = []
    for word in text.split(" "):
        out.append(word if not out else " " + word)
    return [p for p in out if p]


def _json_reply(status: int, payload: Any, headers: dict[str, str] | None = None) -> Encoded:
    merged = {"content-type": "application/json", **(headers or {})}
    return Encoded(status=status, headers=tuple(merged.items()), body=json.dumps(payload).encode())


def error_reply(
    status: int,
    message: str,
    *,
    type: str = "invalid_request_error",
    code: str | None = None,
    headers: dict[str, str] | None = None,
) -> Encoded:
    """An error in OpenAI's own shape."""
    body = {"error": {"message": message, "type": type, "param": None, "code": code}}
    return _json_reply(status, body, headers)


def rate_limited(retry_after: float = 0.02) -> Encoded:
    return error_reply(
        429,
        "Rate limit reached for gpt-4o-mini in organization org-fake on requests per min.",
        type="requests",
        code="rate_limit_exceeded",
        headers={"retry-after": str(retry_after)},
    )


def server_error(retry_after_ms: int | None = 5) -> Encoded:
    """A 500; `retry-after-ms` keeps the SDK's back-off short in tests (None: real pacing)."""
    headers = {} if retry_after_ms is None else {"retry-after-ms": str(retry_after_ms)}
    return error_reply(
        500,
        "The server had an error while processing your request.",
        type="server_error",
        headers=headers,
    )


def unauthorized(api_key: str) -> Encoded:
    """401 as OpenAI sends it: the message echoes a masked part of the key."""
    masked = f"{api_key[:8]}{'*' * max(0, len(api_key) - 12)}{api_key[-4:]}"
    return error_reply(
        401,
        f"Incorrect API key provided: {masked}. You can find your API key at "
        "https://platform.openai.com/account/api-keys.",
        code="invalid_api_key",
    )


Reply = Encoded | Completion


# --- the server -------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    received_at: float


@dataclass
class StreamLog:
    """One streamed answer: `outcome` says how it ended, `closed_at` when (monotonic)."""

    request_index: int
    opened_at: float
    closed_at: float | None = None
    outcome: Literal["open", "completed", "client_disconnected", "cut"] = "open"


class FakeOpenAIUpstream:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: deque[Reply] = deque()
        self.default: Reply | None = None
        self.requests: list[RecordedRequest] = []
        self.streams: list[StreamLog] = []
        self.unexpected: list[int] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="fake-openai", daemon=True)
        self._ready = threading.Event()
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.StreamWriter] = set()
        self._busy: set[asyncio.StreamWriter] = set()  # reading or answering a request
        self.connections_accepted = 0
        self.most_connections_open = 0
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def enqueue(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def request_bodies(self) -> list[Any]:
        with self._lock:
            return [r.body for r in self.requests]

    @property
    def open_streams(self) -> int:
        """Streamed answers still being written (a client still connected)."""
        with self._lock:
            return sum(1 for s in self.streams if s.closed_at is None)

    async def stream_ended(self, index: int = -1, timeout: float = 1.0) -> StreamLog:
        """`wait_for_stream_end` for async tests, without blocking their event loop."""
        return await asyncio.to_thread(self.wait_for_stream_end, index, timeout)

    def wait_for_stream_end(self, index: int = -1, timeout: float = 1.0) -> StreamLog:
        """Block until stream `index` has ended (or the timeout passed); return its log."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if self.streams and self.streams[index].closed_at is not None:
                    return self.streams[index]
            time.sleep(0.005)
        with self._lock:
            return self.streams[index]

    # lifecycle

    def start(self) -> None:
        self._thread.start()
        if not self._ready.wait(5):
            raise RuntimeError("fake OpenAI upstream did not start")

    def hang_up_idle(self) -> None:
        """Close every connection not serving a request (a server's keep-alive timeout)."""

        async def close() -> None:
            for writer in list(self._connections):
                if writer not in self._busy:
                    writer.close()

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(5)

    def stop(self) -> None:
        async def shutdown() -> None:
            if self._server is not None:
                self._server.close()
            # Hang up on clients instead of cancelling handlers: each ends on its own.
            for writer in list(self._connections):
                writer.transport.abort()
            while self._connections:
                await asyncio.sleep(0.001)

        asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", 0)
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.close()

    # HTTP

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._connections.add(writer)
        self.connections_accepted += 1
        self.most_connections_open = max(self.most_connections_open, len(self._connections))
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    break
                self._busy.add(writer)
                reply, index = self._take(request)
                keep_alive = await self._respond(reply, index, request, reader, writer)
                self._busy.discard(writer)
                if not keep_alive or request.headers.get("connection") == "close":
                    break
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._connections.discard(writer)
            self._busy.discard(writer)
            writer.close()

    def _take(self, request: RecordedRequest) -> tuple[Encoded, int]:
        with self._lock:
            self.requests.append(request)
            index = len(self.requests) - 1
            reply = self._queue.popleft() if self._queue else self.default
            if reply is None:
                self.unexpected.append(index)
        if reply is None:
            return error_reply(400, f"fake upstream: no reply queued for request #{index}"), index
        if request.path != "/v1/chat/completions" or request.method != "POST":
            return error_reply(404, f"fake upstream: no route {request.path}"), index
        if isinstance(reply, Completion):
            streaming = isinstance(request.body, dict) and request.body.get("stream") is True
            return (reply.streamed if streaming else reply.whole), index
        return reply, index

    async def _respond(
        self,
        reply: Encoded,
        index: int,
        request: RecordedRequest,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> bool:
        head = [f"HTTP/1.1 {reply.status} {_REASONS.get(reply.status, 'Status')}"]
        head += [f"{k}: {v}" for k, v in reply.headers]
        head.append(f"x-request-id: req_fake_{index}")
        if reply.frames is None:
            if reply.delay:  # an upstream slow to answer at all
                await asyncio.sleep(reply.delay)
            head.append(f"content-length: {len(reply.body)}")
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + reply.body)
            await writer.drain()
            return True
        head.append("transfer-encoding: chunked")
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
        log = StreamLog(request_index=index, opened_at=time.monotonic())
        with self._lock:
            self.streams.append(log)
        # A client that hangs up makes this read return b"" (EOF): that is the disconnect.
        hangup = asyncio.ensure_future(reader.read(1))
        outcome: Literal["completed", "client_disconnected", "cut"] = "client_disconnected"
        try:
            outcome = await _stream_frames(reply, writer, hangup)
        finally:
            hangup.cancel()
            # Wait for the cancelled read to let go of the reader: the next request on this
            # keep-alive connection is read from it right after. A client that reset the
            # connection (closed it with our frames unread) makes the read fail instead.
            with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                await hangup
            with self._lock:
                log.outcome = outcome
                log.closed_at = time.monotonic()
        return outcome == "completed"


async def _stream_frames(
    reply: Encoded, writer: asyncio.StreamWriter, hangup: asyncio.Future[bytes]
) -> Literal["completed", "client_disconnected", "cut"]:
    assert reply.frames is not None
    for n, frame in enumerate(reply.frames):
        if reply.cut_after is not None and n >= reply.cut_after:
            writer.transport.abort()
            return "cut"
        if hangup.done():
            return "client_disconnected"
        writer.write(b"%x\r\n%s\r\n" % (len(frame), frame))
        try:
            await writer.drain()
        except ConnectionError:
            return "client_disconnected"
        if reply.delay:
            done, _ = await asyncio.wait({hangup}, timeout=reply.delay)
            if done:
                return "client_disconnected"
    writer.write(b"0\r\n\r\n")
    await writer.drain()
    return "completed"


async def _read_request(reader: asyncio.StreamReader) -> RecordedRequest | None:
    line = await reader.readline()
    if not line.strip():
        return None
    method, path, _ = line.decode("latin-1").split(" ", 2)
    headers: dict[str, str] = {}
    while (raw := await reader.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = raw.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        data = b""
        while size := int((await reader.readline()).strip() or b"0", 16):
            data += await reader.readexactly(size)
            await reader.readline()
        await reader.readline()
    else:
        data = await reader.readexactly(int(headers.get("content-length", "0")))
    body: Any = json.loads(data) if data else None
    return RecordedRequest(method, path, headers, body, time.monotonic())


_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


@pytest.fixture
def openai_upstream() -> Iterator[FakeOpenAIUpstream]:
    """A fresh fake upstream per test; fails the test if a request found no reply queued."""
    fake = FakeOpenAIUpstream()
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()
    assert not fake.unexpected, f"requests without a queued reply: {fake.unexpected}"
