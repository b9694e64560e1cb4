"""Per-caller limits answer 429 + Retry-After; oversized bodies answer 413."""

from __future__ import annotations

import base64
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from app.domain.errors import RateLimited
from app.domain.identity import Caller
from app.limits.backends import LimitBackend, MemoryBackend
from app.limits.limiter import Limiter
from app.limits.policy import LimitPolicy, Limits
from app.observability.metrics import Metrics
from tests.auth.tokens import HS_SECRET, bearer, hs_token, sqlite_settings
from tests.fakes.db import MakeApi

ALICE = bearer(hs_token(sub="alice"))
BOB = bearer(hs_token(sub="bob"))
ROOT = bearer(hs_token(sub="root", roles=["admin"]))


def limited(tmp_path: Path, **values: Any) -> Any:
    return sqlite_settings(tmp_path, jwt_secret=SecretStr(HS_SECRET), **values)


async def test_too_many_requests_is_429_with_retry_after(make_api: MakeApi, tmp_path: Path) -> None:
    async with make_api(limited(tmp_path, rate_limit_requests_per_minute=3)) as api:
        answers = [await api.get("/api/me", headers=ALICE) for _ in range(4)]
        other_user = await api.get("/api/me", headers=BOB)
        metrics = (await api.get("/metrics")).text
    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    refused = answers[-1]
    assert 1 <= int(refused.headers["retry-after"]) <= 20
    assert refused.json()["error"]["code"] == "rate_limited"
    assert refused.json()["error"]["limit"] == "requests_per_minute"
    assert other_user.status_code == 200
    assert 'chatbff_rate_limited_total{limit="requests_per_minute"} 1.0' in metrics


async def test_limits_are_configurable_per_role(make_api: MakeApi, tmp_path: Path) -> None:
    settings = limited(
        tmp_path,
        rate_limit_requests_per_minute=2,
        rate_limit_roles={"admin": {"requests_per_minute": 0}},
    )
    async with make_api(settings) as api:
        admin = [(await api.get("/api/me", headers=ROOT)).status_code for _ in range(5)]
        user = [(await api.get("/api/me", headers=ALICE)).status_code for _ in range(3)]
    assert admin == [200] * 5
    assert user == [200, 200, 429]


def test_a_caller_with_several_roles_gets_the_most_generous_limit() -> None:
    policy = LimitPolicy(
        Limits(requests_per_minute=10, concurrent_runs=1, tokens_per_day=100),
        {"pro": {"requests_per_minute": 100}, "batch": {"concurrent_runs": 5}},
    )
    limits = policy.for_caller(Caller("u", frozenset({"pro", "batch"})))
    assert limits == Limits(requests_per_minute=100, concurrent_runs=5, tokens_per_day=100)
    assert policy.for_caller(Caller("u", frozenset({"user"}))).requests_per_minute == 10


def test_an_unknown_limit_name_fails_at_start_up() -> None:
    with pytest.raises(ValueError, match="unknown limit"):
        LimitPolicy(Limits(), {"admin": {"requests_per_hour": 1}})


def limiter(backend: LimitBackend, **limits: int) -> Limiter:
    return Limiter(LimitPolicy(Limits(**limits), {}), backend, Metrics())


ALICE_CALLER = Caller("alice", frozenset({"user"}))


async def test_concurrent_runs_are_capped_per_caller() -> None:
    lim = limiter(MemoryBackend(), concurrent_runs=1)
    async with lim.run_slot(ALICE_CALLER, "run_1"):
        with pytest.raises(RateLimited) as info:
            await lim.acquire_run(ALICE_CALLER, "run_2")
        assert info.value.retry_after is not None and info.value.retry_after >= 1
        await lim.acquire_run(Caller("bob"), "run_3")
    await lim.acquire_run(ALICE_CALLER, "run_2")


async def test_the_daily_token_budget_refuses_once_spent() -> None:
    lim = limiter(MemoryBackend(), tokens_per_day=100)
    await lim.check_tokens(ALICE_CALLER)
    await lim.add_tokens(ALICE_CALLER, 60)
    await lim.check_tokens(ALICE_CALLER)
    await lim.add_tokens(ALICE_CALLER, 60)
    with pytest.raises(RateLimited) as info:
        await lim.check_tokens(ALICE_CALLER)
    assert info.value.extra["limit"] == "tokens_per_day"
    assert info.value.retry_after is not None and 0 < info.value.retry_after <= 86_400


