"""A body over the cap reaches the client as 413 `payload_too_large`, also when the client
is still sending it: an asyncio httpx client (the one the openai SDK's AsyncOpenAI uses)
writes the whole body before it reads the answer, and an answer sent on a connection
closed with the body unread was lost to a connection reset (the SDK then retries the
same body as a connection error). Over real HTTP on loopback, as the server runs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from app.api.http_protocol import LeanHttpToolsProtocol
from app.settings import Settings
from tests.fakes.db import MakeApi
from tests.support import loopback

CAP = 64 * 1024


def _body(size: int) -> bytes:
    return b'{"title": "' + b"a" * size + b'"}'


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
async def test_a_body_over_the_cap_is_answered_413_while_the_client_sends_it(
    make_api: MakeApi, app_settings: Settings, chunked: bool
) -> None:
    settings = app_settings.model_copy(update={"max_body_bytes": CAP})
    body = _body(64 * CAP)  # 4 MiB: far more than the socket buffers take in at once

    async def pieces() -> AsyncIterator[bytes]:
        for start in range(0, len(body), CAP):
            yield body[start : start + CAP]

    async with (
        make_api(settings) as api,
        loopback.serving(api.app, http=LeanHttpToolsProtocol) as (_, port),
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client,
    ):
        answers = []
        for path in ("/api/conversations", "/v1/conversations"):
            for _ in range(3):
                content = pieces() if chunked else body
                answers.append(
                    await client.post(
                        path, content=content, headers={"content-type": "application/json"}
                    )
                )
        listed = await client.get("/api/conversations")

    assert [a.status_code for a in answers] == [413] * 6
    assert {a.json()["error"]["code"] for a in answers} == {"payload_too_large"}
    assert listed.json()["data"] == []


async def test_a_client_that_awaits_continue_is_refused_before_it_sends_the_body(
    make_api: MakeApi, app_settings: Settings
) -> None:
    """`Expect: 100-continue` (curl's way past 1 MB): 413 at once, and no go-ahead to send
    a body that would be refused."""
    settings = app_settings.model_copy(update={"max_body_bytes": CAP})
    head = (
        "POST /api/conversations HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
        f"Expect: 100-continue\r\nContent-Length: {64 * CAP}\r\n\r\n"
    )
    async with (
        make_api(settings) as api,
        loopback.serving(api.app, http=LeanHttpToolsProtocol) as (_, port),
    ):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(head.encode())
        await writer.drain()
        status = await asyncio.wait_for(reader.readline(), 10)
        writer.close()

    assert status.startswith(b"HTTP/1.1 413 "), status
