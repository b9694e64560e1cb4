"""Following a conversation end to end (a real process, real HTTP on loopback, SQLite and
Postgres): `GET /api/conversations/{id}/events` carries every run of the conversation as
it happens (after the person's message that starts it, from whichever tab) and the cards
a decision changes, resumes with Last-Event-ID across runs (after a restart too, from the
database alone), opens with a stream token, beats while idle, and is 404 for anyone
else's conversation."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from httpx_sse import aconnect_sse

from tests.auth.tokens import HS_SECRET, bearer, hs_token
from tests.e2e.conftest import Launch, openai_backed
from tests.fakes.openai_upstream import Completion, FakeOpenAIUpstream, ToolCall

pytestmark = pytest.mark.e2e

WAIT = 20.0


@dataclass(frozen=True)
class Event:
    id: str
    event: str
    data: dict[str, Any]


@dataclass
class Tab:
    """A browser tab's EventSource on a conversation, read in the background."""

    events: list[Event] = field(default_factory=list)
    status: int | None = None
    _task: asyncio.Task[None] | None = None

    async def wait_for(self, done: Callable[[list[Event]], bool]) -> list[Event]:
        async with asyncio.timeout(WAIT):
            while not done(self.events):
                assert self._task is not None
                if self._task.done():
                    self._task.result()
                    raise AssertionError(f"the stream ended: {self.events}")
                await asyncio.sleep(0.02)
        return list(self.events)


@contextlib.asynccontextmanager
async def follow(
    http: httpx.AsyncClient, cid: str, *, last_event_id: str | None = None
) -> AsyncIterator[Tab]:
    tab = Tab()
    headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
    opened = asyncio.Event()

    async def read() -> None:
        async with aconnect_sse(
            http, "GET", f"/api/conversations/{cid}/events", headers=headers
        ) as source:
            tab.status = source.response.status_code
            opened.set()
            if tab.status != 200:
                return
            async for sse in source.aiter_sse():
                if not sse.data:
                    continue  # a heartbeat comment, which an EventSource never dispatches
                tab.events.append(Event(sse.id, sse.event, json.loads(sse.data)))

    tab._task = asyncio.create_task(read())
    try:
        await tab.wait_for(lambda events: bool(events) or (opened.is_set() and tab.status != 200))
        yield tab
    finally:
        tab._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await tab._task


def run_ends(events: list[Event]) -> list[str]:
    return [e.data["status"] for e in events if e.event == "run_end"]


def position(event: Event) -> tuple[int, int]:
    feed, seq = event.id.split(".")
    return int(feed), int(seq)


@contextlib.asynccontextmanager
async def serve(
    launch: Launch, upstream: FakeOpenAIUpstream, database_url: str, **extra: str
) -> AsyncIterator[httpx.AsyncClient]:
    service = launch(
        **openai_backed(
            upstream.base_url,
            DATABASE_URL=database_url,
            EXAMPLE_TOOLS_ENABLED="true",
            JWT_SECRET=HS_SECRET,
            RATE_LIMIT_REQUESTS_PER_MINUTE="0",
            **extra,
        )
    )
    owner = bearer(hs_token(sub="owner", roles=["user"]))
    async with httpx.AsyncClient(base_url=service.base_url, timeout=15, headers=owner) as client:
        yield client


@pytest.fixture
async def http(
    launch: Launch, openai_upstream: FakeOpenAIUpstream, database_url: str
) -> AsyncIterator[httpx.AsyncClient]:
    async with serve(launch, openai_upstream, database_url) as client:
        yield client


async def send(http: httpx.AsyncClient, cid: str, content: str | list[dict[str, Any]]) -> str:
    started = await http.post(f"/api/conversations/{cid}/messages", json={"content": content})
    assert started.status_code == 202, started.text
    run_id: str = started.json()["run_id"]
    return run_id


