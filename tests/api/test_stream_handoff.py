"""An open stream is served from the request context middleware, once the routing layers
under it have returned (`app.api.handoff`): what a stream holds while it waits is its
own state, not their frames and FastAPI's exit stacks. Everything the middleware does for
a request still spans the whole stream."""

from __future__ import annotations

import json
import sys
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import anyio

from tests.auth.tokens import sqlite_settings
from tests.canary import capture_logs
from tests.fakes.db import MakeApi
from tests.support.asgi_stream import body_then_wait, post_scope

# Frames of the layers under the context middleware, by their code's qualified name.
ROUTING_LAYERS = {
    "ExceptionMiddleware.__call__",
    "AsyncExitStackMiddleware.__call__",
    "BodySizeLimitMiddleware.__call__",
    "Router.__call__",
    "APIRoute.handle",
    "request_response.<locals>.app",
}
STREAMS: dict[str, dict[str, Any]] = {
    "/v1/chat/completions": {"model": "scripted", "stream": True},
    "/api/chat": {"stream": True},
}


def _callers() -> set[str]:
    frame = sys._getframe(1)
    names = set()
    while frame is not None:
        names.add(frame.f_code.co_qualname)
        frame = frame.f_back  # type: ignore[assignment]
    return names


async def _serve_one_stream(
    make_api: MakeApi, tmp_path: Path, path: str, **settings: Any
) -> tuple[set[str], dict[str, Any], list[MutableMapping[str, Any]]]:
    body = {"messages": [{"role": "user", "content": "hi"}], **STREAMS[path]}
    scope = post_scope(path)
    scope["headers"].append((b"x-request-id", b"rid-stream"))
    sent: list[MutableMapping[str, Any]] = []
    seen: set[str] = set()

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.body" and not seen:
            seen.update(_callers())
        sent.append(message)

    async with make_api(sqlite_settings(tmp_path, **settings)) as api:
        with anyio.fail_after(10):
            await api.app(scope, body_then_wait(json.dumps(body).encode()), send)
    return seen, scope, sent


async def test_a_stream_is_sent_from_outside_the_routing_layers(
    make_api: MakeApi, tmp_path: Path
) -> None:
    for n, path in enumerate(STREAMS):
        (tmp_path / str(n)).mkdir()
        seen, scope, sent = await _serve_one_stream(make_api, tmp_path / str(n), path)
        assert "RequestContextMiddleware.__call__" in seen
        assert not seen & ROUTING_LAYERS, path
        assert not any(key.endswith("astack") for key in scope), path  # no exit stack kept
        assert sent[0]["status"] == 200
        assert b"run_end" in b"".join(m.get("body", b"") for m in sent) or path.startswith("/v1")


async def test_a_handed_off_stream_keeps_its_request_id_and_access_line(
    make_api: MakeApi, tmp_path: Path
) -> None:
    with capture_logs() as logs:
        _, _, sent = await _serve_one_stream(
            make_api, tmp_path, "/v1/chat/completions", log_json=True
        )
    headers = dict(sent[0]["headers"])
    assert headers[b"x-request-id"] == b"rid-stream"
    assert headers[b"content-type"].startswith(b"text/event-stream")
    assert b"data: [DONE]" in b"".join(m.get("body", b"") for m in sent)
    access = [json.loads(line) for line in logs.lines if '"chat_bff.access"' in line]
    assert [(e["message"], e["request_id"]) for e in access] == [
        ("POST /v1/chat/completions 200", "rid-stream")
    ]
