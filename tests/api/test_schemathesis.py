"""Schemathesis against the app in-process: generated requests from our own OpenAPI
document, as two users, must never get a 5xx and must get answers the document describes.

The app runs once per module (Schemathesis' ASGI client keeps its lifespan going) on a
fresh SQLite file and the offline `scripted` model with no pacing. Each user owns a
conversation with a finished run; id path parameters are swapped, case by case, for the
caller's own ids, the other user's or left as generated, so the owned, foreign and
unknown branches of every id route are all reached. The choice hashes the generated case, so with
`derandomize=True` a run is the same every time.
"""

from __future__ import annotations

import json
import os
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import jwt
import pytest
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.python import asgi
from schemathesis.specs.openapi.checks import (
    response_schema_conformance,
    status_code_conformance,
)

from app.main import create_app
from app.openapi_dump import render
from app.settings import Settings

SECRET = "schemathesis-secret-0123456789-abcdefghij"
USERS = ("alice", "bob")
MAX_EXAMPLES = int(os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "12"))  # raise it to dig deeper


def token(user: str) -> str:
    now = int(time.time())
    roles = ["user", "admin"] if user == "alice" else ["user"]  # admin routes: both branches
    claims = {"sub": user, "roles": roles, "iat": now, "exp": now + 3600}
    return jwt.encode(claims, SECRET, algorithm="HS256")


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FastAPI]:
    db: Path = tmp_path_factory.mktemp("schemathesis") / "chat-bff.db"
    app_settings = Settings(
        _env_file=None,
        environment="test",
        log_json=False,
        database_url=f"sqlite+aiosqlite:///{db}",
        files_dir=db.parent / "files",
        jwt_secret=SECRET,
        scripted_delay_ms=0,
        heartbeat_seconds=60,
        rate_limit_requests_per_minute=0,
        rate_limit_concurrent_runs=0,
    )
    yield create_app(app_settings)
    asgi.shutdown_lifespans()


@pytest.fixture(scope="module")
def owned(app: FastAPI) -> dict[str, dict[str, str]]:
    """Per user, the ids of a conversation with one finished run (its user message and
    run), made through the API the test exercises."""
    ids = {}
    with asgi.get_client(cast(Any, app)) as client:
        for user in USERS:
            headers = {"Authorization": f"Bearer {token(user)}"}
            created = client.post("/api/conversations", json={"title": user}, headers=headers)
            assert created.status_code == 201, created.text
            conversation_id = created.json()["id"]
            url = f"/api/conversations/{conversation_id}"
            sent = client.post(f"{url}/messages", json={"content": "Hello"}, headers=headers)
            assert sent.status_code == 202, sent.text
            run_id = sent.json()["run_id"]
            deadline = time.monotonic() + 10
            while (detail := client.get(url, headers=headers).json())["active_run_id"]:
                assert time.monotonic() < deadline, "the scripted run did not finish"
                time.sleep(0.01)
            ids[user] = {
                "conversation_id": conversation_id,
                "run_id": run_id,
                "message_id": detail["messages"][0]["id"],
            }
    return ids


# The document the app serves, which is also the committed file (see test_openapi.py).
# (`schemathesis.pytest.from_fixture` would build it per module, but it reads a pytest
# internal that pytest 9 removed.)
schema = schemathesis.openapi.from_dict(json.loads(render()))


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
def test_api_conforms_to_its_schema(
    case: schemathesis.Case[Any], app: FastAPI, owned: dict[str, dict[str, str]]
) -> None:
    pick = zlib.crc32(repr((case.method, case.path_parameters, case.query, case.body)).encode())
    user = USERS[pick % 2]
    params = case.path_parameters or {}
    if set(params) & {"conversation_id", "run_id", "message_id"}:
        choice = (pick >> 1) % 3  # 0: own ids, 1: the other user's, 2: as generated
        if case.method == "DELETE" and choice == 0:
            choice = 1  # a purge of one's own would leave later cases only 404s
        if choice < 2:
            ids = owned[USERS[(pick + choice) % 2]]
            params.update({k: ids[k] for k in params if k in ids})
    case.call_and_validate(
        app=app,
        headers={"Authorization": f"Bearer {token(user)}"},
        checks=[not_a_server_error, response_schema_conformance, status_code_conformance],
    )


def test_the_owned_ids_exist(owned: dict[str, dict[str, str]]) -> None:
    # Guards the fixture: without it the id swapping above would test nothing.
    assert set(owned) == set(USERS)
    assert all(ids["conversation_id"].startswith("conv_") for ids in owned.values())
    assert all(ids["run_id"].startswith("run_") for ids in owned.values())
