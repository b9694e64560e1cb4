"""The frozen corpus of stored messages keeps loading, release after release."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.domain.messages import MESSAGE_SCHEMA_VERSION
from app.store.message_codec import decode_message, encode_content
from app.store.repos import ConversationRepo, MessageRepo
from app.store.tables.core import MessageRow
from app.store.tables.types import utcnow

CORPUS = sorted((Path(__file__).parent / "corpus").glob("*.json"))


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_the_corpus_covers_every_part_type() -> None:
    types = {
        part["type"]
        for path in CORPUS
        if isinstance(content := _load(path)["content"], list)
        for part in content
    }
    assert types == {"text", "tool", "thinking", "file"}


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_a_stored_payload_still_loads(path: Path) -> None:
    stored = _load(path)
    message = decode_message(stored, stored.pop("schema_version"))

    assert message.id == stored["id"]
    assert message.role == stored["role"]


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_a_loaded_payload_survives_a_rewrite(path: Path) -> None:
    stored = _load(path)
    message = decode_message(stored, stored.pop("schema_version"))
    rewritten = {**message.model_dump(mode="json"), "content": encode_content(message)}

    assert decode_message(rewritten, MESSAGE_SCHEMA_VERSION) == message


async def test_the_corpus_loads_from_the_database(
    db_sessions: async_sessionmaker[AsyncSession],
) -> None:
    async with db_sessions.begin() as s:
        conversation = await ConversationRepo(s).create("alice")
        rows = [
            {
                "conversation_id": conversation.id,
                "owner_id": "alice",
                "position": position,
                "id": stored["id"],
                "role": stored["role"],
                "content": stored["content"],
                "metadata_": stored["metadata"],
                "schema_version": stored["schema_version"],
                "created_at": utcnow(),
            }
            for position, stored in enumerate(_load(p) for p in CORPUS)
        ]
        await s.execute(insert(MessageRow), rows)
    async with db_sessions() as s:
        history = await MessageRepo(s).history("alice", conversation.id)

    expected = [
        decode_message(stored, stored.pop("schema_version")) for stored in map(_load, CORPUS)
    ]
    assert history == expected
