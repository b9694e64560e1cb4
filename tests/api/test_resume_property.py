"""Resume is exact: a reader cut at any point that reconnects with `Last-Event-ID` gets
the remaining events, no loss, no duplicates, in order (on SQLite and Postgres)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.providers.scripted import Script, ScriptedProvider, ScriptedToolCall, ScriptedTurn
from app.settings import Settings
from tests.api.sse_frames import Frame, parse
from tests.fakes.db import ApiClient, MakeApi

WORDS = " ".join(f"word{i}" for i in range(24))
# One run: text, a call of an unknown tool (an error result goes back to the model),
# then more text. Many events of every common kind.
RUN = [
    ScriptedTurn(
        text=WORDS,
        tool_calls=[
            ScriptedToolCall(name="no_such_tool", args={"q": "a fairly long argument"}),
            ScriptedToolCall(name="other_missing_tool", args={"n": 12345}),
        ],
    ),
    ScriptedTurn(text=WORDS),
]
EXAMPLES = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


@pytest.fixture
def provider() -> ScriptedProvider:
    return ScriptedProvider(Script(mode="sequence", turns=RUN), delay_ms=0)


@pytest.fixture
async def client(
    make_api: MakeApi, app_settings: Settings, provider: ScriptedProvider
) -> AsyncIterator[ApiClient]:
    async with make_api(app_settings, providers={"scripted": provider}) as api:
        yield api


async def start_run(client: ApiClient) -> tuple[str, dict[str, Any]]:
    created = await client.post("/api/conversations", json={})
    cid: str = created.json()["id"]
    response = await client.post(f"/api/conversations/{cid}/messages", json={"content": "Go"})
    assert response.status_code == 202, response.text
    return cid, response.json()


async def read(client: ApiClient, url: str, after: int | None = None) -> list[Frame]:
    headers = {} if after is None else {"Last-Event-ID": str(after)}
    response = await client.get(url, headers=headers)
    if response.status_code == 204:  # the run ended and nothing is left after `after`
        return []
    assert response.status_code == 200, response.text
    return parse(response.text)


def assert_exact(frames: list[Frame]) -> None:
    assert [f.id for f in frames] == list(range(1, len(frames) + 1))
    assert frames[-1].event == "run_end"


@pytest.fixture
async def finished_run(client: ApiClient) -> tuple[str, list[Frame]]:
    _, started = await start_run(client)
    full = await read(client, started["events_url"])
    assert_exact(full)
    assert len(full) > 40
    return started["events_url"], full


@EXAMPLES
@given(data=st.data())
async def test_any_cut_of_a_finished_run_resumes_exactly(
    client: ApiClient, finished_run: tuple[str, list[Frame]], data: st.DataObject
) -> None:
    url, full = finished_run
    k = data.draw(st.integers(min_value=0, max_value=len(full)), label="cut")

    head = (await read(client, url))[:k]
    rest = await read(client, url, after=k)

    assert head + rest == full


@EXAMPLES
@given(data=st.data())
async def test_any_cut_resumes_exactly_from_the_database_after_a_restart(
    make_api: MakeApi,
    app_settings: Settings,
    finished_run: tuple[str, list[Frame]],
    data: st.DataObject,
) -> None:
    url, full = finished_run
    k = data.draw(st.integers(min_value=0, max_value=len(full)), label="cut")

    # A second app on the same database has no memory of the run: it reads the table.
    async with make_api(
        app_settings, providers={"scripted": ScriptedProvider(Script(turns=[]))}
    ) as fresh:
        rest = await read(fresh, url, after=k)

    assert full[:k] + rest == full


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
async def test_a_cut_while_the_run_is_live_resumes_exactly(
    client: ApiClient, data: st.DataObject
) -> None:
    # Paced, so that the cut lands while the run still streams.
    paced = ScriptedProvider(Script(mode="sequence", turns=RUN), delay_ms=2)
    client.services.providers["scripted"] = paced
    cid, started = await start_run(client)
    k = data.draw(st.integers(min_value=1, max_value=40), label="cut")
    owner = client.services.settings.local_user_id
    head: list[Frame] = []
    async for batch in client.services.runs.follow(owner, started["run_id"], conversation_id=cid):
        head += [Frame(i.seq, i.event.type, i.event.model_dump(mode="json")) for i in batch]
        if len(head) >= k:
            break
    head = head[:k]

    rest = await read(client, started["events_url"], after=k)

    full = await read(client, started["events_url"])
    assert_exact(full)
    assert [f.id for f in head + rest] == [f.id for f in full]
    assert [f.event for f in head + rest] == [f.event for f in full]
    assert rest == full[k:]


async def test_a_reader_that_saw_run_end_gets_nothing_more_after_a_restart(
    make_api: MakeApi, app_settings: Settings, finished_run: tuple[str, list[Frame]]
) -> None:
    url, full = finished_run

    async with make_api(
        app_settings, providers={"scripted": ScriptedProvider(Script(turns=[]))}
    ) as fresh:
        rest = await read(fresh, url, after=len(full))
        stop = await fresh.get(url, headers={"Last-Event-ID": str(len(full))})

    assert rest == []
    assert stop.status_code == 204  # what tells a browser's EventSource to stop reconnecting
