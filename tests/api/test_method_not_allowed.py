"""A method a path does not serve is 405 with an `Allow` header naming every method that
path does serve (RFC 9110 15.5.6), over real HTTP: a client (or a generated SDK's retry
logic) reads `Allow` to learn what it may send. Starlette's router named only the first
matching route's methods, so `/api/conversations/{id}` answered `Allow: GET` though it
also takes PATCH and DELETE.

HEAD is served wherever GET is (RFC 9110 9.3.2), with GET's status and headers and no
body: FastAPI's routes take GET alone, so `curl -I` or an uptime monitor's HEAD got 405."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from tests.fakes.db import ApiClient
from tests.support.loopback import served


@pytest.fixture
async def base(api: ApiClient) -> AsyncIterator[str]:
    async with served(api.app) as url:
        yield url


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("PUT", "/api/conversations/conv_1", "DELETE, GET, HEAD, PATCH"),
        ("POST", "/api/conversations/conv_1", "DELETE, GET, HEAD, PATCH"),
        ("PUT", "/api/conversations", "GET, HEAD, POST"),
        ("DELETE", "/api/approvals/appr_1", "GET, HEAD, POST"),
        ("PATCH", "/api/files/file_1", "DELETE, GET, HEAD"),
        ("PUT", "/v1/conversations/conv_1", "DELETE, GET, HEAD, POST"),
    ],
)
async def test_a_method_the_path_does_not_serve_is_405_naming_every_method_it_does(
    base: str, method: str, path: str, allowed: str
) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=10) as http:
        response = await http.request(method, path)

    assert response.status_code == 405
    assert response.headers["allow"] == allowed
    assert response.json()["error"]["code"] == "method_not_allowed"


async def test_head_answers_as_get_does_without_a_body(base: str) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=10) as http:
        conversation_id = (await http.post("/api/conversations", json={"title": "t"})).json()["id"]
        url = f"/api/conversations/{conversation_id}"
        got, head = await http.get(url), await http.head(url)
        health = await http.head("/healthz")
        missing = await http.head("/api/conversations/conv_nope")

    assert (head.status_code, head.content) == (200, b"")
    assert head.headers["content-type"] == got.headers["content-type"]
    assert head.headers["content-length"] == got.headers["content-length"]
    assert (health.status_code, health.content) == (200, b"")
    assert missing.status_code == 404


async def test_head_of_a_finished_runs_events_answers_and_the_stream_still_reads(
    base: str,
) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=10) as http:
        conversation_id = (await http.post("/api/conversations", json={})).json()["id"]
        sent = await http.post(
            f"/api/conversations/{conversation_id}/messages",
            json={"content": "hi"},
            headers={"accept": "text/event-stream"},
        )
        run_id = sent.text.split('"run_id":"', 1)[1].split('"', 1)[0]
        url = f"/api/conversations/{conversation_id}/runs/{run_id}/events"
        heads = [await http.head(url) for _ in range(5)]
        replay = await http.get(url)

    assert all((h.status_code, h.content) == (200, b"") for h in heads)
    assert heads[0].headers["content-type"].startswith("text/event-stream")
    assert replay.status_code == 200
    assert replay.text.rstrip().endswith("}") and "event: run_end" in replay.text


async def test_head_of_an_open_stream_ends_at_its_headers_and_frees_the_connection(
    base: str,
) -> None:
    # A conversation's follow stream stays open until the client leaves. A HEAD of it is
    # answered with the headers alone and ends there: the stream stops, and a keep-alive
    # client's next request on the same connection is served (it waited forever before).
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    async with httpx.AsyncClient(base_url=base, timeout=5, limits=limits) as http:
        conversation_id = (await http.post("/api/conversations", json={})).json()["id"]
        head = await http.head(f"/api/conversations/{conversation_id}/events")
        after = await http.get(f"/api/conversations/{conversation_id}")
        streams = (await http.get("/metrics")).text

    assert (head.status_code, head.content) == (200, b"")
    assert head.headers["content-type"].startswith("text/event-stream")
    assert after.status_code == 200
    assert after.json()["id"] == conversation_id
    assert _open_streams(streams) == 0


def _open_streams(metrics: str) -> float:
    for line in metrics.splitlines():
        if line.startswith("chatbff_active_streams "):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError("no active-streams gauge in /metrics")