async def test_requests_refill_over_the_minute() -> None:
    now = [1000.0]
    lim = limiter(MemoryBackend(clock=lambda: now[0]), requests_per_minute=2)
    await lim.check_request(ALICE_CALLER)
    await lim.check_request(ALICE_CALLER)
    with pytest.raises(RateLimited) as info:
        await lim.check_request(ALICE_CALLER)
    assert info.value.retry_after == pytest.approx(30.0)
    now[0] += 30.0
    await lim.check_request(ALICE_CALLER)


@pytest.fixture
async def redis_backend() -> AsyncIterator[LimitBackend]:
    from redis.asyncio import Redis
    from redis.exceptions import RedisError

    from app.limits.redis_backend import RedisBackend

    client = Redis.from_url("redis://127.0.0.1:6379/0")
    try:
        await client.ping()
    except (RedisError, OSError) as exc:
        await client.aclose()
        pytest.skip(f"Redis not reachable: {exc}")
    backend = RedisBackend(client, namespace=f"test:{uuid.uuid4().hex}:")
    yield backend
    await backend.aclose()


async def test_redis_backend_enforces_the_same_limits(redis_backend: LimitBackend) -> None:
    lim = limiter(redis_backend, requests_per_minute=2, concurrent_runs=1, tokens_per_day=10)
    await lim.check_request(ALICE_CALLER)
    await lim.check_request(ALICE_CALLER)
    with pytest.raises(RateLimited):
        await lim.check_request(ALICE_CALLER)
    await lim.acquire_run(ALICE_CALLER, "r1")
    with pytest.raises(RateLimited):
        await lim.acquire_run(ALICE_CALLER, "r2")
    await lim.release_run(ALICE_CALLER, "r1")
    await lim.acquire_run(ALICE_CALLER, "r2")
    await lim.add_tokens(ALICE_CALLER, 11)
    with pytest.raises(RateLimited):
        await lim.check_tokens(ALICE_CALLER)


async def test_an_unreachable_redis_lets_requests_through() -> None:
    from app.limits.redis_backend import RedisBackend

    backend = RedisBackend.from_url("redis://127.0.0.1:1/0")
    lim = limiter(backend, requests_per_minute=1, concurrent_runs=1)
    for _ in range(3):
        await lim.check_request(ALICE_CALLER)
    await lim.acquire_run(ALICE_CALLER, "r1")
    await lim.acquire_run(ALICE_CALLER, "r2")
    await backend.aclose()


async def test_an_oversized_body_is_413_with_the_standard_error(
    make_api: MakeApi, tmp_path: Path
) -> None:
    async with make_api(limited(tmp_path, max_body_bytes=200)) as api:
        big = {"title": "x" * 500}
        response = await api.post("/api/conversations", json=big, headers=ALICE)
        small = await api.post("/api/conversations", json={"title": "ok"}, headers=ALICE)
    assert response.status_code == 413
    assert response.json() == {
        "error": {
            "code": "payload_too_large",
            "message": "Request body exceeds the limit of 200 bytes.",
        }
    }
    assert response.headers["x-request-id"]
    assert small.status_code == 201


async def test_a_chunked_body_is_cut_off_at_the_limit(make_api: MakeApi, tmp_path: Path) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"title": "'
        for _ in range(10):
            yield b"x" * 100
        yield b'"}'

    async with make_api(limited(tmp_path, max_body_bytes=200)) as api:
        response = await api.post(
            "/api/conversations",
            content=chunks(),
            headers={**ALICE, "Content-Type": "application/json"},
        )
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"


async def test_the_openai_surface_gets_413_in_openai_shape(
    make_api: MakeApi, tmp_path: Path
) -> None:
    # The stateless chat routes also take a file inline (a data URL) on top of the cap.
    settings = limited(tmp_path, max_body_bytes=100, upload_max_bytes=10)
    async with make_api(settings) as api:
        response = await api.post(
            "/v1/chat/completions",
            json={"model": "scripted", "messages": [{"role": "user", "content": "x" * 300}]},
            headers=ALICE,
        )
    assert response.status_code == 413
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["code"] == "payload_too_large"


async def test_past_the_cap_a_chat_body_may_carry_inline_files_only(
    make_api: MakeApi, tmp_path: Path
) -> None:
    # The inline-file allowance took any JSON: 11 MB of tiny messages was read, on the event
    # loop, for some 20 seconds while every other stream of the process waited.
    settings = limited(tmp_path, max_body_bytes=2_000, upload_max_bytes=10_000)
    csv = base64.b64encode(b"region,total\nnorth,1\n" * 300).decode()
    attached = [
        {"type": "text", "text": "sum it"},
        {"type": "file", "file": {"filename": "t.csv", "file_data": f"data:text/csv;base64,{csv}"}},
    ]
    async with make_api(settings) as api:
        chatty = await api.post(
            "/v1/chat/completions",
            json={"model": "scripted", "messages": [{"role": "user", "content": "hi"}] * 200},
            headers=ALICE,
        )
        with_file = await api.post(
            "/v1/chat/completions",
            json={"model": "scripted", "messages": [{"role": "user", "content": attached}]},
            headers=ALICE,
        )

    assert chatty.status_code == 413
    assert chatty.json()["error"] == {
        "message": "Request body exceeds the limit of 2000 bytes (inline files aside).",
        "type": "invalid_request_error",
        "param": None,
        "code": "payload_too_large",
    }
    assert with_file.status_code == 200, with_file.text


