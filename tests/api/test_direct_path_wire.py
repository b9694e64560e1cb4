"""Over real HTTP, the stateless turn routes answer as FastAPI's own handler does.

`tests/api/test_direct_path_differential.py` compares the direct path with FastAPI's
handler in process; here the two apps are served by uvicorn on loopback (the service's own
HTTP protocol), for what lives on the wire: a chunked body, `Expect: 100-continue`, HEAD, a
body cut off by a client that hangs up, and a stream the client leaves after its first
event. The bytes each answer holds and the caller's usage must be the same."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator

import pytest
from fastapi import FastAPI
from pydantic import SecretStr

from app.api import direct_handler
from app.api.http_protocol import LeanHttpToolsProtocol
from app.settings import Settings
from tests.api.test_direct_path_differential import ROUTES, _normal
from tests.api.test_direct_path_differential import layered_calls as layered_calls  # fixture
from tests.api.test_direct_path_differential import solver_calls as solver_calls  # fixture
from tests.auth.tokens import HS_SECRET, hs_token
from tests.fakes.db import MakeApi
from tests.support import loopback


@contextlib.asynccontextmanager
async def serving(app: FastAPI) -> AsyncIterator[int]:
    async with loopback.serving(app, http=LeanHttpToolsProtocol, date_header=False) as (_, port):
        yield port


def _head(method: str, url: str, sub: str, *extra: str) -> bytes:
    lines = [
        f"{method} {url} HTTP/1.1",
        "Host: test",
        f"Authorization: Bearer {hs_token(sub=sub)}",
        "Connection: close",
        *extra,
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _chunked(body: bytes) -> bytes:
    half = len(body) // 2
    parts = [body[:half], body[half:]]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


def _requests(url: str, sub: str) -> dict[str, bytes]:
    body = json.dumps(ROUTES[url]).encode()
    length = f"Content-Length: {len(body)}"
    json_type = "Content-Type: application/json"
    return {
        "ordinary": _head("POST", url, sub, json_type, length) + body,
        "chunked": _head("POST", url, sub, json_type, "Transfer-Encoding: chunked")
        + _chunked(body),
        "expect 100": _head("POST", url, sub, json_type, length, "Expect: 100-continue") + body,
        "two types": _head("POST", url, sub, "Content-Type: text/plain", json_type, length) + body,
        "HEAD": _head("HEAD", url, sub),
    }


def _seen(raw: bytes, sub: str) -> str:
    head, _, body = raw.partition(b"\r\n\r\n")
    kept = [
        line
        for line in head.decode("latin-1").split("\r\n")
        if not line.lower().startswith(("x-request-id", "content-length"))
    ]
    return _normal("\n".join(kept) + "\n" + body.decode("utf-8", "replace"), sub)


async def _exchange(port: int, request: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    answer = await reader.read()
    writer.close()
    return answer


async def _hang_up(port: int, request: bytes, after: bytes | None) -> None:
    """Send `request`, then leave: at once, or once `after` arrived."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    if after is not None:
        await reader.readuntil(after)
    writer.close()
    with contextlib.suppress(ConnectionError):
        await writer.wait_closed()


async def _run(app: FastAPI, url: str, sub: str) -> dict[str, str]:
    seen: dict[str, str] = {}
    async with serving(app) as port:
        for name, request in _requests(url, sub).items():
            seen[name] = _seen(await _exchange(port, request), sub)
        body = json.dumps(ROUTES[url]).encode()
        json_type = "Content-Type: application/json"
        cut = _head("POST", url, sub, json_type, f"Content-Length: {len(body)}") + body[:10]
        await _hang_up(port, cut, None)
        usage = _head("GET", "/api/usage", sub)
        seen["usage"] = _seen(await _exchange(port, usage), sub)
        # A stream left after its first event: whether its model call had begun (and is
        # booked) is the scheduler's, so only the next request's answer is compared.
        stream = json.dumps({**ROUTES[url], "stream": True}).encode()
        left = _head("POST", url, sub, json_type, f"Content-Length: {len(stream)}") + stream
        await _hang_up(port, left, b"\n\n")
        seen["after a left stream"] = _seen(
            await _exchange(port, _requests(url, sub)["ordinary"]), sub
        )
    return seen


@pytest.mark.parametrize("url", ROUTES)
async def test_the_direct_path_answers_on_the_wire_as_fastapi_does(
    make_api: MakeApi,
    app_settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    solver_calls: list[str],
    layered_calls: list[tuple[str, str]],
    url: str,
) -> None:
    settings = app_settings.model_copy(
        update={"jwt_secret": SecretStr(HS_SECRET), "scripted_delay_ms": 5.0}
    )
    async with make_api(settings) as direct, make_api(settings) as solver:
        direct_seen = await _run(direct.app, url, "caller-direct")
        assert solver_calls.count(url) == 1  # "two types" alone went to FastAPI's handler
        assert layered_calls.count(("POST", url)) == 1  # the first; then the route was known
        with monkeypatch.context() as patch:  # built at its first request: FastAPI's alone
            patch.setattr(direct_handler, "_telemetry_probe", lambda: None)
            solver_seen = await _run(solver.app, url, "caller-solver")

    assert solver_calls.count(url) > 4  # every answered request went through FastAPI's
    assert layered_calls.count(("POST", url)) > 4  # and through the routing layers
    assert direct_seen == solver_seen
    assert direct_seen["ordinary"].startswith("HTTP/1.1 200")
    assert '"calls":3,"estimated_calls":0}' in direct_seen["usage"]
