"""`/v1/conversations` through the official openai SDK (`client.conversations.*`), in
process (httpx2 ASGITransport), on SQLite and Postgres: the conversations are our durable
ones (same ids, owner-scoped), and `responses.create(conversation=...)` continues one."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import openai
import pytest
from pydantic import SecretStr

from app.providers.scripted import Script, ScriptedProvider, ScriptedToolCall, ScriptedTurn
from app.settings import Settings
from tests.auth.tokens import HS_SECRET, hs_token
from tests.fakes.db import ApiClient, MakeApi

SCRIPT = Script(
    mode="rules",
    turns=[
        ScriptedTurn(after_tool="add_node", text="Added."),
        ScriptedTurn(
            match="^add",
            tool_calls=[ScriptedToolCall(name="add_node", args={"label": "Person", "name": "Ada"})],
        ),
        ScriptedTurn(text="Hello from the script."),
    ],
)


@pytest.fixture
async def api(make_api: MakeApi, app_settings: Settings) -> AsyncIterator[ApiClient]:
    settings = app_settings.model_copy(
        update={"default_model": "scripted", "example_tools_enabled": True}
    )
    provider = ScriptedProvider(SCRIPT, delay_ms=0)
    async with make_api(settings, providers={"scripted": provider}) as client:
        yield client


@pytest.fixture
async def sdk(api: ApiClient) -> AsyncIterator[openai.AsyncOpenAI]:
    http = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=api.app), base_url="http://t")
    client = openai.AsyncOpenAI(
        api_key="unused", base_url="http://t/v1", http_client=http, max_retries=0
    )
    async with client:
        yield client


async def test_a_conversation_is_created_read_updated_and_deleted(
    sdk: openai.AsyncOpenAI, api: ApiClient
) -> None:
    created = await sdk.conversations.create(
        metadata={"topic": "demo"},
        items=[{"type": "message", "role": "user", "content": "hello"}],
    )
    assert created.id.startswith("conv_") and created.metadata == {"topic": "demo"}
    native = (await api.get(f"/api/conversations/{created.id}")).json()
    assert [m["role"] for m in native["messages"]] == ["user"]

    got = await sdk.conversations.retrieve(created.id)
    assert (got.id, got.created_at) == (created.id, created.created_at)
    updated = await sdk.conversations.update(created.id, metadata={"topic": "other"})
    assert updated.metadata == {"topic": "other"}

    deleted = await sdk.conversations.delete(created.id)
    assert (deleted.id, deleted.deleted) == (created.id, True)
    with pytest.raises(openai.NotFoundError):
        await sdk.conversations.retrieve(created.id)


async def test_responses_continue_a_conversation_and_items_show_the_turns(
    sdk: openai.AsyncOpenAI,
) -> None:
    conversation = await sdk.conversations.create()

    first = await sdk.responses.create(
        model="scripted", input="hello", conversation=conversation.id
    )
    assert first.output_text == "Hello from the script."
    streamed: list[str] = []
    stream = await sdk.responses.create(
        model="scripted", input="add Ada", conversation={"id": conversation.id}, stream=True
    )
    async for event in stream:
        streamed.append(event.type)
    assert streamed[-1] == "response.completed"

    items = await sdk.conversations.items.list(conversation.id, order="asc", limit=100)
    kinds = [(i.type, getattr(i, "role", None)) for i in items.data]
    assert kinds == [
        ("message", "user"),
        ("message", "assistant"),
        ("message", "user"),
        ("mcp_call", None),
        ("message", "assistant"),
    ]
    call: Any = items.data[3]
    assert (call.name, call.status, call.server_label) == ("add_node", "completed", "chat-bff")
    assert '"Ada"' in call.output

    one = await sdk.conversations.items.retrieve(call.id, conversation_id=conversation.id)
    assert one.id == call.id


async def test_a_users_attachments_are_in_its_item(sdk: openai.AsyncOpenAI, api: ApiClient) -> None:
    # The items held the message's text alone: a reloaded history lost every attachment.
    upload = await api.post("/api/files", files={"file": ("q3.csv", b"a,b\n1,2\n", "text/csv")})
    file_id = upload.json()["id"]
    conversation = await sdk.conversations.create()
    await sdk.responses.create(
        model="scripted",
        conversation=conversation.id,
        input=[
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "hello, see the figures"},
                    {"type": "input_file", "file_id": file_id},
                ],
            }
        ],
    )
    dot = "data:image/png;base64,iVBORw0KGgo="
    await sdk.conversations.items.create(
        conversation.id,
        items=[
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_image", "image_url": dot, "detail": "auto"}],
            }
        ],
    )

    listed: Any = (await sdk.conversations.items.list(conversation.id, order="asc")).data
    users = [i for i in listed if i.role == "user"]

    sent, shown = users[0].content
    assert sent.text == "hello, see the figures"
    assert (shown.type, shown.file_id, shown.filename) == ("input_file", file_id, "q3.csv")
    (image,) = users[1].content
    assert (image.type, image.image_url, image.file_id) == ("input_image", dot, None)


async def test_items_page_with_after_limit_and_order(sdk: openai.AsyncOpenAI) -> None:
    conversation = await sdk.conversations.create(
        items=[{"type": "message", "role": "user", "content": f"m{i}"} for i in range(5)]
    )
    added = await sdk.conversations.items.create(
        conversation.id, items=[{"type": "message", "role": "user", "content": "m5"}]
    )
    assert [i.type for i in added.data] == ["message"]

    first = await sdk.conversations.items.list(conversation.id, limit=2)  # newest first
    assert first.has_more and first.last_id == first.data[-1].id
    seen = [i.id async for i in sdk.conversations.items.list(conversation.id, limit=2)]
    assert len(seen) == len(set(seen)) == 6
    listed: Any = (await sdk.conversations.items.list(conversation.id, order="asc")).data
    texts = [i.content[0].text for i in listed]
    assert texts == [f"m{i}" for i in range(6)]


async def test_a_bad_item_is_a_400_naming_it_under_items(sdk: openai.AsyncOpenAI) -> None:
    # The items came in `items`; the error named `input[0]`, a field this body has not,
    # and a missing role read "has an unknown role None".
    conversation = await sdk.conversations.create()
    no_role: Any = [{"type": "message", "content": "hi"}]

    with pytest.raises(openai.BadRequestError) as created:
        await sdk.conversations.create(items=no_role)
    with pytest.raises(openai.BadRequestError) as added:
        await sdk.conversations.items.create(conversation.id, items=no_role)

    for raised in (created.value, added.value):
        error: Any = raised.body
        assert error["param"] == "items[0]"
        assert "no `role`" in error["message"]


async def test_another_users_or_unknown_ids_are_404(sdk: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.NotFoundError):
        await sdk.conversations.retrieve("conv_nope")
    with pytest.raises(openai.NotFoundError):
        await sdk.conversations.items.list("conv_nope")
    with pytest.raises(openai.NotFoundError):
        await sdk.responses.create(model="scripted", input="hi", conversation="conv_nope")
    conversation = await sdk.conversations.create()
    with pytest.raises(openai.NotFoundError):
        await sdk.conversations.items.retrieve("msg_nope", conversation_id=conversation.id)
    with pytest.raises(openai.BadRequestError):
        await sdk.responses.create(
            model="scripted", input="hi", conversation=conversation.id, instructions="x"
        )


async def test_a_conversation_is_its_owners_only(make_api: MakeApi, app_settings: Settings) -> None:
    settings = app_settings.model_copy(
        update={"jwt_secret": SecretStr(HS_SECRET), "default_model": "scripted"}
    )
    provider = ScriptedProvider(SCRIPT, delay_ms=0)
    async with make_api(settings, providers={"scripted": provider}) as api:
        http = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=api.app), base_url="http://t")
        ann, bob = (
            openai.AsyncOpenAI(
                api_key=hs_token(sub=user, roles=["user"]),
                base_url="http://t/v1",
                http_client=http,
                max_retries=0,
            )
            for user in ("ann", "bob")
        )
        mine = await ann.conversations.create(metadata={"owner": "ann"})
        await ann.responses.create(model="scripted", input="hello", conversation=mine.id)

        with pytest.raises(openai.NotFoundError):
            await bob.conversations.retrieve(mine.id)
        with pytest.raises(openai.NotFoundError):
            await bob.conversations.items.list(mine.id)
        with pytest.raises(openai.NotFoundError):
            await bob.conversations.update(mine.id, metadata={"owner": "bob"})
        with pytest.raises(openai.NotFoundError):
            await bob.responses.create(model="scripted", input="hi", conversation=mine.id)
        with pytest.raises(openai.NotFoundError):
            await bob.conversations.delete(mine.id)
        assert (await ann.conversations.retrieve(mine.id)).metadata == {"owner": "ann"}
        assert len((await ann.conversations.items.list(mine.id)).data) == 2
        await http.aclose()


async def test_an_inline_file_added_as_an_item_is_stored_as_a_turn_stores_it(
    sdk: openai.AsyncOpenAI, api: ApiClient
) -> None:
    # items.create kept the data URL in the message, where a turn stores the file and
    # refers to it: the same history listed two shapes, and a purge left the file behind.
    csv = b"city,rate\nOslo,1\n"
    url = "data:text/csv;base64," + base64.b64encode(csv).decode()
    content: Any = [
        {"type": "input_text", "text": "see the rates"},
        {"type": "input_file", "filename": "rates.csv", "file_data": url},
    ]
    message: Any = {"type": "message", "role": "user", "content": content}
    by_turn = await sdk.conversations.create()
    await sdk.responses.create(model="scripted", conversation=by_turn.id, input=[message])
    by_item = await sdk.conversations.create()
    answered = await sdk.conversations.items.create(by_item.id, items=[message])
    at_start = await sdk.conversations.create(items=[message])

    def shown(item: Any) -> tuple[str, list[dict[str, Any]]]:
        text, file = (p.model_dump() for p in item.content)
        assert file["file_id"].startswith("file_") and file.get("file_data") is None
        return file["file_id"], [text, {**file, "file_id": "file_"}]

    listed = [
        (await sdk.conversations.items.list(c.id, order="asc")).data[0]
        for c in (by_turn, by_item, at_start)
    ]
    (turn_file, turn_shape), *others = [shown(i) for i in [*listed, answered.data[0]]]
    assert [shape for _, shape in others] == [turn_shape] * 3
    assert turn_shape[1]["filename"] == "rates.csv"
    for file_id, _ in [(turn_file, None), *others]:
        assert (await api.get(f"/api/files/{file_id}/content")).content == csv

    await sdk.conversations.delete(by_item.id)
    assert (await api.get(f"/api/files/{others[0][0]}/content")).status_code == 404


async def test_another_users_file_id_in_an_added_item_is_404(
    make_api: MakeApi, app_settings: Settings
) -> None:
    # items.create stored any `file_id` as sent, where a turn refuses one not the caller's.
    settings = app_settings.model_copy(
        update={"jwt_secret": SecretStr(HS_SECRET), "default_model": "scripted"}
    )
    async with make_api(settings, providers={"scripted": ScriptedProvider(SCRIPT)}) as api:
        tokens = {user: hs_token(sub=user, roles=["user"]) for user in ("ann", "bob")}
        upload = await api.post(
            "/api/files",
            files={"file": ("q3.csv", b"a,b\n1,2\n", "text/csv")},
            headers={"Authorization": f"Bearer {tokens['ann']}"},
        )
        http = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=api.app), base_url="http://t")
        bob = openai.AsyncOpenAI(
            api_key=tokens["bob"], base_url="http://t/v1", http_client=http, max_retries=0
        )
        conversation = await bob.conversations.create()
        part: Any = {"type": "input_file", "file_id": upload.json()["id"]}
        message: Any = {"type": "message", "role": "user", "content": [part]}

        with pytest.raises(openai.NotFoundError):
            await bob.conversations.items.create(conversation.id, items=[message])
        with pytest.raises(openai.NotFoundError):
            await bob.conversations.create(items=[message])
        assert (await bob.conversations.items.list(conversation.id)).data == []
        await http.aclose()
