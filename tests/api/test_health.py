"""Liveness and readiness probes."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from pydantic import SecretStr
from redis import Redis

from app.store.database import Database
from app.store.db import create_engine
from tests.auth.tokens import HS_SECRET, bearer, hs_token, sqlite_settings
from tests.e2e.redis_server import own_redis
from tests.fakes.db import ApiClient, MakeApi
from tests.support.ports import closed_port


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


async def test_readyz_names_a_redis_that_refuses_the_password_without_going_unready(
    make_api: MakeApi, tmp_path: Path
) -> None:
    with own_redis(password="right") as redis:
        settings = sqlite_settings(
            tmp_path,
            jwt_secret=SecretStr(HS_SECRET),
            rate_limit_requests_per_minute=100,
            redis_url=redis.url_with("wrong"),
        )
        async with make_api(settings) as api:
            me = await api.get("/api/me", headers=bearer(hs_token(sub="alice")))
            response = await api.get("/readyz")

    assert me.status_code == 200  # limits let the request through meanwhile
    assert response.status_code == 200
    assert response.json()["redis"] == "auth_failed"


async def test_readyz_names_a_redis_user_refused_a_command_and_the_log_says_it_once(
    make_api: MakeApi, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="chat_bff")
    with own_redis() as redis:
        admin = Redis(port=redis.port)
        # An ACL that lets the user do anything but run scripts, which the limits need.
        admin.acl_setuser(
            "bff",
            enabled=True,
            passwords=["+pw-not-logged"],
            keys=["*"],
            channels=["*"],
            commands=["+@all", "-evalsha", "-eval", "-script"],
        )
        admin.close()
        settings = sqlite_settings(
            tmp_path,
            jwt_secret=SecretStr(HS_SECRET),
            rate_limit_requests_per_minute=100,
            redis_url=f"redis://bff:pw-not-logged@127.0.0.1:{redis.port}/0",
        )
        async with make_api(settings) as api:
            answers = [
                await api.get("/api/me", headers=bearer(hs_token(sub="alice"))) for _ in range(5)
            ]
            response = await api.get("/readyz")

    assert [a.status_code for a in answers] == [200] * 5  # limits let them through
    assert response.status_code == 200
    assert response.json()["redis"] == "no_permission"
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1, errors
    assert "'evalsha'" in errors[0] and f"redis://127.0.0.1:{redis.port}/0" in errors[0]
    assert "pw-not-logged" not in caplog.text


async def test_readyz_of_an_instance_without_traffic_names_a_redis_that_is_down(
    make_api: MakeApi, tmp_path: Path
) -> None:
    settings = sqlite_settings(tmp_path, redis_url=f"redis://127.0.0.1:{closed_port()}/0")
    async with make_api(settings) as api:
        response = await api.get("/readyz")

    assert response.status_code == 200
    assert response.json()["redis"] == "unreachable"


async def test_readiness_probes_every_moment_cost_redis_one_ping(
    make_api: MakeApi, tmp_path: Path
) -> None:
    async with on_own_redis(make_api, tmp_path) as (api, admin):
        before = pings(admin)
        answers = [await api.get("/readyz") for _ in range(10)]
        sent = pings(admin) - before

    assert [r.json()["redis"] for r in answers] == ["ok"] * 10
    assert sent <= 1  # at most the first probe asks Redis; the next ones read its answer


async def test_a_readiness_ping_opens_no_redis_connection_of_its_own(
    make_api: MakeApi, tmp_path: Path
) -> None:
    async with on_own_redis(make_api, tmp_path) as (api, admin):
        await api.services.bus.publish("warm", b"")  # as a run's events would
        before, pinged = connections(admin), pings(admin)
        api.services.redis._fresh_for = 0.0  # type: ignore[union-attr]  # ask each time
        answers = [(await api.get("/readyz")).json()["redis"] for _ in range(3)]
        after, pinged = connections(admin), pings(admin) - pinged

    assert answers == ["ok"] * 3
    assert pinged >= 3  # each probe asked Redis
    assert after == before  # through a connection the process already had


@asynccontextmanager
async def on_own_redis(make_api: MakeApi, tmp_path: Path) -> AsyncIterator[tuple[ApiClient, Redis]]:
    """An instance on a Redis of the test's own, and an admin client of that Redis."""
    with own_redis() as redis:
        admin = Redis(port=redis.port)
        try:
            async with make_api(sqlite_settings(tmp_path, redis_url=redis.url)) as api:
                yield api, admin
        finally:
            admin.close()


def connections(redis: Redis) -> int:
    """Clients connected to this Redis, the admin's own left out."""
    return len(redis.client_list()) - 1


def pings(redis: Redis) -> int:
    stats: dict[str, dict[str, int]] = redis.info("commandstats")
    return stats.get("cmdstat_ping", {}).get("calls", 0)
