"""`/api/conversations`: what a chat UI sees when it manages conversations."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from httpx import AsyncClient
from sqlalchemy import select

from app.container import Services
from app.domain.events import RunEnd, SequencedEvent
from app.domain.messages import Message
from app.store.repos import ConversationRepo, EventRepo, MessageRepo, RunRepo
from app.store.tables.core import AuditRow

URL = "/api/conversations"


async def _create(api: AsyncClient, **body: Any) -> dict[str, Any]:
    response = await api.post(URL, json=body)
    assert response.status_code == 201, response.text
    data: dict[str, Any] = response.json()
    return data


async def _say(services: Services, conversation_id: str, *messages: Message) -> None:
    async with services.db.sessions.begin() as s:
        for message in messages:
            await MessageRepo(s).append(services.settings.local_user_id, conversation_id, message)


async def _foreign_conversation(services: Services) -> str:
    async with services.db.sessions.begin() as s:
        return (await ConversationRepo(s).create("someone-else", title="secret")).id


async def test_create_answers_the_new_conversation(api: AsyncClient) -> None:
    created = await _create(
        api,
        title="Trip",
        mode="propose",
        metadata={"color": "blue"},
        scope={"workspace_id": "w1"},
    )

    assert created["id"].startswith("conv_")
    assert created["object"] == "conversation"
    assert created["title"] == "Trip"
    assert created["mode"] == "propose"
    assert created["scope"] == {"workspace_id": "w1"}
    assert created["message_count"] == 0
    assert created["archived"] is False
    assert created["active_run_id"] is None


async def test_a_conversation_reads_like_an_openai_conversation_for_aikit(
    api: AsyncClient, api_services: Services
) -> None:
    created = await _create(api, metadata={"color": "blue"})
    await _say(api_services, created["id"], Message(role="user", content="Plan a trip"))

    item = (await api.get(URL)).json()["data"][0]

    assert isinstance(item["created_at"], int)
    assert int(datetime.fromisoformat(item["created_at_iso"]).timestamp()) == item["created_at"]
    assert item["metadata"] == {
        "color": "blue",
        "title": "Plan a trip",
        "last_message": "Plan a trip",
    }


async def test_an_unknown_model_is_model_not_found(api: AsyncClient) -> None:
    response = await api.post(URL, json={"model": "no-such-model"})

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "model_not_found"


async def test_a_smuggled_owner_id_is_refused(api: AsyncClient) -> None:
    response = await api.post(URL, json={"title": "x", "owner_id": "someone-else"})

    assert response.status_code == 422
    assert response.json()["error"]["code"] == "validation_error"


async def test_an_unknown_patch_field_is_refused(api: AsyncClient) -> None:
    created = await _create(api)
    response = await api.patch(f"{URL}/{created['id']}", json={"owner_id": "someone-else"})

    assert response.status_code == 422


async def test_reserved_metadata_keys_are_refused(api: AsyncClient) -> None:
    response = await api.post(URL, json={"metadata": {"title": "sneaky"}})

    assert response.status_code == 422


async def test_list_pages_through_every_conversation_newest_first(api: AsyncClient) -> None:
    ids = [(await _create(api, title=f"c{i}"))["id"] for i in range(5)]
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        params: dict[str, Any] = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        page = (await api.get(URL, params=params)).json()
        seen += [c["id"] for c in page["data"]]
        pages += 1
        cursor = page["next_cursor"]
        assert page["has_more"] is (cursor is not None)
        if cursor is None:
            break

    assert seen == list(reversed(ids))
    assert pages == 3


async def test_list_limit_out_of_range_is_refused(api: AsyncClient) -> None:
    response = await api.get(URL, params={"limit": 101})

    assert response.status_code == 422


async def test_a_bad_cursor_is_a_clear_400(api: AsyncClient) -> None:
    response = await api.get(URL, params={"cursor": "garbage"})

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_cursor"


async def test_list_filters_archived(api: AsyncClient) -> None:
    live = (await _create(api))["id"]
    gone = (await _create(api))["id"]
    await api.delete(f"{URL}/{gone}")

    async def ids(archived: str) -> set[str]:
        page = (await api.get(URL, params={"archived": archived})).json()
        return {c["id"] for c in page["data"]}

    assert await ids("false") == {live}
    assert await ids("true") == {gone}
    assert await ids("all") == {live, gone}


async def test_list_searches_titles(api: AsyncClient) -> None:
    hit = (await _create(api, title="Weekend in Lisbon"))["id"]
    await _create(api, title="Tax return")

    page = (await api.get(URL, params={"q": "LISBON"})).json()

    assert [c["id"] for c in page["data"]] == [hit]


async def test_list_searches_titles_ignoring_case_beyond_ascii(api: AsyncClient) -> None:
    # SQLite's own lower() folds ASCII alone: "ÜBER" missed "Über" there, not on Postgres.
    hit = (await _create(api, title="Über Straße Ærø"))["id"]
    await _create(api, title="Tax return")

    found = [
        [c["id"] for c in (await api.get(URL, params={"q": q})).json()["data"]]
        for q in ("über", "ÜBER", "æRØ")
    ]

    assert found == [[hit], [hit], [hit]]


async def test_list_never_shows_another_users_conversations(
    api: AsyncClient, api_services: Services
) -> None:
    await _foreign_conversation(api_services)

    assert (await api.get(URL, params={"archived": "all"})).json()["data"] == []


async def test_the_first_user_message_titles_the_conversation_at_a_word(
    api: AsyncClient, api_services: Services
) -> None:
    created = await _create(api)
    long = "Can you help me compare three laptops for video editing under two thousand euros?"
    await _say(api_services, created["id"], Message(role="user", content=long))

    title = (await api.get(f"{URL}/{created['id']}")).json()["title"]

    assert title == "Can you help me compare three laptops for video editing"
    assert long.startswith(title)


async def test_get_answers_messages_as_typed_parts(
    api: AsyncClient, api_services: Services
) -> None:
    created = await _create(api)
    await _say(
        api_services,
        created["id"],
        Message(role="user", content="Hi"),
        Message(role="assistant", content=[{"type": "text", "data": {"text": "Hello"}}]),
    )

    body = (await api.get(f"{URL}/{created['id']}")).json()

    assert [m["role"] for m in body["messages"]] == ["user", "assistant"]
    assert body["messages"][1]["content"] == [{"type": "text", "data": {"text": "Hello"}}]
    assert body["message_count"] == 2


async def test_get_shows_the_active_run_for_a_second_tab(
    api: AsyncClient, api_services: Services
) -> None:
    created = await _create(api)
    async with api_services.db.sessions.begin() as s:
        await ConversationRepo(s).claim_active_run(
            api_services.settings.local_user_id, created["id"], "run_live"
        )

    body = (await api.get(f"{URL}/{created['id']}")).json()

    assert body["active_run_id"] == "run_live"


async def test_rename_keeps_the_title_over_later_messages(
    api: AsyncClient, api_services: Services
) -> None:
    created = await _create(api)
    renamed = await api.patch(f"{URL}/{created['id']}", json={"title": "Mine"})
    await _say(api_services, created["id"], Message(role="user", content="Plan a trip"))

    assert renamed.json()["title"] == "Mine"
    assert (await api.get(f"{URL}/{created['id']}")).json()["title"] == "Mine"


async def test_patch_changes_mode_and_metadata(api: AsyncClient) -> None:
    created = await _create(api, metadata={"a": 1})
    body = (
        await api.patch(f"{URL}/{created['id']}", json={"mode": "propose", "metadata": {"b": 2}})
    ).json()

    assert body["mode"] == "propose"
    assert body["metadata"] == {"b": 2}


async def test_delete_archives_and_patch_restores(api: AsyncClient) -> None:
    created = await _create(api)
    deleted = await api.delete(f"{URL}/{created['id']}")
    archived = (await api.get(f"{URL}/{created['id']}")).json()
    restored = (await api.patch(f"{URL}/{created['id']}", json={"archived": False})).json()

    assert deleted.status_code == 204
    assert archived["archived"] is True
    assert restored["archived"] is False
    assert restored["archived_at"] is None


async def test_purge_removes_the_conversation_and_everything_in_it(
    api: AsyncClient, api_services: Services
) -> None:
    user = api_services.settings.local_user_id
    created = await _create(api)
    await _say(api_services, created["id"], Message(role="user", content="hi"))
    async with api_services.db.sessions.begin() as s:
        await RunRepo(s).create(user, created["id"], "run_p", "scripted", None)
        await EventRepo(s).append_many(
            "run_p", [SequencedEvent(seq=1, event=RunEnd(run_id="run_p", status="completed"))]
        )

    purged = await api.delete(f"{URL}/{created['id']}", params={"purge": "true"})

    assert purged.status_code == 204
    assert (await api.get(f"{URL}/{created['id']}")).status_code == 404
    async with api_services.db.sessions() as s:
        assert await EventRepo(s).after("run_p", 0) == []


async def test_archive_and_purge_are_audited(api: AsyncClient, api_services: Services) -> None:
    created = await _create(api)
    await api.delete(f"{URL}/{created['id']}")
    await api.delete(f"{URL}/{created['id']}", params={"purge": "true"})
    async with api_services.db.sessions() as s:
        rows = (await s.execute(select(AuditRow.action, AuditRow.target_id))).all()

    assert sorted(rows) == [
        ("conversation.archive", created["id"]),
        ("conversation.purge", created["id"]),
    ]


@pytest.mark.parametrize(
    ("method", "suffix", "kwargs"),
    [
        ("GET", "", {}),
        ("PATCH", "", {"json": {"title": "mine now"}}),
        ("DELETE", "", {}),
        ("DELETE", "?purge=true", {}),
    ],
    ids=["get", "patch", "archive", "purge"],
)
async def test_another_users_conversation_is_not_found_on_every_route(
    api: AsyncClient,
    api_services: Services,
    method: str,
    suffix: str,
    kwargs: dict[str, Any],
) -> None:
    foreign = await _foreign_conversation(api_services)

    response = await api.request(method, f"{URL}/{foreign}{suffix}", **kwargs)
    missing = await api.request(method, f"{URL}/conv_missing{suffix}", **kwargs)

    assert response.status_code == 404
    assert response.json() == missing.json()
    assert response.json()["error"]["code"] == "not_found"
    async with api_services.db.sessions() as s:
        assert (await ConversationRepo(s).get("someone-else", foreign)).title == "secret"
