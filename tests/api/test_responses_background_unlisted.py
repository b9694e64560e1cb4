"""A background response sent without a conversation is held by a conversation no list
shows; one that is refused (an unknown model) must still leave no such conversation in
the database, listed or not."""

from __future__ import annotations

from sqlalchemy import func, select

from app.store.tables.core import ConversationRow
from tests.fakes.db import ApiClient


async def _conversations(api: ApiClient) -> int:
    async with api.services.db.sessions() as session:
        return int((await session.execute(select(func.count(ConversationRow.id)))).scalar_one())


async def test_a_refused_background_response_leaves_no_unlisted_conversation(
    api: ApiClient,
) -> None:
    before = await _conversations(api)

    refused = await api.post(
        "/v1/responses", json={"model": "no-such-model", "input": "hello", "background": True}
    )

    assert refused.status_code == 404
    assert refused.json()["error"]["code"] == "model_not_found"
    assert await _conversations(api) == before
