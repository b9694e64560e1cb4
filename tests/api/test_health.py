"""Liveness and readiness probes."""

from __future__ import annotations

from app.store.database import Database
from app.store.db import create_engine
from tests.fakes.db import ApiClient


async def test_healthz_answers_ok(api: ApiClient) -> None:
    response = await api.get("/healthz")

    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


async def test_readyz_is_ok_while_the_database_answers(api: ApiClient) -> None:
    response = await api.get("/readyz")

    assert response.status_code == 200
    assert response.json()["status"] == "ok"
    assert set(response.json()["toolRouter"]) == {"mode", "tools", "embeddings"}


async def test_readyz_is_503_when_the_database_does_not_answer(api: ApiClient) -> None:
    working = api.services.db
    # Nothing listens on port 1: the same service, its database gone.
    api.services.db = Database(create_engine("postgresql+asyncpg://nobody@127.0.0.1:1/none"))
    try:
        response = await api.get("/readyz")
    finally:
        await api.services.db.dispose()
        api.services.db = working

    assert response.status_code == 503
    assert response.json()["error"]["code"] == "not_ready"
