"""`Idempotency-Key` on the routes that create things: a client that lost the answer to a
create sends it again with the same key and gets the first answer, its ids included,
and nothing is created twice; also when the first answer was a 503 from a COMMIT that
landed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import openai
import pytest
from openai.types.responses import EasyInputMessageParam
from pydantic import SecretStr
from sqlalchemy import event, func, select, text
from sqlalchemy.orm import Session

from app.providers.scripted import Script, ScriptedProvider, ScriptedTurn
from app.settings import Settings
from app.store.repos.conversations import ConversationRepo
from app.store.repos.runs import RunRepo
from app.store.tables.core import ConversationRow, MessageRow, RunRow
from tests.api.runs.helpers import play
from tests.api.sse_frames import parse
from tests.auth.tokens import HS_SECRET, bearer, hs_token
from tests.fakes.db import ApiClient, MakeApi
from tests.support.lost_database import connection_ended

URL = "/api/conversations"
ME = bearer(hs_token(sub="me", roles=["user"]))
OTHER = bearer(hs_token(sub="other", roles=["user"]))


def keyed(key: str, who: dict[str, str] = ME) -> dict[str, str]:
    return {**who, "Idempotency-Key": key, "Content-Type": "application/json"}


@pytest.fixture
async def client(make_api: MakeApi, app_settings: Settings) -> AsyncIterator[ApiClient]:
    settings = app_settings.model_copy(
        update={"jwt_secret": SecretStr(HS_SECRET), "default_model": "scripted"}
    )
    scripted = ScriptedProvider(Script(mode="sequence", turns=[]))
    async with make_api(settings, providers={"scripted": scripted}) as api:
        yield api


async def count(client: ApiClient, query: Any) -> int:
    async with client.services.db.sessions() as session:
        return int(await session.scalar(query) or 0)


async def conversations_of(client: ApiClient, owner: str) -> int:
    query = (
        select(func.count()).select_from(ConversationRow).where(ConversationRow.owner_id == owner)
    )
    return await count(client, query)


# --- creating a conversation --------------------------------------------------------------


async def test_a_repeated_create_answers_the_same_conversation_and_stores_one(
    client: ApiClient,
) -> None:
    body = {"title": "Trip", "metadata": {"color": "blue"}}

    first = await client.post(URL, json=body, headers=keyed("k-1"))
    again = await client.post(URL, json=body, headers=keyed("k-1"))

    assert first.status_code == again.status_code == 201, again.text
    assert again.json() == first.json()
    assert await conversations_of(client, "me") == 1
    # Without the header every create is a new conversation, as before.
    plain = [await client.post(URL, json=body, headers=ME) for _ in range(2)]
    assert [r.status_code for r in plain] == [201, 201]
    assert len({r.json()["id"] for r in plain} | {first.json()["id"]}) == 3


async def test_the_same_key_with_another_body_is_refused_and_creates_nothing(
    client: ApiClient,
) -> None:
    await client.post(URL, json={"title": "Trip"}, headers=keyed("k-1"))

    reused = await client.post(URL, json={"title": "Other"}, headers=keyed("k-1"))

    assert reused.status_code == 422, reused.text
    assert reused.json()["error"]["code"] == "idempotency_key_reused"
    assert await conversations_of(client, "me") == 1


async def test_a_body_with_keys_reordered_is_the_same_request(client: ApiClient) -> None:
    first = await client.post(URL, content=b'{"title":"T","mode":"propose"}', headers=keyed("k"))
    again = await client.post(
        URL, content=b'{ "mode": "propose", "title": "T" }', headers=keyed("k")
    )

    assert again.status_code == 201, again.text
    assert again.json()["id"] == first.json()["id"]


async def test_another_callers_same_key_is_another_key(client: ApiClient) -> None:
    mine = await client.post(URL, json={"title": "Trip"}, headers=keyed("k-1"))

    theirs = await client.post(URL, json={"title": "Trip"}, headers=keyed("k-1", OTHER))
    theirs_again = await client.post(URL, json={"title": "Trip"}, headers=keyed("k-1", OTHER))

    assert theirs.status_code == 201, theirs.text
    assert theirs.json()["id"] != mine.json()["id"]
    assert theirs_again.json()["id"] == theirs.json()["id"]
    assert await conversations_of(client, "other") == 1
    assert await conversations_of(client, "me") == 1
    assert (await client.get(f"{URL}/{mine.json()['id']}", headers=OTHER)).status_code == 404


async def test_concurrent_repeats_create_one_conversation(client: ApiClient) -> None:
    answers = await asyncio.gather(
        *(client.post(URL, json={"title": "Trip"}, headers=keyed("k-1")) for _ in range(4))
    )

    assert [a.status_code for a in answers] == [201] * 4, [a.text for a in answers]
    assert len({a.json()["id"] for a in answers}) == 1
    assert await conversations_of(client, "me") == 1


async def test_a_key_past_its_lifetime_is_free_again(client: ApiClient) -> None:
    first = await client.post(URL, json={}, headers=keyed("k-1"))
    within = await client.post(URL, json={}, headers=keyed("k-1"))
    async with client.services.db.sessions.begin() as session:
        await session.execute(
            text("UPDATE idempotency_keys SET expires_at = :past"),
            {"past": datetime(2000, 1, 1, tzinfo=UTC)},
        )

    later = await client.post(URL, json={"title": "new"}, headers=keyed("k-1"))

    assert within.json()["id"] == first.json()["id"]
    assert later.status_code == 201, later.text
    assert later.json()["id"] != first.json()["id"]
    assert later.json()["title"] == "new"
    assert await conversations_of(client, "me") == 2


async def test_a_lapsed_key_is_deleted_though_its_caller_never_comes_back(
    client: ApiClient,
) -> None:
    # What a one-off caller kept (here a title; an item's text on /v1) must not stay for
    # ever: another caller's keyed create clears it once it lapsed.
    await client.post(URL, json={"title": "Secret plans"}, headers=keyed("k-1"))
    async with client.services.db.sessions.begin() as session:
        await session.execute(
            text("UPDATE idempotency_keys SET expires_at = :past"),
            {"past": datetime(2000, 1, 1, tzinfo=UTC)},
        )

    answer = await client.post(URL, json={}, headers=keyed("k-9", OTHER))

    assert answer.status_code == 201, answer.text
    kept = select(func.count()).select_from(text("idempotency_keys"))
    mine = kept.where(text("owner_id = 'me'"))
    assert (await count(client, mine), await count(client, kept)) == (0, 1)


@pytest.mark.parametrize("key", [b"", b" ", b"x" * 256, "caf\u00e9".encode("latin-1"), b"a\tb"])
async def test_a_malformed_key_is_a_400_and_creates_nothing(client: ApiClient, key: bytes) -> None:
    headers = [(b"Authorization", ME["Authorization"].encode()), (b"Idempotency-Key", key)]
    answer = await client.post(URL, json={}, headers=headers)

    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["param"] == "Idempotency-Key"
    assert await conversations_of(client, "me") == 0


# --- a COMMIT that landed, its answer lost ------------------------------------------------


@contextmanager
def first_commit_answer_lost(
    monkeypatch: pytest.MonkeyPatch, repo: type, method: str
) -> Iterator[None]:
    """The transaction that calls `repo.method` first commits, and then the connection
    ends before the answer to COMMIT arrives: the request sees a lost connection (once
    the session gave its connection back, as SQLAlchemy does after a disconnect)."""
    original = getattr(repo, method)
    armed = [True]

    def lose_answer(session: Session) -> None:
        committed: list[bool] = []

        def commit_landed(_session: Session) -> None:
            committed.append(True)

        def answer_lost(_session: Session, _transaction: Any) -> None:
            if committed:
                event.remove(session, "after_transaction_end", answer_lost)
                raise connection_ended()

        event.listen(session, "after_commit", commit_landed, once=True)
        event.listen(session, "after_transaction_end", answer_lost)

    async def committed_unanswered(self: Any, *args: Any, **kwargs: Any) -> Any:
        if armed:
            armed.clear()
            lose_answer(self._session.sync_session)
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(repo, method, committed_unanswered)
    yield


async def test_a_retry_after_a_lost_commit_answer_creates_no_second_conversation(
    client: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    with first_commit_answer_lost(monkeypatch, ConversationRepo, "create"):
        lost = await client.post(URL, json={"title": "once"}, headers=keyed("k-1"))
        retry = await client.post(URL, json={"title": "once"}, headers=keyed("k-1"))

    assert lost.status_code == 503, lost.text
    assert lost.json()["error"]["code"] == "database_unavailable"
    assert retry.status_code == 201, retry.text
    assert retry.json()["title"] == "once"
    assert await conversations_of(client, "me") == 1


# --- sending a message --------------------------------------------------------------------


async def new_conversation(client: ApiClient) -> str:
    created = await client.post(URL, json={}, headers=ME)
    assert created.status_code == 201, created.text
    cid: str = created.json()["id"]
    return cid


async def run_to_end(client: ApiClient, started: dict[str, Any]) -> None:
    answer = await client.get(started["events_url"], headers=ME)
    assert parse(answer.text)[-1].event == "run_end", answer.text


async def stored_turns(client: ApiClient, cid: str) -> tuple[int, int]:
    """(user messages, runs) stored in the conversation."""
    messages = select(func.count()).where(
        MessageRow.conversation_id == cid, MessageRow.role == "user"
    )
    runs = select(func.count()).where(RunRow.conversation_id == cid)
    return await count(client, messages), await count(client, runs)


async def test_a_repeated_send_answers_the_same_run_and_starts_no_second(
    client: ApiClient,
) -> None:
    play(client, ScriptedTurn(text="Hello."))
    cid = await new_conversation(client)
    body = {"content": "Hi"}

    first = await client.post(f"{URL}/{cid}/messages", json=body, headers=keyed("s-1"))
    again = await client.post(f"{URL}/{cid}/messages", json=body, headers=keyed("s-1"))

    assert first.status_code == again.status_code == 202, again.text
    assert {k: v for k, v in again.json().items() if k != "stream_token"} == {
        k: v for k, v in first.json().items() if k != "stream_token"
    }
    await run_to_end(client, first.json())
    assert await stored_turns(client, cid) == (1, 1)
    # After the run, the same key still names it; another key is another turn.
    late = await client.post(f"{URL}/{cid}/messages", json=body, headers=keyed("s-1"))
    assert late.json()["run_id"] == first.json()["run_id"]
    assert await stored_turns(client, cid) == (1, 1)


async def test_a_repeated_streamed_send_follows_the_first_run(client: ApiClient) -> None:
    play(client, ScriptedTurn(text="Only once."))
    cid = await new_conversation(client)
    body = {"content": "Hi", "stream": True}

    first = await client.post(f"{URL}/{cid}/messages", json=body, headers=keyed("s-1"))
    again = await client.post(f"{URL}/{cid}/messages", json=body, headers=keyed("s-1"))

    assert first.status_code == again.status_code == 200, again.text
    first_frames, again_frames = parse(first.text), parse(again.text)
    assert [(f.id, f.event, f.data) for f in again_frames] == [
        (f.id, f.event, f.data) for f in first_frames
    ]
    assert again_frames[-1].event == "run_end"
    assert await stored_turns(client, cid) == (1, 1)


async def test_concurrent_repeated_sends_start_one_run(client: ApiClient) -> None:
    play(client, ScriptedTurn(text="Hello."))
    cid = await new_conversation(client)

    answers = await asyncio.gather(
        *(
            client.post(f"{URL}/{cid}/messages", json={"content": "Hi"}, headers=keyed("s-1"))
            for _ in range(4)
        )
    )

    assert [a.status_code for a in answers] == [202] * 4, [a.text for a in answers]
    assert len({a.json()["run_id"] for a in answers}) == 1
    await run_to_end(client, answers[0].json())
    assert await stored_turns(client, cid) == (1, 1)


async def test_a_send_with_a_reused_key_is_refused_and_starts_nothing(
    client: ApiClient,
) -> None:
    play(client, ScriptedTurn(text="Hello."))
    cid = await new_conversation(client)
    first = await client.post(f"{URL}/{cid}/messages", json={"content": "Hi"}, headers=keyed("k"))
    await run_to_end(client, first.json())

    reused = await client.post(f"{URL}/{cid}/messages", json={"content": "Bye"}, headers=keyed("k"))
    elsewhere = await client.post(URL, json={}, headers=keyed("k"))

    assert reused.status_code == elsewhere.status_code == 422, reused.text
    assert reused.json()["error"]["code"] == "idempotency_key_reused"
    assert elsewhere.json()["error"]["code"] == "idempotency_key_reused"
    assert await stored_turns(client, cid) == (1, 1)


async def test_a_retry_after_a_lost_commit_answer_starts_no_second_turn(
    client: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    play(client, ScriptedTurn(text="Hello."))
    cid = await new_conversation(client)
    url = f"{URL}/{cid}/messages"
    with first_commit_answer_lost(monkeypatch, RunRepo, "insert"):
        lost = await client.post(url, json={"content": "Hi"}, headers=keyed("s-1"))
        retry = await client.post(url, json={"content": "Hi"}, headers=keyed("s-1"))

    assert lost.status_code == 503, lost.text
    assert retry.status_code == 202, retry.text
    assert await stored_turns(client, cid) == (1, 1)


# --- the OpenAI Conversations surface, through the openai SDK ------------------------------

USER_MESSAGE: EasyInputMessageParam = {"type": "message", "role": "user", "content": "hello"}
OTHER_MESSAGE: EasyInputMessageParam = {"type": "message", "role": "user", "content": "bye"}


async def test_an_openai_create_repeated_with_a_key_is_one_conversation(
    me: openai.AsyncOpenAI, users_api: ApiClient
) -> None:
    key = {"Idempotency-Key": "v1-create"}

    first = await me.conversations.create(items=[USER_MESSAGE], extra_headers=key)
    again = await me.conversations.create(items=[USER_MESSAGE], extra_headers=key)

    assert again.id == first.id
    assert await conversations_of(users_api, "me") == 1
    assert len((await me.conversations.items.list(first.id)).data) == 1


async def test_openai_items_added_again_with_a_key_are_added_once(
    me: openai.AsyncOpenAI, other: openai.AsyncOpenAI
) -> None:
    conversation = await me.conversations.create()
    key = {"Idempotency-Key": "v1-items"}

    first = await me.conversations.items.create(
        conversation.id, items=[USER_MESSAGE], extra_headers=key
    )
    again = await me.conversations.items.create(
        conversation.id, items=[USER_MESSAGE], extra_headers=key
    )
    theirs = await other.conversations.create(extra_headers=key)

    assert [i.id for i in again.data] == [i.id for i in first.data]
    assert len((await me.conversations.items.list(conversation.id)).data) == 1
    assert theirs.id != conversation.id


async def test_an_openai_key_reused_with_other_items_is_refused(me: openai.AsyncOpenAI) -> None:
    conversation = await me.conversations.create()
    key = {"Idempotency-Key": "v1-items"}
    await me.conversations.items.create(conversation.id, items=[USER_MESSAGE], extra_headers=key)

    with pytest.raises(openai.APIStatusError) as refused:
        await me.conversations.items.create(
            conversation.id,
            items=[OTHER_MESSAGE],
            extra_headers=key,
        )

    assert refused.value.status_code == 422
    assert refused.value.code == "idempotency_key_reused"
    assert len((await me.conversations.items.list(conversation.id)).data) == 1
