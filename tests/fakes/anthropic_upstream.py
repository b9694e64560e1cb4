"""A wire-exact fake of Anthropic's `POST /v1/messages` on 127.0.0.1, as a pytest plugin.

It is a real HTTP server (a small ASGI app under uvicorn in a background thread), so the
official SDK and its httpx transport run unchanged against it: retries, SSE decoding,
connection handling and closing are all the real thing. Each test scripts the answers:

    anthropic_upstream.replay("tool-use")          # a recorded stream, byte for byte
    anthropic_upstream.message(MessageSpec([...]))  # built from a spec, SSE or JSON
    anthropic_upstream.error(529)                   # Anthropic-shaped error body

Answers are used in order, one per HTTP request (retries included); a request with
nothing scripted gets a 500 `api_error` that names the problem. Requests are recorded
(`.requests`), and streams are tracked so a test can check that closing our generator
closed the upstream call (`wait_for_disconnect`).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import uuid
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import uvicorn

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "anthropic"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


# --------------------------------------------------------------------------- specs


@dataclass
class Text:
    text: str
    pieces: list[str] | None = None  # default: split after each space


@dataclass
class ToolUse:
    name: str
    input: dict[str, Any] | str = field(default_factory=dict)  # str: raw JSON, maybe bad
    id: str = field(default_factory=lambda: f"toolu_{uuid.uuid4().hex[:24]}")
    piece_size: int = 5  # the JSON streams in pieces this long, after an empty first one


@dataclass
class Thinking:
    thinking: str
    signature: str = "EqQBCkYIBxgCKkBfakeSignature=="


Block = Text | ToolUse | Thinking


@dataclass
class MessageSpec:
    """One assistant message; served as a stream or as JSON, as the request asks."""

    blocks: list[Block]
    model: str = "claude-haiku-4-5-20251001"
    id: str = field(default_factory=lambda: f"msg_{uuid.uuid4().hex[:24]}")
    stop_reason: str | None = None  # default: tool_use if any tool, else end_turn
    input_tokens: int = 25
    output_tokens: int = 17

    @property
    def final_stop_reason(self) -> str:
        if self.stop_reason is not None:
            return self.stop_reason
        return "tool_use" if any(isinstance(b, ToolUse) for b in self.blocks) else "end_turn"


def sse_frame(data: dict[str, Any]) -> bytes:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()


def _word_pieces(text: str) -> list[str]:
    words = text.split(" ")
    return [w + " " for w in words[:-1]] + [words[-1]]


def spec_frames(spec: MessageSpec) -> list[bytes]:
    """The spec as Anthropic streams it: one `event:`/`data:` frame per event."""
    frames = [
        sse_frame(
            {
                "type": "message_start",
                "message": {
                    "model": spec.model,
                    "id": spec.id,
                    "type": "message",
                    "role": "assistant",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": spec.input_tokens, "output_tokens": 1},
                },
            }
        ),
        sse_frame({"type": "ping"}),
    ]
    for index, block in enumerate(spec.blocks):
        frames.extend(_block_frames(index, block))
    frames.append(
        sse_frame(
            {
                "type": "message_delta",
                "delta": {"stop_reason": spec.final_stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": spec.output_tokens},
            }
        )
    )
    frames.append(sse_frame({"type": "message_stop"}))
    return frames


def _block_frames(index: int, block: Block) -> list[bytes]:
    def delta(body: dict[str, Any]) -> bytes:
        return sse_frame({"type": "content_block_delta", "index": index, "delta": body})

    if isinstance(block, Text):
        start: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [
            delta({"type": "text_delta", "text": p})
            for p in (block.pieces or _word_pieces(block.text))
        ]
    elif isinstance(block, ToolUse):
        start = {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}
        raw = block.input if isinstance(block.input, str) else json.dumps(block.input)
        pieces = [""] + [
            raw[i : i + block.piece_size] for i in range(0, len(raw), block.piece_size)
        ]
        deltas = [delta({"type": "input_json_delta", "partial_json": p}) for p in pieces]
    else:
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [
            delta({"type": "thinking_delta", "thinking": p}) for p in _word_pieces(block.thinking)
        ]
        deltas.append(delta({"type": "signature_delta", "signature": block.signature}))
    return [
        sse_frame({"type": "content_block_start", "index": index, "content_block": start}),
        *deltas,
        sse_frame({"type": "content_block_stop", "index": index}),
    ]


def fold_frames(frames: list[bytes]) -> dict[str, Any]:
    """The non-streamed Messages response that a stream of frames adds up to."""
    message: dict[str, Any] = {}
    partial_json: dict[int, str] = {}
    for frame in frames:
        data_line = next(line for line in frame.decode().splitlines() if line.startswith("data:"))
        event = json.loads(data_line[len("data:") :])
        kind = event["type"]
        if kind == "message_start":
            message = dict(event["message"])
            message["content"] = []
        elif kind == "content_block_start":
            message["content"].append(dict(event["content_block"]))
        elif kind == "content_block_delta":
            block, body = message["content"][event["index"]], event["delta"]
            if body["type"] == "text_delta":
                block["text"] += body["text"]
            elif body["type"] == "thinking_delta":
                block["thinking"] += body["thinking"]
            elif body["type"] == "signature_delta":
                block["signature"] = body["signature"]
            elif body["type"] == "input_json_delta":
                partial_json[event["index"]] = (
                    partial_json.get(event["index"], "") + body["partial_json"]
                )
        elif kind == "content_block_stop":
            text = partial_json.pop(event["index"], None)
            if text is not None:
                message["content"][event["index"]]["input"] = json.loads(text) if text else {}
        elif kind == "message_delta":
            message.update(event["delta"])
            message["usage"] = {**message["usage"], **event["usage"]}
    return message


def split_frames(raw: bytes) -> list[bytes]:
    """A recorded body cut at frame ends; joined again it is the same bytes."""
    frames = [f + b"\n\n" for f in raw.split(b"\n\n")]
    frames[-1] = frames[-1][:-2]
    return [f for f in frames if f]


# --------------------------------------------------------------------------- validation


def invalid_request(body: dict[str, Any]) -> str | None:
    """What the real API would refuse in this body (its 400 message), or None.

    Only the rules a translation can get wrong: required fields, a user turn first,
    non-blank text, and every `tool_use` answered by a `tool_result` in the next turn.
    Switch off with `upstream.validate = False` to script a 400 by hand.
    """
    for name in ("model", "max_tokens", "messages"):
        if name not in body:
            return f"{name}: Field required"
    messages = body["messages"]
    if not messages:
        return "messages: at least one message is required"
    if messages[0]["role"] != "user":
        return "messages: the first message must use the `user` role"
    open_uses: list[str] = []
    for number, message in enumerate(messages):
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        problem = _blank_text(number, blocks) or _unanswered(number, message, blocks, open_uses)
        if problem:
            return problem
        if message["role"] == "user":
            open_uses = []
        else:
            open_uses = [b["id"] for b in blocks if b["type"] == "tool_use"]
    if open_uses:
        return (
            f"messages.{len(messages) - 1}: `tool_use` ids were found without `tool_result` "
            f"blocks immediately after: {', '.join(open_uses)}"
        )
    return None


def _blank_text(number: int, blocks: list[dict[str, Any]]) -> str | None:
    for block in blocks:
        if block["type"] == "text" and not block["text"].strip():
            return f"messages.{number}: text content blocks must contain non-whitespace text"
    return None


def _unanswered(
    number: int, message: dict[str, Any], blocks: list[dict[str, Any]], open_uses: list[str]
) -> str | None:
    """Every `tool_use` answered by a `tool_result` at the start of the next user turn."""
    answered = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
    if message["role"] != "user":
        return f"messages.{number}: roles must alternate after `tool_use`" if open_uses else None
    if open_uses and answered[: len(open_uses)] != open_uses:
        return (
            f"messages.{number - 1}: `tool_use` ids were found without `tool_result` "
            f"blocks immediately after: {', '.join(open_uses)}"
        )
    if len(answered) > len(open_uses):
        return f"messages.{number}: unexpected `tool_use_id` found in `tool_result` blocks"
    return None


# --------------------------------------------------------------------------- replies


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> dict[str, Any]:
        value = json.loads(self.body)
        assert isinstance(value, dict)
        return value

    @property
    def streamed(self) -> bool:
        return bool(self.json.get("stream"))


@dataclass
class Reply:
    """One scripted HTTP answer. `frames` are sent one `send` each, `delay` apart."""

    status: int = 200
    headers: list[tuple[str, str]] = field(default_factory=list)
    frames: list[bytes] = field(default_factory=list)
    stream: bool = True  # text/event-stream, else application/json
    delay: float = 0.0
    stall: float = 0.0  # before the status line
    cut_after: int | None = None  # drop the connection after this many frames
    hold_after: int | None = None  # after this many frames, wait for the client to leave


Responder = Callable[[RecordedRequest], Reply]


def error_body(status: int, message: str, error_type: str | None = None) -> bytes:
    kind = error_type or ERROR_TYPES.get(status, "api_error")
    body = {
        "type": "error",
        "error": {"type": kind, "message": message},
        "request_id": f"req_{uuid.uuid4().hex[:24]}",
    }
    return json.dumps(body).encode()


class _CutConnection(Exception):
    """Raised inside the app so uvicorn drops the socket mid-body (an abrupt cut)."""


class AnthropicUpstream:
    """The scriptable state of the fake; the server thread reads it, the test writes it."""

    def __init__(self) -> None:
        self.base_url = ""
        self.validate = True
        self._lock = threading.Condition()
        self._generation = 0
        self.reset()

    def reset(self) -> None:
        with self._lock:
            # A stream left over from an earlier test must not count in this one.
            self._generation += 1
            self.validate = True
            self._queue: list[Responder] = []
            self.requests: list[RecordedRequest] = []
            self.open_streams = 0
            self.disconnects = 0
            self.completed = 0
            self._stalls_released = False

    # ---- scripting ------------------------------------------------------------------

    def respond(self, responder: Responder) -> None:
        """Queue any answer computed from the request (the general form)."""
        with self._lock:
            self._queue.append(responder)

    def message(self, spec: MessageSpec, **reply: Any) -> None:
        """Answer with `spec`: an SSE stream if the request streams, else its JSON."""

        def answer(request: RecordedRequest) -> Reply:
            if request.streamed:
                return Reply(frames=spec_frames(spec), **reply)
            return Reply(frames=[json.dumps(fold_frames(spec_frames(spec))).encode()], stream=False)

        self.respond(answer)

    def release_stalls(self) -> None:
        """End every `stall` now: a test that saw all its requests arrive needn't wait."""
        with self._lock:
            self._stalls_released = True

    def replay(self, name: str, **reply: Any) -> None:
        """Answer with a recorded stream from tests/fixtures/anthropic (JSON if not streamed)."""
        frames = split_frames((FIXTURES / f"{name}.sse").read_bytes())

        def answer(request: RecordedRequest) -> Reply:
            if request.streamed:
                return Reply(frames=frames, **reply)
            return Reply(frames=[json.dumps(fold_frames(frames)).encode()], stream=False)

        self.respond(answer)

    def error(
        self,
        status: int,
        message: str | None = None,
        *,
        error_type: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        """An Anthropic-shaped error answer (`{"type": "error", "error": {...}}`)."""
        body = error_body(status, message or f"fake upstream error {status}", error_type)
        reply = Reply(
            status=status,
            headers=[("request-id", "req_fake"), *(headers or {}).items()],
            frames=[body],
            stream=False,
        )
        self.respond(lambda _request: reply)

    def stream_error(
        self, spec: MessageSpec, *, after: int, error_type: str = "overloaded_error"
    ) -> None:
        """A 200 stream that sends `after` frames of `spec`, then an `event: error`."""
        body = json.loads(error_body(529, "Overloaded", error_type))
        frames = [
            *spec_frames(spec)[:after],
            f"event: error\ndata: {json.dumps(body)}\n\n".encode(),
        ]
        self.respond(lambda _request: Reply(frames=frames))

    # ---- inspection -----------------------------------------------------------------

    def wait_for_disconnect(self, timeout: float = 1.0) -> bool:
        """True once a stream has ended because the client closed it."""
        with self._lock:
            return self._lock.wait_for(lambda: self.disconnects > 0, timeout)

    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def assert_all_used(self) -> None:
        left = self.pending()
        assert left == 0, f"fake Anthropic upstream: {left} scripted answer(s) never requested"

    # ---- the server side ------------------------------------------------------------

    def _next(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            responder = self._queue.pop(0) if self._queue else None
        if responder is None:
            message = f"fake upstream: nothing scripted for request #{len(self.requests)}"
            return Reply(status=500, frames=[error_body(500, message)], stream=False)
        return responder(request)

    def _stream_ended(self, generation: int, *, disconnected: bool) -> None:
        with self._lock:
            if generation != self._generation:
                return
            self.open_streams -= 1
            if disconnected:
                self.disconnects += 1
            else:
                self.completed += 1
            self._lock.notify_all()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert scope["type"] == "http"
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        if (scope["method"], scope["path"]) != ("POST", "/v1/messages"):
            await _send_whole(send, 404, [], error_body(404, f"no route {scope['path']}"), False)
            return
        recorded = RecordedRequest(scope["method"], scope["path"], headers, body)
        problem = invalid_request(recorded.json) if self.validate else None
        if problem is not None:
            with self._lock:
                self.requests.append(recorded)
            await _send_whole(send, 400, [], error_body(400, problem), False)
            return
        reply = self._next(recorded)
        if reply.stall:
            await self._stall(reply.stall)
        if reply.status != 200 or not reply.stream:
            await _send_whole(
                send, reply.status, reply.headers, b"".join(reply.frames), reply.stream
            )
            return
        await self._stream(reply, receive, send)

    async def _stall(self, seconds: float) -> None:
        loop = asyncio.get_running_loop()
        end = loop.time() + seconds
        while not self._stalls_released and loop.time() < end:
            await asyncio.sleep(min(0.05, end - loop.time()))

    async def _stream(self, reply: Reply, receive: Receive, send: Send) -> None:
        left = asyncio.Event()

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            left.set()

        watcher = asyncio.create_task(watch())
        with self._lock:
            self.open_streams += 1
            generation = self._generation
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": _headers(reply.headers, stream=True),
                }
            )
            for number, frame in enumerate(reply.frames):
                if number in (reply.cut_after, reply.hold_after):
                    break
                if number and reply.delay and await _left_within(left, reply.delay):
                    return
                if left.is_set():
                    return
                await send({"type": "http.response.body", "body": frame, "more_body": True})
            if reply.cut_after is not None:
                raise _CutConnection
            if reply.hold_after is not None:
                await left.wait()
                return
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            watcher.cancel()
            self._stream_ended(generation, disconnected=left.is_set())


