"""One caller cannot hold event streams open without end (a real process, real HTTP on
loopback): past `RATE_LIMIT_OPEN_STREAMS` a reader's GET is 429 `open_streams` with
`Retry-After` before anything is opened, another user is not held back, and a stream
that closes gives its slot back."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import httpx
import pytest

from tests.auth.tokens import HS_SECRET, bearer, hs_token
from tests.e2e.conftest import Launch

pytestmark = pytest.mark.e2e

WAIT = 10.0


@contextlib.asynccontextmanager
async def opened(http: httpx.AsyncClient, url: str, headers: dict[str, str]) -> AsyncIterator[int]:
    """A GET held open (its status once the head arrived) until the block ends."""
    async with http.stream("GET", url, headers=headers) as response:
        yield response.status_code


async def status_of(http: httpx.AsyncClient, url: str, headers: dict[str, str]) -> httpx.Response:
    async with http.stream("GET", url, headers=headers) as response:
        if response.status_code != 200:
            await response.aread()
        return response


async def test_a_caller_past_the_open_streams_limit_is_429_and_others_are_not(
    launch: Launch,
) -> None:
    service = launch(JWT_SECRET=HS_SECRET, RATE_LIMIT_OPEN_STREAMS="2")
    alice = bearer(hs_token(sub="alice"))
    bob = bearer(hs_token(sub="bob"))
    async with httpx.AsyncClient(base_url=service.base_url, timeout=WAIT) as http:
        created = await http.post("/api/conversations", json={}, headers=alice)
        assert created.status_code == 201, created.text
        feed = f"/api/conversations/{created.json()['id']}/events"
        async with contextlib.AsyncExitStack() as held:
            for _ in range(2):
                assert await held.enter_async_context(opened(http, feed, alice)) == 200
            third = await held.enter_async_context(opened(http, "/api/queue/events", alice))
            refused = await status_of(http, feed, alice)
            assert (third, refused.status_code) == (429, 429), refused.text
            assert refused.json()["error"]["limit"] == "open_streams"
            assert int(refused.headers["retry-after"]) >= 1
            # Bob's streams are his own count.
            async with opened(http, "/api/queue/events", bob) as bobs:
                assert bobs == 200
        # Alice's streams closed: their slots come back once the server saw them end.
        async with asyncio.timeout(WAIT):
            while True:
                async with opened(http, "/api/queue/events", alice) as again:
                    if again == 200:
                        break
                await asyncio.sleep(0.05)


async def test_without_configuration_one_caller_still_cannot_hold_thousands(
    launch: Launch,
) -> None:
    # Nothing set: the default (256) bounds a token that opens feed after feed.
    service = launch(JWT_SECRET=HS_SECRET)
    alice = bearer(hs_token(sub="alice"))
    unbounded = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    async with httpx.AsyncClient(base_url=service.base_url, timeout=WAIT, limits=unbounded) as http:
        created = await http.post("/api/conversations", json={}, headers=alice)
        feed = f"/api/conversations/{created.json()['id']}/events"
        async with contextlib.AsyncExitStack() as held:
            statuses = [
                await held.enter_async_context(opened(http, feed, alice)) for _ in range(256)
            ]
            refused = await status_of(http, feed, alice)
    assert set(statuses) == {200}
    assert refused.status_code == 429, refused.text
    assert refused.json()["error"]["limit"] == "open_streams"
