"""`chat-bff apikey`: the admin command that makes, lists and revokes keys."""

from __future__ import annotations

import asyncio
import re

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.cli import main
from app.settings import Settings
from tests.fakes.db import MakeApi


async def run(*argv: str) -> int:
    return await asyncio.to_thread(main, list(argv))


async def test_apikey_create_list_revoke(
    db_engine: AsyncEngine,
    migrated_database_url: str,
    app_settings: Settings,
    make_api: MakeApi,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("DATABASE_URL", migrated_database_url)
    assert (
        await run("apikey", "create", "--owner", "svc", "--name", "ci", "--roles", "user,ops") == 0
    )
    created = capsys.readouterr().out
    key = re.search(r"key:\s+(cbff_\S+)", created)
    key_id = re.search(r"id:\s+(key_\S+)", created)
    assert key and key_id and "not shown again" in created

    assert await run("apikey", "list") == 0
    listed = capsys.readouterr().out
    assert key_id.group(1) in listed and key.group(1) not in listed
    async with db_engine.connect() as conn:
        rows = (await conn.execute(text("SELECT * FROM api_keys"))).all()
    assert key.group(1) not in str(rows)

    async with make_api(app_settings) as api:
        me = await api.get("/api/me", headers={"X-API-Key": key.group(1)})
        assert me.json()["user_id"] == "svc" and me.json()["roles"] == ["ops", "user"]
        assert await run("apikey", "revoke", key_id.group(1)) == 0
        gone = await api.get("/api/me", headers={"X-API-Key": key.group(1)})
        assert gone.status_code == 401

    assert await run("apikey", "revoke", "key_nope") == 1