async def test_an_inline_file_with_escaped_slashes_passes_the_cap_as_any_other(
    make_api: MakeApi, tmp_path: Path
) -> None:
    # JSON may escape `/` as `\/` (PHP's json_encode does by default), and base64 and data
    # URLs are full of slashes: such a file was not counted as a file, so the request was 413.
    settings = limited(tmp_path, max_body_bytes=2_000, upload_max_bytes=10_000)
    csv = base64.b64encode(b"region,total\nnorth,1\n" * 300).decode()
    url = f"data:text/csv;base64,{csv}".replace("/", "\\/")
    filename = '"filename": "t.csv"'
    body = (
        '{"model": "scripted", "messages": [{"role": "user", "content": ['
        '{"type": "text", "text": "sum it"}, '
        f'{{"type": "file", "file": {{{filename}, "file_data": "{url}"}}}}]}}]}}'
    )
    async with make_api(settings) as api:
        answer = await api.post(
            "/v1/chat/completions",
            content=body.encode(),
            headers={**ALICE, "content-type": "application/json"},
        )

    assert answer.status_code == 200, answer.text


async def test_instances_sharing_redis_share_the_limit(
    make_api: MakeApi, tmp_path: Path, redis_backend: LimitBackend
) -> None:
    """Two instances behind a load balancer: the caller's budget is one, not one each."""
    user = bearer(hs_token(sub=f"user-{uuid.uuid4().hex}"))
    settings = limited(
        tmp_path, rate_limit_requests_per_minute=3, redis_url="redis://127.0.0.1:6379/0"
    )
    async with make_api(settings) as first, make_api(settings) as second:
        codes = [
            (await api.get("/api/me", headers=user)).status_code
            for api in (first, second, first, second)
        ]
    assert codes == [200, 200, 200, 429]


@pytest.mark.parametrize("cors", [False, True])
async def test_the_body_guard_answers_alike_with_and_without_cors(
    make_api: MakeApi, tmp_path: Path, cors: bool
) -> None:
    """Without CORS the request context guards the body itself; under CORS a layer of its
    own does, below CORS so that its answers carry CORS's headers. Same answers either way."""
    origins = ["https://chat.example"] if cors else []
    origin = {"Origin": "https://chat.example"}

    async def chunks(size: int) -> AsyncIterator[bytes]:
        yield b'{"title": "'
        yield b"x" * size
        yield b'"}'

    settings = limited(tmp_path, max_body_bytes=200, cors_origins=origins)
    async with make_api(settings) as api:
        declared = await api.post(
            "/api/conversations", json={"title": "x" * 500}, headers={**ALICE, **origin}
        )
        counted = await api.post(
            "/api/conversations",
            content=chunks(500),
            headers={**ALICE, **origin, "Content-Type": "application/json"},
        )
        nul = await api.get("/api/conversations%00", headers={**ALICE, **origin})
        at_limit = await api.post(
            "/api/conversations",
            content=b'{"title": "' + b"x" * 187 + b'"}',
            headers={**ALICE, **origin, "Content-Type": "application/json"},
        )
        small_chunked = await api.post(
            "/api/conversations",
            content=chunks(10),
            headers={**ALICE, **origin, "Content-Type": "application/json"},
        )
    too_large = {
        "error": {
            "code": "payload_too_large",
            "message": "Request body exceeds the limit of 200 bytes.",
        }
    }
    assert (declared.status_code, declared.json()) == (413, too_large)
    assert (counted.status_code, counted.json()) == (413, too_large)
    assert nul.status_code == 400
    assert nul.json()["error"]["code"] == "invalid_characters"
    assert int(at_limit.request.headers["content-length"]) == 200
    assert (at_limit.status_code, small_chunked.status_code) == (201, 201)
    for response in (declared, counted, nul, at_limit, small_chunked):
        assert response.headers["x-request-id"]
        allowed = response.headers.get("access-control-allow-origin")
        assert allowed == ("https://chat.example" if cors else None)
