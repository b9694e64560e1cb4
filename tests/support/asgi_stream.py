"""Driving the app at the ASGI level with a request whose client stays connected:
httpx's ASGI transport would buffer the whole stream."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import anyio


def post_scope(path: str) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"test"), (b"content-type", b"application/json")],
        "client": ("127.0.0.1", 1234),
        "server": ("test", 80),
    }


def body_then_wait(body: bytes) -> Any:
    """A `receive` that gives the body, then waits as a client that never hangs up."""
    sent = False

    async def receive() -> MutableMapping[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    return receive
