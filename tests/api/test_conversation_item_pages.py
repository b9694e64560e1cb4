"""`GET /v1/conversations/{id}/items` page by page, on SQLite and Postgres.

Differential: every page (both orders, several limits, every item id as the cursor, an
unknown cursor) must equal the page the whole history gives (`page(items_of(history))`),
on a conversation whose messages yield no, one or several items (tool calls and their
outputs, approvals, attachments, system messages, superseded versions). And bounded: a
page reads the messages it returns (plus what `has_more` needs), not the whole history.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import event, select

from app.api.conversation_items import Item, items_of
from app.domain.messages import Message
from app.domain.parts import (
    Elicitation,
    FileData,
    FilePart,
    ThinkingData,
    ThinkingPart,
    text_part,
    tool_part,
)
from app.settings import Settings
from app.store.message_codec import decode_message
from app.store.repos import messages as messages_module
from app.store.tables.core import ConversationRow
from tests.fakes.db import ApiClient, MakeApi


def page(
    items: list[Item], *, after: str | None, limit: int, order: str
) -> tuple[list[Item], bool]:
    """The oracle: a page of the whole history's items after the item `after` in `order`
    (`asc` oldest first), and whether more follow."""
    ordered = items if order == "asc" else list(reversed(items))
    start = 0
    if after is not None:
        ids = [i["id"] for i in ordered]
        start = ids.index(after) + 1 if after in ids else len(ordered)
    chunk = ordered[start : start + limit]
    return chunk, start + limit < len(ordered)


SERVER_TOOL = "add_node"  # an example tool: a server tool
CLIENT_TOOL = "pick_colour"  # unknown to the server: the browser runs it


@pytest.fixture
async def api(make_api: MakeApi, app_settings: Settings) -> AsyncIterator[ApiClient]:
    settings = app_settings.model_copy(
        update={"example_tools_enabled": True, "rate_limit_requests_per_minute": 0}
    )
    async with make_api(settings) as client:
        yield client


def _mixed(n: int) -> Message:
    """The n-th message of a conversation that has every kind of item."""
    kind = n % 7
    mid = f"m{n}"
    if kind == 0:
        file = FilePart(data=FileData(id=f"f{n}", name="a.txt"))
        return Message(id=mid, role="user", content=[text_part(f"hi {n}"), file])
    if kind == 1:
        calls = [
            text_part("looking"),
            tool_part(
                tool_call_id=f"c{n}a", tool_name=SERVER_TOOL, status="success", result={"ok": n}
            ),
            text_part("more"),
            text_part("and more"),
            tool_part(tool_call_id=f"c{n}b", tool_name=CLIENT_TOOL, status="success", result=1),
            tool_part(tool_call_id=f"c{n}c", tool_name=CLIENT_TOOL, status="loading"),
            text_part("done"),
        ]
        return Message(id=mid, role="assistant", content=calls)
    if kind == 2:
        return Message(id=mid, role="system", content="be brief")
    if kind == 3:
        thinking = ThinkingPart(data=ThinkingData(content="hmm"))
        return Message(id=mid, role="assistant", content=[thinking])  # no item at all
    if kind == 4:
        waiting = tool_part(
            tool_call_id=f"c{n}",
            tool_name=SERVER_TOOL,
            status="waitingConfirmation",
            approval_id=f"appr{n}",
        )
        failed = tool_part(
            tool_call_id=f"c{n}x", tool_name=SERVER_TOOL, status="error", body_content="no"
        )
        return Message(id=mid, role="assistant", content=[failed, waiting])
    if kind == 5:
        asking = tool_part(tool_call_id=f"c{n}", tool_name=SERVER_TOOL, status="waitingSubmission")
        asking.data.elicitation = Elicitation(id=f"e{n}", message="which?", requestedSchema={})
        return Message(id=mid, role="assistant", content=[text_part("first"), asking])
    return Message(id=mid, role="user", content=f"plain {n}")


async def _owner(api: ApiClient, cid: str) -> str:
    async with api.services.db.sessions() as session:
        found = await session.scalar(
            select(ConversationRow.owner_id).where(ConversationRow.id == cid)
        )
    assert found is not None
    return found


async def _conversation(api: ApiClient, count: int) -> tuple[str, str]:
    """A conversation of `count` mixed messages (and a superseded tail re-sent)."""
    created = (await api.post("/v1/conversations", json={})).json()
    cid = created["id"]
    owner = await _owner(api, cid)
    async with api.services.db.write() as tx:
        for n in range(count):
            await tx.messages.append(owner, cid, _mixed(n))
        # An edit: the last three are superseded, then new versions follow.
        await tx.messages.supersede(owner, cid, f"m{count - 3}")
        for n in range(count, count + 4):
            await tx.messages.append(owner, cid, _mixed(n))
    return cid, owner


async def _whole(api: ApiClient, owner: str, cid: str) -> list[dict[str, Any]]:
    async with api.services.db.read() as tx:
        history = await tx.messages.history(owner, cid)
    return items_of(history, api.services.tool_catalog.knows)


async def test_every_page_is_the_page_of_the_whole_history(api: ApiClient) -> None:
    cid, owner = await _conversation(api, 30)
    items = await _whole(api, owner, cid)
    ids = [i["id"] for i in items]
    assert len(ids) > 40 and {"mcp_call", "function_call_output"} <= {i["type"] for i in items}
    cursors: list[str | None] = [None, "nope", f"{ids[0]}_9", *ids]
    for order in ("asc", "desc"):
        for limit in (1, 2, 3, 7, 20, 100):
            for after in cursors:
                params: dict[str, Any] = {"order": order, "limit": limit}
                if after is not None:
                    params["after"] = after
                response = await api.get(f"/v1/conversations/{cid}/items", params=params)
                assert response.status_code == 200, response.text
                chunk, more = page(items, after=after, limit=limit, order=order)
                expected = {
                    "object": "list",
                    "data": chunk,
                    "first_id": chunk[0]["id"] if chunk else None,
                    "last_id": chunk[-1]["id"] if chunk else None,
                    "has_more": more,
                }
                assert response.json() == expected, (order, limit, after)


async def test_every_item_is_retrieved_as_the_whole_history_has_it(api: ApiClient) -> None:
    cid, owner = await _conversation(api, 30)
    items = await _whole(api, owner, cid)
    for item in items:
        response = await api.get(f"/v1/conversations/{cid}/items/{item['id']}")
        assert response.status_code == 200 and response.json() == item
    for unknown in ("nope", "m0_9", "m1_output", "m2"):  # m2: a system message, no item
        response = await api.get(f"/v1/conversations/{cid}/items/{unknown}")
        assert response.status_code == 404 and response.json()["error"]["code"] == "item_not_found"


async def test_walking_all_pages_gives_every_item_once(api: ApiClient) -> None:
    cid, owner = await _conversation(api, 23)
    items = await _whole(api, owner, cid)
    for order in ("asc", "desc"):
        for limit in (1, 4, 100):
            seen: list[str] = []
            after: str | None = None
            while True:
                params: dict[str, Any] = {"order": order, "limit": limit}
                if after is not None:
                    params["after"] = after
                body = (await api.get(f"/v1/conversations/{cid}/items", params=params)).json()
                seen += [i["id"] for i in body["data"]]
                if not body["has_more"]:
                    break
                after = body["last_id"]
            expected = [i["id"] for i in items]
            assert seen == (expected if order == "asc" else expected[::-1])


@contextmanager
def _reads(api: ApiClient, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """Counts statements sent and message rows decoded while the block runs."""
    counts = {"statements": 0, "messages": 0}
    decode = decode_message

    def counting(payload: dict[str, Any], version: int) -> Message:
        counts["messages"] += 1
        return decode(payload, version)

    def sent(*_: object) -> None:
        counts["statements"] += 1

    engine = api.services.db.engine.sync_engine
    monkeypatch.setattr(messages_module, "decode_message", counting)
    event.listen(engine, "before_cursor_execute", sent)
    try:
        yield counts
    finally:
        event.remove(engine, "before_cursor_execute", sent)
        monkeypatch.undo()


async def test_a_page_reads_what_it_returns_not_the_whole_history(
    api: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    created = (await api.post("/v1/conversations", json={})).json()
    cid = created["id"]
    owner = await _owner(api, cid)
    async with api.services.db.write() as tx:
        for n in range(300):
            await tx.messages.append(owner, cid, Message(id=f"u{n}", role="user", content="x"))
            if n % 10 == 0:  # a tool call, a browser's call and its output, an approval
                await tx.messages.append(owner, cid, _mixed(7 * n + 1))
                await tx.messages.append(owner, cid, _mixed(7 * n + 4))
    url = f"/v1/conversations/{cid}/items"
    cases: list[dict[str, str | int]] = [
        {"limit": 20},
        {"limit": 20, "order": "asc"},
        {"limit": 20, "order": "asc", "after": "u150"},
        {"limit": 20, "order": "desc", "after": "u150"},
        {"limit": 20, "order": "asc", "after": "c1051a"},
        {"limit": 20, "order": "desc", "after": "c1051b_output"},
        {"limit": 20, "order": "asc", "after": "appr1054"},
        {"limit": 20, "order": "desc", "after": "m1051_2"},
        {"limit": 20, "order": "asc", "after": "nope"},
    ]
    for params in cases:
        with _reads(api, monkeypatch) as counts:
            response = await api.get(url, params=params)
        assert response.status_code == 200, response.text
        assert len(response.json()["data"]) == (0 if params.get("after") == "nope" else 20)
        # 20 on the page, one for has_more, and the cursor's own message.
        assert counts["messages"] <= 22, (params, counts)
        assert counts["statements"] <= 6, (params, counts)
    for item_id in ("u150", "c1051a", "c1051b_output", "appr1054", "m1051_2"):
        with _reads(api, monkeypatch) as counts:
            response = await api.get(f"{url}/{item_id}")
        assert response.status_code == 200 and response.json()["id"] == item_id
        assert counts["messages"] <= 2 and counts["statements"] <= 5, (item_id, counts)