async def _left_within(left: asyncio.Event, seconds: float) -> bool:
    try:
        await asyncio.wait_for(left.wait(), seconds)
    except TimeoutError:
        return False
    return True


def _headers(extra: list[tuple[str, str]], *, stream: bool) -> list[tuple[bytes, bytes]]:
    content_type = "text/event-stream; charset=utf-8" if stream else "application/json"
    pairs = [("content-type", content_type), ("request-id", "req_fake"), *extra]
    seen: dict[str, str] = {}
    for name, value in pairs:
        seen[name.lower()] = value
    return [(k.encode(), v.encode()) for k, v in seen.items()]


async def _send_whole(
    send: Send, status: int, headers: list[tuple[str, str]], body: bytes, stream: bool
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": _headers(headers, stream=stream),
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})


# --------------------------------------------------------------------------- server


class _Server:
    """uvicorn in a daemon thread on a socket we bound ourselves (port 0 -> a free port)."""

    def __init__(self, app: AnthropicUpstream) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        port = self._socket.getsockname()[1]
        config = uvicorn.Config(
            app,
            lifespan="off",
            log_config=None,
            log_level="critical",
            access_log=False,
            ws="none",
            http="h11",
            loop="asyncio",
            timeout_graceful_shutdown=1,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True
        )
        app.base_url = f"http://127.0.0.1:{port}"

    def start(self) -> None:
        self._thread.start()
        for _ in range(500):
            if self._server.started:
                return
            threading.Event().wait(0.01)
        raise RuntimeError("the fake Anthropic upstream did not start")

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=5)
        self._socket.close()


@pytest.fixture(scope="session")
def _anthropic_upstream_server() -> Iterator[AnthropicUpstream]:
    upstream = AnthropicUpstream()
    server = _Server(upstream)
    server.start()
    yield upstream
    server.stop()


@pytest.fixture
def anthropic_upstream(_anthropic_upstream_server: AnthropicUpstream) -> AnthropicUpstream:
    """The fake Anthropic API, emptied for this test; point the SDK at `.base_url`."""
    _anthropic_upstream_server.reset()
    return _anthropic_upstream_server
