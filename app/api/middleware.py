"""Pure ASGI middlewares (no `BaseHTTPMiddleware`, so SSE streams pass untouched).

Outermost first, as `install_middlewares` stacks them:
- `RequestContextMiddleware`: `X-Request-ID` in (when sane) and out, the request id in a
  contextvar for every log line, one access log line per request (path only: query
  strings can hold stream tokens), request metrics by route template, and the active
  SSE streams gauge;
- CORS, from `cors_origins`;
- `BodySizeLimitMiddleware`: 413 with the standard error body when a body is too large,
  by `Content-Length` up front or by counting a chunked body as it arrives; and 408 when
  a body is still arriving past its deadline (`app.api.body_deadline`).

Without CORS (the default) the context middleware guards the body itself (`BodyLimits`),
with the same answers: one layer, one `send` wrapper and one `receive` wrapper fewer on
every request and every frame of a stream. A body whose `Content-Length` is within the
cap is not counted: the server reads no more of it than declared.

Under the body guard, a known route's request goes to the route past Starlette's and
FastAPI's routing layers (`app.api.known_routes`).

A streaming response is served by the context middleware itself, once the layers under
it have returned (`app.api.handoff`): an open stream does not hold their frames.

HEAD is served as GET (RFC 9110: a server that serves GET serves HEAD): the routes take
the request as a GET, and the answer ends at its headers: the HTTP server, which still
sees a HEAD, sends no body, and a stream is told the client left. FastAPI's routes
answer GET only, so a HEAD (`curl -I`, an uptime monitor) was 405.

Once the `Drain` (app.api.drain) has begun, new requests get 503 `shutting_down` with
`Retry-After` and `Connection: close`, while requests already in flight finish; the
context middleware also tells the drain how many SSE responses are open.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Mapping, Sequence

from fastapi import FastAPI
from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.body_deadline import BodyDeadline, BodyTimedOut
from app.api.drain import Drain
from app.api.handoff import HANDOFF_KEY, Handoff
from app.api.known_routes import KnownRoutes
from app.domain.files import FileTooLarge
from app.observability.logging import request_id_var, run_id_var, user_id_var
from app.observability.metrics import Metrics

access_log = logging.getLogger("chat_bff.access")
error_log = logging.getLogger("chat_bff.errors")

REQUEST_ID_HEADER = "X-Request-ID"
# Where a route leaves what gives its caller's stream slot back (`app.api.deps.StreamSlot`):
# the request's end, which this middleware sees whatever happened, gives it back.
STREAM_SLOT_KEY = "chat_bff.stream_slot"
_SANE_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:\-]{1,128}$")
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


def _id_and_length(scope: Scope) -> tuple[str | None, str | None]:
    """`X-Request-ID` and `Content-Length` (first of each), in one pass over the headers."""
    request_id = length = None
    for key, value in scope.get("headers", []):
        name = key.lower()
        if name == b"x-request-id" and request_id is None:
            request_id = str(value.decode("latin-1"))
        elif name == b"content-length" and length is None:
            length = str(value.decode("latin-1"))
    return request_id, length


def _content_type(headers: list[tuple[bytes, bytes]]) -> bytes:
    found = b""
    for key, value in headers:
        if key == b"content-type":
            found = value  # the last, as a dict of them would keep
    return found


def _route_template(scope: Scope) -> str:
    route = scope.get("route")
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else "unmatched"


def _json_response(
    status: int, body: dict[str, object], headers: list[tuple[bytes, bytes]]
) -> tuple[Message, Message]:
    data = json.dumps(body).encode()
    start: Message = {
        "type": "http.response.start",
        "status": status,
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(data)).encode()),
            *headers,
        ],
    }
    return start, {"type": "http.response.body", "body": data}


_SHUTTING_DOWN: dict[str, object] = {
    "error": {"code": "shutting_down", "message": "The service is restarting; retry shortly."}
}


class _Exchange:
    """One request as the context middleware follows it: its id, the status it answered,
    whether it streams, and how long it took."""

    def __init__(self, scope: Scope, send: Send, metrics: Metrics, drain: Drain | None):
        incoming, self.content_length = _id_and_length(scope)
        self.request_id = (
            incoming if incoming and _SANE_REQUEST_ID.match(incoming) else uuid.uuid4().hex
        )
        self.scope = scope  # the scope the routes get (and leave their entries in)
        self.method: str = scope["method"]  # as the client sent it
        self._send = send
        self._metrics = metrics
        self._drain = drain
        self.began = time.perf_counter()
        self.status = 500
        self.streaming = False
        self.responded = False
        self.ended = False  # a HEAD's answer ends at its headers

    async def send(self, message: Message) -> None:
        if self.ended:
            return
        if message["type"] == "http.response.start":
            self.responded = True
            self.status = int(message["status"])
            headers = list(message.get("headers", []))
            headers.append((REQUEST_ID_HEADER.lower().encode(), self.request_id.encode()))
            message = {**message, "headers": headers}
            if _content_type(headers).startswith(b"text/event-stream"):
                self.streaming = True
                self._metrics.stream_opened()
                if self._drain is not None:
                    self._drain.stream_opened()
            if self.method == "HEAD":
                # The headers are the whole answer. Ended here, the server's `receive`
                # says the client is done, so a stream (a follow stream never ends by
                # itself) stops instead of running on, body unsent, with a keep-alive
                # client's next request queued behind it.
                await self._send(message)
                self.ended = True
                await self._send({"type": "http.response.body", "body": b"", "more_body": False})
                return
        await self._send(message)

    async def answer(
        self, status: int, body: dict[str, object], headers: list[tuple[bytes, bytes]]
    ) -> None:
        for message in _json_response(status, body, headers):
            await self.send(message)

    def finish(self) -> None:
        release = self.scope.get(STREAM_SLOT_KEY)
        if release is not None:
            release()
        if self.streaming:
            self._metrics.stream_closed()
            if self._drain is not None:
                self._drain.stream_closed()
        elapsed = time.perf_counter() - self.began
        method = self.method
        route = _route_template(self.scope)
        self._metrics.observe_request(
            method if method in _METHODS else "OTHER", route, self.status, elapsed
        )
        path = self.scope.get("path", "")
        access_log.info(
            "%s %s %s",
            method,
            path,
            self.status,
            extra={
                "method": method,
                "path": path,
                "route": route,
                "status": self.status,
                "duration_ms": round(elapsed * 1000, 2),
            },
        )


class RequestContextMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        *,
        metrics: Metrics,
        drain: Drain | None = None,
        limits: BodyLimits | None = None,
    ) -> None:
        self.app = app
        self.metrics = metrics
        self.drain = drain
        self.limits = limits  # the body's guard, when no CORS layer sits between
        # Under the guard: the routing layers, or a known route past them.
        self.guarded = KnownRoutes(app) if limits is not None else app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        exchange = _Exchange(scope, send, self.metrics, self.drain)
        scope.setdefault("state", {})["request_id"] = exchange.request_id
        handoff = scope[HANDOFF_KEY] = Handoff()  # a stream is served here (app.api.handoff)
        if scope["method"] == "HEAD":  # the routes see a GET; the server still a HEAD
            scope = exchange.scope = {**scope, "method": "GET"}
        tokens = (
            request_id_var.set(exchange.request_id),
            user_id_var.set(None),
            run_id_var.set(None),
        )
        try:
            if self.drain is not None and self.drain.draining:
                await exchange.answer(
                    503, _SHUTTING_DOWN, [(b"retry-after", b"2"), (b"connection", b"close")]
                )
            elif self.limits is None:
                await self.app(scope, receive, exchange.send)
                await handoff.serve()
            else:
                await self.limits.guard(
                    self.guarded, scope, receive, exchange.send, exchange.content_length
                )
                await handoff.serve()
        except Exception as exc:
            # A bug, not a client error: log it (the log filter redacts secrets) and, when
            # nothing was sent yet, answer 500 with the request id on a connection that
            # stays usable. Once a response has started, only cutting it is honest.
            error_log.exception("unhandled error", extra={"error_type": type(exc).__name__})
            if exchange.responded:
                raise
            body = _error_body_for(scope, "internal_error", "Internal server error.")
            await exchange.answer(500, body, [])
        finally:
            exchange.finish()
            user_id_var.reset(tokens[1])
            run_id_var.reset(tokens[2])
            request_id_var.reset(tokens[0])


def _error_body_for(scope: Scope, code: str, message: str) -> dict[str, object]:
    if str(scope.get("path", "")).startswith("/v1/"):
        kind = "server_error"
        return {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return {"error": {"code": code, "message": message}}


def _too_large_body(path: str, limit: int) -> bytes:
    message = f"Request body exceeds the limit of {limit} bytes."
    if path.startswith("/v1/"):
        error = {
            "message": message,
            "type": "invalid_request_error",
            "param": None,
            "code": "payload_too_large",
        }
    else:
        error = {"code": "payload_too_large", "message": message}
    return json.dumps({"error": error}).encode()


_NUL_MESSAGE = "NUL characters are not accepted in the path or the query."


def _error_body(path: str, code: str, message: str) -> bytes:
    if path.startswith("/v1/"):
        kind = "invalid_request_error"
        error: dict[str, object] = {"message": message, "type": kind, "param": None, "code": code}
    else:
        error = {"code": code, "message": message}
    return json.dumps({"error": error}).encode()


# A refused body is read and dropped before the 413 goes out, up to this many bytes and
# within the body's deadline: a client still sending reads no answer on a connection
# closed with its body unread (the reset loses it), and asyncio clients write the whole
# body before reading. Past either the 413 goes out at once and the connection is cut.
_DRAIN_BYTES = 64 * 1024 * 1024
_BODYLESS = frozenset({"GET", "HEAD"})  # a body sent with these is read by no route


async def _drain(receive: Receive) -> None:
    """Read the request's body to its end (the server reads no more than declared), or
    until its deadline passes."""
    message: Message = {"type": "http.request", "more_body": True}
    try:
        while message["type"] == "http.request" and message.get("more_body", False):
            message = await receive()
    except BodyTimedOut:
        return


def _chunked(scope: Scope) -> bool:
    coding = _header(scope, b"transfer-encoding")
    return coding is not None and "chunked" in coding.lower()


def _awaits_continue(scope: Scope) -> bool:
    """`Expect: 100-continue`: the client sends the body only when told to, so it reads an
    answer sent at once (and reading the body would tell it to send)."""
    expect = _header(scope, b"expect")
    return expect is not None and expect.strip().lower() == "100-continue"


class BodyLimits:
    """Guards the request before the app sees it: a body over the cap is 413, a body
    still arriving past its deadline is 408 (`app.api.body_deadline`), and a NUL
    character in the path or the query is 400 (no id or filter can hold one). A NUL inside
    a JSON body is text like any other: it becomes U+FFFD (`app.api.routing`)."""

    def __init__(
        self,
        *,
        max_bytes: int,
        path_limits: Mapping[str, int] | None = None,
        file_limits: Mapping[str, int] | None = None,
        body_seconds: float | None = None,
        path_seconds: Mapping[str, float] | None = None,
    ) -> None:
        self.max_bytes = max_bytes
        self.path_limits = dict(path_limits or {})  # routes that carry files take more
        # Upload routes: a body far past the file cap is refused saying the file cap.
        self.file_limits = dict(file_limits or {})
        self.body_seconds = body_seconds  # None: a body may take as long as it takes
        self.path_seconds = dict(path_seconds or {})  # routes that carry files take longer

    def _limit(self, path: str) -> int:
        return self.path_limits.get(path.rstrip("/") or "/", self.max_bytes)

    def _deadline(self, scope: Scope, receive: Receive, length: int | None) -> BodyDeadline | None:
        """The body's deadline, when the request has a body (by `Content-Length`, or
        chunked) and its route a deadline."""
        seconds = self.path_seconds.get(scope.get("path", "").rstrip("/") or "/", self.body_seconds)
        if seconds is None:
            return None
        if length is None:
            if scope["method"] in _BODYLESS or not _chunked(scope):
                return None
        elif length == 0:
            return None
        return BodyDeadline(receive, seconds)

    async def _reject(self, scope: Scope, send: Send, status: int = 413) -> None:
        path = scope.get("path", "")
        file_limit = self.file_limits.get(path.rstrip("/"))
        if status == 413 and file_limit is not None:
            body = json.dumps(FileTooLarge(file_limit).to_body()).encode()
        elif status == 413:
            body = _too_large_body(path, self._limit(path))
        else:
            body = _error_body(path, "invalid_characters", _NUL_MESSAGE)
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def guard(
        self, app: ASGIApp, scope: Scope, receive: Receive, send: Send, declared: str | None
    ) -> None:
        """`app(scope, receive, send)` within the limits: `declared` is `Content-Length`."""
        if "\x00" in scope.get("path", "") or b"%00" in scope.get("query_string", b""):
            await self._reject(scope, send, 400)
            return
        cap = self._limit(scope.get("path", ""))
        limit = cap if cap > 0 else None
        digits = declared is not None and declared.isascii() and declared.isdigit()
        length = int(declared) if digits and declared is not None else None
        deadline = self._deadline(scope, receive, length)
        if limit and length is not None and length > limit:
            if length <= _DRAIN_BYTES and not _awaits_continue(scope):
                await _drain(receive if deadline is None else deadline.receive)
            await self._reject(scope, send)
            return
        if deadline is not None and scope["method"] not in _BODYLESS:
            # No route reads a GET's body: only a stream's watcher waits on it, for as
            # long as the stream is open, which the body's deadline would cut.
            receive = deadline.receive
        if limit is None or length is not None:
            # Nothing to count: no cap, or a declared length within it (the server reads
            # no more than declared).
            await app(scope, receive, send)
            return

        guard = _BodyGuard(receive, send, limit)
        try:
            await app(scope, guard.receive, guard.send)
        except Exception:
            if not guard.too_large or guard.responded:
                raise
        if guard.too_large and not guard.responded:
            await guard.drain()
            await self._reject(scope, send)


class BodySizeLimitMiddleware:
    """`BodyLimits` as a layer of its own: under CORS, so that its answers carry CORS's
    headers."""

    def __init__(self, app: ASGIApp, *, limits: BodyLimits) -> None:
        self.app = KnownRoutes(app)  # the routing layers, or a known route past them
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.limits.guard(self.app, scope, receive, send, _header(scope, b"content-length"))


class _BodyGuard:
    """Counts a body as it arrives; past the limit the app is told the client left, and
    whatever it answers is replaced by our 413."""

    def __init__(self, receive: Receive, send: Send, limit: int | None) -> None:
        self._receive = receive
        self._send = send
        self._limit = limit
        self.received = 0
        self.too_large = False
        self.responded = False

    async def receive(self) -> Message:
        message = await self._receive()
        if message["type"] == "http.request":
            self.received += len(message.get("body", b""))
            if self._limit and self.received > self._limit:
                self.too_large = True
            if self.too_large:
                # Stop the app reading: from its side the client went away.
                return {"type": "http.disconnect"}
        return message

    async def drain(self) -> None:
        """The rest of the body read and dropped, up to `_DRAIN_BYTES` in all, within the
        body's deadline."""
        message: Message = {"type": "http.request", "more_body": True}
        while message.get("more_body", False) and self.received <= _DRAIN_BYTES:
            try:
                message = await self._receive()
            except BodyTimedOut:
                return
            if message["type"] != "http.request":
                return
            self.received += len(message.get("body", b""))

    async def send(self, message: Message) -> None:
        if self.too_large and not self.responded:
            return  # the app's answer to a cut-off body is replaced by ours
        if message["type"] == "http.response.start":
            self.responded = True
        await self._send(message)