async def test_a_tab_sees_every_run_and_a_decision_live_and_resumes_across_runs(
    http: httpx.AsyncClient, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(
        Completion(text="First answer, in a few pieces.", delay=0.01),
        Completion(tool_calls=[ToolCall("delete_node", {"id": "Ada"}, id="call_del")]),
        Completion(text="Done: nothing named Ada was there."),
    )
    cid = (await http.post("/api/conversations", json={})).json()["id"]

    async with follow(http, cid) as tab:
        [opened] = await tab.wait_for(lambda events: len(events) >= 1)
        assert opened.event == "follow"
        assert opened.data == {"type": "follow", "conversation_id": cid, "active_run_id": None}

        first = await send(http, cid, "Say something.")
        await tab.wait_for(lambda events: run_ends(events) == ["completed"])
        second = await send(http, cid, "Delete Ada.")
        seen = await tab.wait_for(
            lambda events: run_ends(events) == ["completed", "requires_action"]
        )
        [asked] = [e for e in seen if e.event == "confirm_required"]
        assert asked.data["run_id"] == second

        # Another tab (this test) decides: the follower gets the card's new state live.
        decided = await http.post(
            f"/api/approvals/{asked.data['approval_id']}", json={"decision": "approve"}
        )
        assert decided.status_code == 200, decided.text
        third = decided.json()["run_id"]
        seen = await tab.wait_for(lambda events: len(run_ends(events)) == 3)

    updates = [e for e in seen if e.event == "part_update"]
    assert updates, "the decision reached the follower"
    assert updates[0].data["cause"] == "approval_approved"
    assert updates[0].data["part"]["id"] == "call_del"
    stored = (await http.get(f"/api/conversations/{cid}")).json()["messages"]
    [card] = [
        p
        for m in stored
        if isinstance(m["content"], list)
        for p in m["content"]
        if p.get("id") == "call_del"
    ]
    assert updates[0].data["part"] == card  # what a reload would show
    assert card["data"]["status"] == "error"  # it ran: there is no node Ada
    starts = [e.data["run_id"] for e in seen if e.event == "run_start"]
    assert starts == [first, second, third]
    assert run_ends(seen) == ["completed", "requires_action", "completed"]
    positions = [position(e) for e in seen]
    assert positions == sorted(positions) and len(set(positions)) == len(positions)
    text = "".join(e.data["delta"] for e in seen if e.event == "text_delta")
    assert text == "First answer, in a few pieces.Done: nothing named Ada was there."

    # Reconnect at every cut: exactly what came after it, across the runs, then live.
    for cut in range(1, len(seen)):
        expected = 1 + len(seen) - cut
        async with follow(http, cid, last_event_id=seen[cut - 1].id) as again:
            await again.wait_for(lambda events, n=expected: len(events) >= n)  # type: ignore[misc]
            await asyncio.sleep(0.05 if cut % 7 else 0.5)  # nothing more arrives
            rest = list(again.events)
        assert rest[0].event == "follow"
        assert rest[0].id == seen[cut - 1].id
        assert rest[1:] == seen[cut:], f"resumed after {seen[cut - 1].id}"


async def test_a_tab_sees_the_message_another_tab_sends_before_its_answer(
    http: httpx.AsyncClient, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(Completion(text="Hello to you."), Completion(text="Again."))
    cid = (await http.post("/api/conversations", json={})).json()["id"]

    async with follow(http, cid) as tab:
        await tab.wait_for(lambda events: len(events) >= 1)
        first = await send(http, cid, "Hello from the other tab.")
        await tab.wait_for(lambda events: run_ends(events) == ["completed"])
        second = await send(http, cid, [{"type": "text", "data": {"text": "And again."}}])
        seen = await tab.wait_for(lambda events: len(run_ends(events)) == 2)

    names = [e.event for e in seen]
    assert names[:3] == ["follow", "message_added", "run_start"]
    added = [e for e in seen if e.event == "message_added"]
    assert [a.data["run_id"] for a in added] == [first, second]
    # The message as the conversation stores it: what a reload would show.
    stored = (await http.get(f"/api/conversations/{cid}")).json()["messages"]
    asked = [m for m in stored if m["role"] == "user"]
    assert [a.data["message"] for a in added] == asked
    assert asked[0]["content"] == "Hello from the other tab."
    # Each comes at its run's position 0, just before the run's first event.
    for message in added:
        after = seen[seen.index(message) + 1]
        assert (after.event, after.data["run_id"]) == ("run_start", message.data["run_id"])
        assert position(message) == (position(after)[0], 0)

    # A tab that resumes past the message does not get it again; one before it does.
    async with follow(http, cid, last_event_id=added[1].id) as again:
        rest = await again.wait_for(lambda events: len(run_ends(events)) == 1)
    assert [e.event for e in rest][:2] == ["follow", "run_start"]
    async with follow(http, cid, last_event_id=seen[-len(rest) - 1].id) as again:
        rest = await again.wait_for(lambda events: len(run_ends(events)) == 1)
    assert rest[1] == added[1]


async def test_a_fresh_tab_reads_the_run_in_progress_from_its_start(
    http: httpx.AsyncClient, openai_upstream: FakeOpenAIUpstream
) -> None:
    words = " ".join(f"w{i}" for i in range(60))
    openai_upstream.enqueue(Completion(text=words, delay=0.02))
    cid = (await http.post("/api/conversations", json={})).json()["id"]
    run_id = await send(http, cid, "Talk.")
    events_url = f"/api/conversations/{cid}/runs/{run_id}/events"
    async with http.stream("GET", events_url) as run_stream:  # it has started talking
        async for line in run_stream.aiter_lines():
            if line.startswith("event: text_delta"):
                break

    async with follow(http, cid) as tab:
        seen = await tab.wait_for(lambda events: run_ends(events) == ["completed"])

    assert seen[0].data["active_run_id"] == run_id
    assert seen[1].event == "run_start"
    assert "".join(e.data["delta"] for e in seen if e.event == "text_delta") == words


async def test_another_users_conversation_is_a_404_and_a_bad_position_a_400(
    http: httpx.AsyncClient,
) -> None:
    cid = (await http.post("/api/conversations", json={})).json()["id"]
    stranger = bearer(hs_token(sub="stranger", roles=["user"]))

    foreign = await http.get(f"/api/conversations/{cid}/events", headers=stranger)
    unknown = await http.get("/api/conversations/conv_nope/events")
    garbled = await http.get(f"/api/conversations/{cid}/events", headers={"Last-Event-ID": "seven"})

    assert foreign.status_code == 404
    assert foreign.json()["error"]["code"] == unknown.json()["error"]["code"]
    assert unknown.status_code == 404
    assert garbled.status_code == 400


async def test_a_position_ahead_of_the_feed_reads_as_a_fresh_tab_and_sees_the_next_run(
    http: httpx.AsyncClient, openai_upstream: FakeOpenAIUpstream
) -> None:
    """A cursor kept across a database restore (or made up) is ahead of every entry; a
    tab holding one would otherwise wait, silently, for entries that never come."""
    openai_upstream.enqueue(Completion(text="Still here."))
    cid = (await http.post("/api/conversations", json={})).json()["id"]

    async with follow(http, cid, last_event_id="9000.12") as tab:
        await send(http, cid, "Anyone?")
        seen = await tab.wait_for(lambda events: run_ends(events) == ["completed"])

    assert seen[0].event == "follow"
    assert position(seen[0]) == (0, 0)
    assert "".join(e.data["delta"] for e in seen if e.event == "text_delta") == "Still here."


def card(events: list[Event], cause: str) -> dict[str, Any]:
    [update] = [e for e in events if e.event == "part_update" and e.data["cause"] == cause]
    part: dict[str, Any] = update.data["part"]
    return part


async def test_a_tab_sees_a_batch_applied_then_undone_and_an_approval_expire(
    launch: Launch, openai_upstream: FakeOpenAIUpstream, database_url: str
) -> None:
    openai_upstream.enqueue(
        Completion(tool_calls=[ToolCall("add_node", {"label": "Person", "name": "Ada"}, id="c1")]),
        Completion(text="Proposed."),
        Completion(tool_calls=[ToolCall("delete_node", {"id": "Ada"}, id="c2")]),
    )
    async with serve(launch, openai_upstream, database_url, APPROVAL_TTL_SECONDS="4") as http:
        cid = (await http.post("/api/conversations", json={"mode": "propose"})).json()["id"]
        async with follow(http, cid) as tab:
            await send(http, cid, "Add Ada.")
            await tab.wait_for(lambda events: run_ends(events) == ["completed"])
            base = f"/api/conversations/{cid}/proposals"
            applied = await http.post(f"{base}/approve")
            assert applied.status_code == 200, applied.text
            await tab.wait_for(lambda events: "proposal_applied" in causes(events))
            undone = await http.post(f"{base}/undo")
            assert undone.status_code == 200, undone.text
            await tab.wait_for(lambda events: "proposal_undone" in causes(events))
            # A confirm tool left waiting past its time: the card turns into the error
            # the model will read, in every tab, without anyone deciding.
            await http.patch(f"/api/conversations/{cid}", json={"mode": "auto"})
            await send(http, cid, "Delete Ada.")
            seen = await tab.wait_for(lambda events: "approval_expired" in causes(events))
        stored = (await http.get(f"/api/conversations/{cid}")).json()["messages"]

    assert card(seen, "proposal_applied")["data"]["status"] == "success"
    assert card(seen, "proposal_undone")["data"]["status"] == "cancelled"
    assert card(seen, "proposal_undone")["data"]["result"]["undone"] is True
    expired = card(seen, "approval_expired")
    assert expired["id"] == "c2"
    assert expired["data"]["status"] == "error"
    assert "expired" in expired["data"]["bodyContent"]
    parts = {
        p["id"]: p
        for m in stored
        if isinstance(m["content"], list)
        for p in m["content"]
        if p["type"] == "tool"
    }
    assert parts["c1"] == card(seen, "proposal_undone")  # a reload shows the same cards
    assert parts["c2"] == expired


def causes(events: list[Event]) -> list[str]:
    return [e.data["cause"] for e in events if e.event == "part_update"]


async def test_after_a_restart_the_database_alone_resumes_the_follow_and_tokens_open_it(
    launch: Launch, openai_upstream: FakeOpenAIUpstream, tmp_path: Any
) -> None:
    openai_upstream.enqueue(Completion(text="One, two."), Completion(text="Three, four."))
    settings = openai_backed(
        openai_upstream.base_url, JWT_SECRET=HS_SECRET, HEARTBEAT_SECONDS="0.2"
    )
    owner = bearer(hs_token(sub="owner", roles=["user"]))
    first = launch(**settings)
    async with httpx.AsyncClient(base_url=first.base_url, timeout=15, headers=owner) as http:
        cid = (await http.post("/api/conversations", json={})).json()["id"]
        async with follow(http, cid) as tab:
            await send(http, cid, "1")
            await tab.wait_for(lambda events: len(run_ends(events)) == 1)
            await send(http, cid, "2")
            seen = await tab.wait_for(lambda events: len(run_ends(events)) == 2)
    assert first.stop() in (0, -signal.SIGTERM)  # uvicorn may end by the signal itself

    again = launch(db=first.db, **settings)
    path = f"/api/conversations/{cid}/events"
    async with httpx.AsyncClient(base_url=again.base_url, timeout=15) as http:
        minted = await http.post("/api/stream-tokens", json={"path": path}, headers=owner)
        assert minted.status_code == 200, minted.text
        token = minted.json()["token"]
        cut = 3  # inside the first run
        headers = {"Last-Event-ID": seen[cut - 1].id}
        expected = [seen[cut - 1].id] + [e.id for e in seen[cut:]]
        lines: list[str] = []
        async with http.stream("GET", f"{path}?token={token}", headers=headers) as response:
            assert response.status_code == 200
            async with asyncio.timeout(WAIT):
                async for line in response.aiter_lines():
                    lines.append(line)
                    replayed = sum(ln.startswith("id:") for ln in lines)
                    if line == ": heartbeat" and replayed >= len(expected):
                        # The replay is out and the idle stream beats (a loaded machine
                        # may beat in the middle of the replay too).
                        break
        refused = await http.get(path)  # no token, no bearer: the token was the credential

    ids = [ln.removeprefix("id: ") for ln in lines if ln.startswith("id:")]
    assert ids == expected
    assert refused.status_code == 401
