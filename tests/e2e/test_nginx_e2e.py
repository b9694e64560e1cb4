"""Two instances behind Debian's nginx (its `proxy_params` plus the README's SSE lines),
round-robin, so consecutive requests land on alternate instances: a conversation created on
one, its message sent to the other, its events read and resumed through both, a cancel on
whichever, the per-user run limit held across both, and a conversation followed through
the proxy while its runs start on either instance. Skipped without nginx."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from bench.nginx import installed
from bench.nginx import nginx as start_nginx
from tests.e2e.conftest import Launch, free_port
from tests.e2e.test_follow_e2e import follow, run_ends
from tests.e2e.test_instances_e2e import shared
from tests.e2e.test_resume_e2e import LONG, assert_gap_free, read_events, start_run, text_of
from tests.fakes.openai_upstream import Completion, FakeOpenAIUpstream
from tests.support.required import unavailable

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]


@pytest.fixture
def nginx(tmp_path: Path) -> Iterator[tuple[int, list[int]]]:
    """(nginx's port, its upstream ports): start the instances on the upstream ports."""
    if not installed():
        unavailable("nginx is not installed (apt-get install nginx-light)")
    port, upstreams = free_port(), [free_port(), free_port()]
    with start_nginx(tmp_path, port, upstreams):
        yield port, upstreams


@pytest.fixture
async def proxied(
    nginx: tuple[int, list[int]],
    launch: Launch,
    openai_upstream: FakeOpenAIUpstream,
    postgres_url: str,
) -> AsyncIterator[httpx.AsyncClient]:
    port, upstreams = nginx
    settings = shared(openai_upstream, postgres_url, runs_at_once=1)
    for upstream in upstreams:
        launch(port=upstream, **settings)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=15) as http:
        deadline = time.monotonic() + 10
        while (await http.get("/healthz")).status_code != 200:
            assert time.monotonic() < deadline, "nginx never answered"
        yield http


async def test_runs_behave_as_on_one_process_behind_a_round_robin_proxy(
    proxied: httpx.AsyncClient, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(Completion(text=LONG, delay=0.01))
    openai_upstream.enqueue(Completion(text=LONG, delay=0.05))
    cid, _, url = await start_run(proxied)

    # One run at a time per user, counted in Redis whichever instance is asked.
    for _ in range(2):
        other = (await proxied.post("/api/conversations", json={})).json()["id"]
        second = await proxied.post(f"/api/conversations/{other}/messages", json={"content": "x"})
        assert second.status_code == 429, second.text
    first_ten = await read_events(proxied, url, limit=10)
    whole, rest = await read_events(proxied, url), await read_events(proxied, url, after=10)
    assert_gap_free(whole)
    assert whole == first_ten + rest and text_of(whole) == LONG
    assert whole[-1].data["status"] == "completed"

    cid, run_id, url = await start_run(proxied)
    await read_events(proxied, url, limit=3)
    for _ in range(2):  # one of the two lands on the instance that does not run it
        cancelled = await proxied.post(f"/api/conversations/{cid}/runs/{run_id}/cancel")
        assert cancelled.json()["status"] == "cancelled"
    assert (await read_events(proxied, url))[-1].data["status"] == "cancelled"


async def test_a_conversation_is_followed_through_the_proxy_across_runs_on_both_instances(
    proxied: httpx.AsyncClient, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(*(Completion(text=f"Answer {i}.", delay=0.01) for i in range(3)))
    cid = (await proxied.post("/api/conversations", json={})).json()["id"]

    async with follow(proxied, cid) as tab:
        for i in range(3):  # round-robin: the runs start on alternate instances
            sent = await proxied.post(f"/api/conversations/{cid}/messages", json={"content": "x"})
            assert sent.status_code == 202, sent.text
            await tab.wait_for(lambda events, n=i + 1: len(run_ends(events)) == n)  # type: ignore[misc]
        seen = list(tab.events)

    text = "".join(e.data["delta"] for e in seen if e.event == "text_delta")
    assert text == "Answer 0.Answer 1.Answer 2."
    assert run_ends(seen) == ["completed"] * 3
    async with follow(proxied, cid, last_event_id=seen[3].id) as again:
        rest = await again.wait_for(lambda events: len(events) >= 1 + len(seen) - 4)
    assert rest[1:] == seen[4:]
