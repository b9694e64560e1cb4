"""A long-running tool over real HTTP (a real process, SQLite and Postgres): a tab that
follows the conversation (`GET /api/conversations/{id}/events`) sees the turn end with
the card `loading`, then the run the job's result starts, with the finished card, live."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from tests.e2e.conftest import Launch
from tests.e2e.test_follow_e2e import follow, run_ends, send, serve
from tests.fakes.openai_upstream import Completion, FakeOpenAIUpstream, ToolCall

pytestmark = pytest.mark.e2e


@pytest.fixture
async def http(
    launch: Launch, openai_upstream: FakeOpenAIUpstream, database_url: str
) -> AsyncIterator[httpx.AsyncClient]:
    modules = '["app.examples.ops.backup"]'
    async with serve(launch, openai_upstream, database_url, TOOL_MODULES=modules) as client:
        yield client


async def test_a_tab_following_the_conversation_sees_the_result_continue_it(
    http: httpx.AsyncClient, openai_upstream: FakeOpenAIUpstream
) -> None:
    args = {"database": "main", "seconds": 0.5}
    openai_upstream.enqueue(
        Completion(tool_calls=[ToolCall("export_database", args, id="call_exp")]),
        Completion(text="The export is in s3."),
    )
    cid = (await http.post("/api/conversations", json={})).json()["id"]

    async with follow(http, cid) as tab:
        first = await send(http, cid, "Back up the main database.")
        seen = await tab.wait_for(lambda events: run_ends(events) == ["requires_action"])
        started = [e for e in seen if e.event == "part_update"]
        assert [e.data["cause"] for e in started] == ["background_started"]
        assert started[0].data["part"]["data"]["status"] == "loading"
        seen = await tab.wait_for(
            lambda events: run_ends(events) == ["requires_action", "completed"]
        )

    runs = [e.data["run_id"] for e in seen if e.event == "run_start"]
    assert runs[0] == first and len(runs) == 2
    finished = [
        e for e in seen if e.event == "part_update" and e.data["cause"] != "background_started"
    ]
    assert finished and all(e.data["cause"] == "background_finished" for e in finished)
    assert finished[-1].data["part"]["data"]["status"] == "success"
    assert finished[-1].data["part"]["data"]["result"]["archive"].startswith("s3://backups/main/")
    text = "".join(e.data["delta"] for e in seen if e.event == "text_delta")
    assert text == "The export is in s3."
