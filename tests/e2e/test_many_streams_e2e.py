"""Hundreds of slowly paced streams open at once over real HTTP, then every client hangs
up at the same moment: every stream and its run ends, the upstream calls are closed, the
service keeps answering, and no full garbage collection ran while the streams opened.

Why the last point: a full collection walks every object of every open stream with the
event loop stopped. With CPython's default thresholds, opening 5,000 streams on one
worker ran about eight of them, seconds each; the upstream connects waiting behind them
outlived their timeout by the thousand, the worker spun delivering those cancellations,
and most streams failed (`python -m bench.memory --counts 5000`). The collector's count
is read from the service's own `/metrics`.
"""

from __future__ import annotations

import asyncio
import json
import re

import httpx
import pytest

from tests.e2e.conftest import Launch, openai_backed
from tests.fakes.openai_upstream import Completion, FakeOpenAIUpstream

pytestmark = pytest.mark.e2e

STREAMS = 300
# Long enough that no stream ends on its own before the clients hang up.
PACED = Completion(text=[f"w{n} " for n in range(60)], delay=1.0)
LIMIT_S = 120.0  # the whole exchange; a bound, not a measure


def _metric(text: str, name: str, labels: str = "") -> float:
    found = re.search(rf"^{re.escape(name + labels)} (\S+)$", text, re.MULTILINE)
    assert found is not None, f"{name}{labels} not in /metrics"
    return float(found.group(1))


def _full_collections(text: str) -> float:
    return _metric(text, "python_gc_collections_total", '{generation="2"}')


def _request(port: int) -> bytes:
    body = json.dumps(
        {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}], "stream": True}
    ).encode()
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n"
        f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def _first_token(port: int) -> asyncio.StreamWriter:
    """An open stream that has delivered its first token (its writer, to hang up)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(_request(port))
    seen = b""
    while b'"content":"w0 "' not in seen:
        piece = await reader.read(65536)
        seen += piece
        ended = not piece or seen.endswith(b"\r\n0\r\n\r\n")
        assert not ended, f"the stream ended before its first token: {seen[-400:]!r}"
    assert seen.startswith(b"HTTP/1.1 200"), seen[:200]
    return writer


async def test_hundreds_of_streams_hung_up_at_once_all_end_and_the_service_keeps_answering(
    launch: Launch, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(*[PACED] * STREAMS, Completion(text="Still here."))
    service = launch(
        **openai_backed(
            openai_upstream.base_url,
            RATE_LIMIT_REQUESTS_PER_MINUTE="0",
            RATE_LIMIT_CONCURRENT_RUNS="0",
            LOG_LEVEL="WARNING",
        )
    )
    async with asyncio.timeout(LIMIT_S), httpx.AsyncClient(base_url=service.base_url) as http:
        before = _full_collections((await http.get("/metrics")).text)
        writers = await asyncio.gather(*(_first_token(service.port) for _ in range(STREAMS)))
        opened = (await http.get("/metrics")).text
        assert _metric(opened, "chatbff_active_streams") == STREAMS
        assert _full_collections(opened) == before

        for writer in writers:  # every client hangs up at once
            writer.transport.abort()
        while True:
            now = (await http.get("/metrics")).text
            if _metric(now, "chatbff_active_streams") == 0 and (
                _metric(now, "chatbff_active_runs") == 0
            ):
                break
            await asyncio.sleep(0.1)
        while openai_upstream.open_streams:
            await asyncio.sleep(0.1)

        answer = await http.post(
            "/v1/chat/completions",
            json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}]},
        )
        assert answer.status_code == 200
        assert answer.json()["choices"][0]["message"]["content"] == "Still here."