class _CorsMiddleware(CORSMiddleware):
    """Starlette's CORS with a refused preflight answered in our error body, not plain text.
    The body serves both surfaces (OpenAI's shape has `code` and `message` too): the
    preflight is answered before the path is looked at."""

    def preflight_response(self, request_headers: Headers) -> Response:
        answer = super().preflight_response(request_headers)
        if answer.status_code < 400:
            return answer
        failures = bytes(answer.body).decode().removeprefix("Disallowed CORS ")
        error = {
            "message": f"CORS preflight refused: this {failures} is not allowed.",
            "type": "invalid_request_error",
            "param": None,
            "code": "cors_not_allowed",
        }
        headers = {
            k: v
            for k, v in answer.headers.items()
            if k.lower() not in ("content-length", "content-type")
        }
        return JSONResponse({"error": error}, status_code=answer.status_code, headers=headers)


def install_middlewares(
    app: FastAPI,
    *,
    metrics: Metrics,
    max_body_bytes: int,
    cors_origins: Sequence[str],
    body_limits: Mapping[str, int] | None = None,
    file_limits: Mapping[str, int] | None = None,
    drain: Drain | None = None,
    body_seconds: float | None = None,
    path_seconds: Mapping[str, float] | None = None,
) -> None:
    """Stack the middlewares; the last added runs first."""
    limits = BodyLimits(
        max_bytes=max_body_bytes,
        path_limits=body_limits,
        file_limits=file_limits,
        body_seconds=body_seconds,
        path_seconds=path_seconds,
    )
    if not cors_origins:
        app.add_middleware(RequestContextMiddleware, metrics=metrics, drain=drain, limits=limits)
        return
    app.add_middleware(BodySizeLimitMiddleware, limits=limits)
    app.add_middleware(
        _CorsMiddleware,
        allow_origins=list(cors_origins),
        allow_credentials="*" not in cors_origins,
        allow_methods=["*"],
        allow_headers=["*"],
        expose_headers=[REQUEST_ID_HEADER, "Retry-After"],
        max_age=600,
    )
    app.add_middleware(RequestContextMiddleware, metrics=metrics, drain=drain)
