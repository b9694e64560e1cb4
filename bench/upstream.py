"""A lean fake OpenAI upstream for the benchmark, in a process of its own.

`python -m bench.upstream` listens on 127.0.0.1 (a free port, printed as `PORT <n>` on
stdout) and answers `POST /v1/chat/completions`, streaming or not, in OpenAI's wire format.
The model name chooses the answer: `bench-c<chunks>-d<ms>` streams `<chunks>` content
chunks (each the token ` zq`) with `<ms>` milliseconds between frames. Frames are encoded
once per shape and cached, so serving costs socket writes only. It is an asyncio
Protocol (not streams) on uvloop when installed: the upstream should cost as little CPU
as possible, because on a 2-core machine it shares the cores with the service under test.

With 0 ms pacing each frame is its own write, one per event-loop iteration (the way a
fast model server flushes tokens), not one big buffer; with pacing each stream has its
own timer (`call_later` after each frame), like `sleep(delay)` between tokens.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from functools import cache

TOKEN = " zq"
_MODEL = re.compile(r"^bench-c(\d+)-d(\d+)$")
_BASE = '{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1,"model":"%s",'


def _frame(payload: str) -> bytes:
    data = f"data: {payload}\n\n".encode()
    return b"%x\r\n%s\r\n" % (len(data), data)


@cache
def stream_frames(model: str, chunks: int, usage: bool) -> tuple[bytes, ...]:
    base = _BASE % model
    fp = '"system_fingerprint":"fp_bench",'

    def chunk(delta: str, finish: str = "null") -> bytes:
        choice = f'{{"index":0,"delta":{delta},"logprobs":null,"finish_reason":{finish}}}'
        return _frame(base + fp + f'"choices":[{choice}]}}')

    content = chunk(json.dumps({"content": TOKEN}, separators=(",", ":")))
    frames = [chunk('{"role":"assistant","content":"","refusal":null}')]
    frames += [content] * chunks
    frames.append(chunk("{}", '"stop"'))
    if usage:
        u = f'{{"prompt_tokens":9,"completion_tokens":{chunks},"total_tokens":{chunks + 9}}}'
        frames.append(_frame(base + fp + f'"choices":[],"usage":{u}}}'))
    frames.append(_frame("[DONE]"))
    frames.append(b"0\r\n\r\n")
    return tuple(frames)


@cache
def whole_body(model: str, chunks: int) -> bytes:
    body = {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": TOKEN * chunks, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": chunks, "total_tokens": chunks + 9},
    }
    return json.dumps(body, separators=(",", ":")).encode()


_SSE_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
    b"transfer-encoding: chunked\r\nx-request-id: req_bench\r\n\r\n"
)


def _json_head(status: int, length: int) -> bytes:
    reason = {200: b"OK", 400: b"Bad Request", 404: b"Not Found"}.get(status, b"Status")
    return b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % (
        status,
        reason,
        length,
    )


class UpstreamProtocol(asyncio.Protocol):
    """One client connection, HTTP/1.1 keep-alive, one request at a time."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.buffer = b""
        self.frames: tuple[bytes, ...] = ()
        self.position = 0
        self.delay = 0.0
        self.busy = False
        self.paused = False
        self.closed = False
        self.timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop: not a subclass

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.timer is not None:
            self.timer.cancel()

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        if self.busy and self.timer is None:
            self._send_next()

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if not self.busy:
            self._parse()

    def _parse(self) -> None:
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return
        head = self.buffer[:end].decode("latin-1")
        length = 0
        for line in head.split("\r\n")[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        if len(self.buffer) < end + 4 + length:
            return
        body = self.buffer[end + 4 : end + 4 + length]
        self.buffer = self.buffer[end + 4 + length :]
        request_line = head.split("\r\n", 1)[0]
        self._answer(request_line, body)

    def _reply_json(self, status: int, body: bytes) -> None:
        assert self.transport is not None
        self.transport.write(_json_head(status, len(body)) + body)

    def _answer(self, request_line: str, raw: bytes) -> None:
        method, path, _ = request_line.split(" ", 2)
        if method != "POST" or path != "/v1/chat/completions":
            self._reply_json(404, b'{"error":{"message":"no route","type":"invalid_request"}}')
            self._parse()
            return
        request = json.loads(raw)
        match = _MODEL.match(str(request.get("model", "")))
        if match is None:
            self._reply_json(400, b'{"error":{"message":"unknown model","type":"invalid"}}')
            self._parse()
            return
        model, chunks, delay_ms = match.group(0), int(match.group(1)), int(match.group(2))
        if not request.get("stream"):
            self._reply_json(200, whole_body(model, chunks))
            self._parse()
            return
        usage = bool((request.get("stream_options") or {}).get("include_usage"))
        assert self.transport is not None
        self.frames = stream_frames(model, chunks, usage)
        self.position = 0
        self.delay = delay_ms / 1000.0
        self.busy = True
        self.transport.write(_SSE_HEAD + self.frames[0])
        self.position = 1
        self._schedule()

    def _schedule(self) -> None:
        if self.delay:
            self.timer = self.loop.call_later(self.delay, self._send_next)
        else:
            self.timer = self.loop.call_soon(self._send_next)  # type: ignore[assignment]

    def _send_next(self) -> None:
        self.timer = None
        if self.closed or self.transport is None:
            return
        if self.paused:
            return  # resume_writing() continues
        self.transport.write(self.frames[self.position])
        self.position += 1
        if self.position < len(self.frames):
            self._schedule()
            return
        self.busy = False
        self.frames = ()
        if self.buffer:
            self._parse()


async def serve(host: str = "127.0.0.1", port: int = 0) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(UpstreamProtocol, host, port, backlog=4096)
    bound = server.sockets[0].getsockname()[1]
    print(f"PORT {bound}", flush=True)
    # Stop when the parent closes our stdin (or dies).
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    await reader.read()
    server.close()


def main() -> None:
    try:
        import uvloop

        uvloop.run(serve())
    except ImportError:
        asyncio.run(serve())


if __name__ == "__main__":
    main()
