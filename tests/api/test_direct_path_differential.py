"""The stateless turn routes answer every request as FastAPI's own handler answers it.

`app.api.direct_handler` serves the ordinary requests of `/api/chat`, `/v1/chat/completions`
and `/v1/responses` without FastAPI's dependency solver, and once a route is known its
requests go to it past the routing layers (`app.api.known_routes`). Here one corpus of
requests (content types, odd bodies, auth, streaming, headers, methods, CORS, the caller's
rate running out) goes through two apps on one database: one as it runs, one whose routes
are left to FastAPI's handler and layers. What a client sees (status, body, the headers that
matter, the caller's usage afterwards) must be the same, request by request."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

import pytest
from fastapi import routing as fastapi_routing
from fastapi.dependencies.utils import solve_dependencies
from pydantic import SecretStr
from starlette.middleware.exceptions import ExceptionMiddleware

from app.api import direct_handler
from app.limits.backends import MemoryBackend
from app.settings import Settings
from tests.auth.tokens import HS_SECRET, bearer, hs_token
from tests.fakes.db import ApiClient, MakeApi

ROUTES: dict[str, dict[str, Any]] = {
    "/api/chat": {"messages": [{"role": "user", "content": "Hi"}]},
    "/v1/chat/completions": {
        "model": "scripted",
        "messages": [{"role": "user", "content": "Hi"}],
    },
    "/v1/responses": {"model": "scripted", "input": "Hi"},
}
MAX_BODY = 4_000
ORIGIN = "http://ui.test"
JSON = "application/json"
COMPARED_HEADERS = (
    "content-type",
    "cache-control",
    "retry-after",
    "x-request-id",
    "x-accel-buffering",
    "allow",
    "access-control-allow-origin",
    "access-control-allow-methods",
    "access-control-allow-headers",
    "access-control-allow-credentials",
    "www-authenticate",
)


@dataclass
class Case:
    """One request: its body built from the route's ordinary body."""

    name: str
    body: Callable[[dict[str, Any]], bytes | None] = lambda ok: json.dumps(ok).encode()
    headers: list[tuple[str, str]] = field(default_factory=lambda: [("content-type", JSON)])
    method: str = "POST"
    query: str = ""
    auth: str = "valid"  # "valid" | "none" | "invalid" | "expired"
    chunked: bool = False


def _with(**extra: Any) -> Callable[[dict[str, Any]], bytes]:
    return lambda ok: json.dumps({**ok, **extra}).encode()


def _raw(data: bytes) -> Callable[[dict[str, Any]], bytes]:
    return lambda ok: data


def _nested(depth: int) -> Callable[[dict[str, Any]], bytes]:
    return lambda ok: json.dumps({**ok, "metadata": {"x": "[" * depth + "]" * depth}}).encode()


def _deep(depth: int) -> Callable[[dict[str, Any]], bytes]:
    return lambda ok: json.dumps(ok)[:-1].encode() + b', "x": ' + b"[" * depth + b"]" * depth + b"}"


def _text(content: str) -> Callable[[dict[str, Any]], bytes]:
    def body(ok: dict[str, Any]) -> bytes:
        text = json.dumps(ok)
        return text.replace('"Hi"', json.dumps(content)).encode()

    return body


def _sized(size: int) -> Callable[[dict[str, Any]], bytes]:
    def body(ok: dict[str, Any]) -> bytes:
        short = json.dumps(ok).replace('"Hi"', '"H"')
        return short.replace('"H"', '"' + "H" * (size - len(short) + 1) + '"').encode()

    return body


def _ct(*values: str) -> list[tuple[str, str]]:
    return [("content-type", value) for value in values]


CORPUS = [
    Case("ordinary"),
    Case("upper-case type", headers=_ct("Application/JSON")),
    Case("charset utf-8", headers=_ct("application/json; charset=utf-8")),
    Case("charset latin-1", headers=_ct("application/json;charset=latin-1")),
    Case("spaced parameters", headers=_ct(" application/json ;  charset=UTF-8 ")),
    Case("vendor +json", headers=_ct("application/vnd.foo+json")),
    Case("no content type", headers=[]),
    Case("empty content type", headers=_ct("")),
    Case("text/plain", headers=_ct("text/plain")),
    Case("json with junk", headers=_ct("application/json garbage")),
    Case("two types, json first", headers=_ct(JSON, "text/plain")),
    Case("two types, text first", headers=_ct("text/plain", JSON)),
    Case("empty body", body=_raw(b"")),
    Case("whitespace body", body=_raw(b" \n\t ")),
    Case("BOM", body=lambda ok: b"\xef\xbb\xbf" + json.dumps(ok).encode()),
    Case("null", body=_raw(b"null")),
    Case("array", body=_raw(b"[]")),
    Case("number", body=_raw(b"42")),
    Case("string", body=_raw(b'"Hi"')),
    Case("truncated", body=lambda ok: json.dumps(ok).encode()[:-1]),
    Case("nested 100", body=_deep(98)),
    Case("nested 150", body=_deep(150)),
    Case("nested string", body=_nested(150)),
    Case("NaN", body=lambda ok: json.dumps(ok)[:-1].encode() + b', "temperature": NaN}'),
    Case("Infinity", body=lambda ok: json.dumps(ok)[:-1].encode() + b', "x": -Infinity}'),
    Case("lone surrogate", body=lambda ok: json.dumps(ok).replace("Hi", "H\\ud800").encode()),
    Case("NUL", body=lambda ok: json.dumps(ok).replace("Hi", "H\\u0000").encode()),
    Case("invalid UTF-8", body=lambda ok: json.dumps(ok).replace("Hi", "H\xff").encode("latin-1")),
    Case("latin-1 bytes", body=_text("Grüße"), headers=_ct("application/json; charset=latin-1")),
    Case("just under the limit", body=_sized(MAX_BODY - 10)),
    Case("over the limit", body=_sized(MAX_BODY + 100)),
    Case("chunked", chunked=True),
    Case("chunked over the limit", body=_sized(MAX_BODY + 100), chunked=True),
    Case("unknown field", body=_with(unknown_field=1)),
    Case("wrong type", body=_with(messages="not a list", input=7)),
    Case("model wrong type", body=_with(model=5)),
    Case("extra query", query="?foo=bar&stream=true"),
    Case("no auth", auth="none"),
    Case("invalid token", auth="invalid"),
    Case("expired token", auth="expired"),
    Case("no auth, bad body", auth="none", body=_raw(b"{")),
    Case("stream true", body=_with(stream=True)),
    Case("stream false", body=_with(stream=False)),
    Case("stream null", body=_with(stream=None)),
    Case("accept SSE", headers=[("content-type", JSON), ("accept", "text/event-stream")]),
    Case("accept JSON, stream", body=_with(stream=True), headers=[*_ct(JSON), ("accept", JSON)]),
    Case("request id", headers=[*_ct(JSON), ("x-request-id", "client-id-1")]),
    Case("insane request id", headers=[*_ct(JSON), ("x-request-id", "a b\x7f" * 40)]),
    Case("idempotency key", headers=[*_ct(JSON), ("idempotency-key", "k-1")]),
    Case("origin", headers=[*_ct(JSON), ("origin", ORIGIN)]),
    Case("GET", method="GET", body=_raw(b"")),
    Case("HEAD", method="HEAD", body=_raw(b"")),
    Case("OPTIONS", method="OPTIONS", body=_raw(b""), headers=[]),
    Case(
        "CORS preflight",
        method="OPTIONS",
        body=_raw(b""),
        headers=[
            ("origin", ORIGIN),
            ("access-control-request-method", "POST"),
            ("access-control-request-headers", "content-type, authorization"),
        ],
    ),
    Case("PUT", method="PUT"),
]
# Requests a minute: more than the corpus counts once, less than twice, so the caller's rate
# runs out in the second round, and both apps must refuse the same request first.
RATE = 60


def _tokens(sub: str) -> dict[str, dict[str, str]]:
    return {
        "valid": bearer(hs_token(sub=sub)),
        "none": {},
        "invalid": bearer(hs_token(sub=sub, secret="another-secret-of-32-bytes-at-least!")),
        "expired": bearer(hs_token(sub=sub, exp_in=-3600)),
    }


async def _chunks(data: bytes) -> AsyncIterator[bytes]:
    for start in range(0, len(data), 700):
        yield data[start : start + 700]


_IDS = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    r"|\b[a-z]+_(?=[A-Za-z]*\d)[0-9A-Za-z]{8,}|\bchatcmpl-[0-9A-Za-z_-]+|\b[0-9a-f]{16,}\b"
)
_TIMES = re.compile(r'("(?:created|created_at|completed_at|updated_at|ts|at)": ?)[0-9.]+')
_ISO = re.compile(r"\d{4}-\d\d-\d\dT[0-9:.]+(?:Z|[+-]\d\d:\d\d)?")


def _normal(text: str, sub: str) -> str:
    text = text.replace(sub, "<caller>")
    return _ISO.sub("<time>", _TIMES.sub(r"\1<time>", _IDS.sub("<id>", text)))


async def _answer(api: ApiClient, url: str, case: Case, sub: str) -> dict[str, Any]:
    body = case.body(ROUTES[url])
    headers = [*case.headers, *_tokens(sub)[case.auth].items()]
    content: Any = _chunks(body) if case.chunked and body else body
    response = await api.request(case.method, url + case.query, content=content, headers=headers)
    seen = {name: response.headers.get(name) for name in COMPARED_HEADERS}
    if seen["x-request-id"] is not None and case.name != "request id":
        seen["x-request-id"] = "<generated>" if seen["x-request-id"] else ""
    limits = {k: v for k, v in response.headers.items() if k.startswith("x-ratelimit")}
    limits.pop("x-ratelimit-reset-requests", None)  # seconds to the refill: a clock reading
    return {
        "status": response.status_code,
        "headers": seen,
        "rate": limits,
        "body": _normal(response.text, sub),
    }


async def _run(api: ApiClient, url: str, sub: str) -> tuple[list[dict[str, Any]], Any]:
    answers = []
    usage: Any = None
    for round_ in range(2):  # the second round runs the caller's rate out
        for case in CORPUS:
            answers.append({"case": f"{round_}:{case.name}", **await _answer(api, url, case, sub)})
        if usage is None:
            read = await api.get("/api/usage", headers=_tokens(sub)["valid"])
            usage = (read.status_code, _normal(read.text, sub))
    return answers, usage


@pytest.fixture
def solver_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each request FastAPI's dependency solver serves, by path."""
    calls: list[str] = []
    solve = solve_dependencies  # what `fastapi.routing`'s handler calls, by that name

    async def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs["request"].url.path)
        return await solve(*args, **kwargs)

    monkeypatch.setattr(fastapi_routing, "solve_dependencies", counted)
    return calls


@pytest.fixture
def layered_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Each request that went through the routing layers (Starlette's exception middleware
    is their first), by method and path."""
    calls: list[tuple[str, str]] = []
    call = ExceptionMiddleware.__call__

    async def counted(self: ExceptionMiddleware, scope: Any, receive: Any, send: Any) -> None:
        calls.append((scope.get("method", ""), scope.get("path", "")))
        await call(self, scope, receive, send)

    monkeypatch.setattr(ExceptionMiddleware, "__call__", counted)
    return calls


def known_route_served(layered: list[tuple[str, str]], url: str) -> bool:
    """No POST to `url` went through the routing layers: the known route took them all."""
    return ("POST", url) not in layered


@pytest.mark.parametrize("url", ROUTES)
async def test_the_direct_path_answers_every_request_as_fastapi_does(
    make_api: MakeApi,
    app_settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    solver_calls: list[str],
    layered_calls: list[tuple[str, str]],
    url: str,
) -> None:
    settings = app_settings.model_copy(
        update={
            "jwt_secret": SecretStr(HS_SECRET),
            "rate_limit_requests_per_minute": RATE,
            "max_body_bytes": MAX_BODY,
            "upload_max_bytes": 10,
            "cors_origins": [ORIGIN],
        }
    )
    # The limiter's clock stands still: the caller's rate runs out at the same request in
    # both apps however long the corpus takes, and Retry-After reads the same.
    monkeypatch.setattr(MemoryBackend.__init__, "__defaults__", (lambda: 1_000.0,))
    async with AsyncExitStack() as stack:
        direct = await stack.enter_async_context(make_api(settings))
        solver = await stack.enter_async_context(make_api(settings))
        # An app builds its included routes' handlers at its first request.
        ordinary = await direct.post(url, json=ROUTES[url], headers=_tokens("probe")["valid"])
        assert ordinary.status_code == 200, ordinary.text
        assert url not in solver_calls  # the direct path served it
        with monkeypatch.context() as patch:  # these handlers are FastAPI's alone
            patch.setattr(direct_handler, "_telemetry_probe", lambda: None)
            ordinary = await solver.post(url, json=ROUTES[url], headers=_tokens("probe")["valid"])
        assert solver_calls == [url]  # and here FastAPI's handler did

        layered_calls.clear()
        direct_answers, direct_usage = await _run(direct, url, "caller-direct")
        assert known_route_served(layered_calls, url)  # past the routing layers
        solver_answers, solver_usage = await _run(solver, url, "caller-solver")
        assert ("POST", url) in layered_calls  # and here through them

    differences = [
        (mine, theirs)
        for mine, theirs in zip(direct_answers, solver_answers, strict=True)
        if mine != theirs
    ]
    assert differences == []
    assert direct_usage == solver_usage
    statuses = {answer["status"] for answer in direct_answers}
    assert {200, 401, 413, 429} <= statuses  # the corpus reached what it means to reach


SEND = {"content": "Hi"}
_JWT = re.compile(r"eyJ[\w-]*\.[\w-]*\.[\w-]*")
SEND_CORPUS = [
    Case("ordinary"),
    Case("streamed", body=lambda ok: json.dumps({**ok, "stream": True}).encode()),
    Case("typed parts", body=_raw(b'{"content": [{"type": "text", "data": {"text": "Hi"}}]}')),
    Case("no content type", headers=[]),
    Case("text/plain", headers=_ct("text/plain")),
    Case("empty body", body=_raw(b"")),
    Case("truncated", body=lambda ok: json.dumps(ok).encode()[:-1]),
    Case("wrong type", body=_raw(b'{"content": 5}')),
    Case("empty content", body=_raw(b'{"content": ""}')),
    Case("unknown field", body=_with(unknown_field=1)),
    Case("NUL", body=lambda ok: json.dumps(ok).replace("Hi", "H\\u0000").encode()),
    Case("no auth", auth="none"),
    Case("expired token", auth="expired"),
    Case("no auth, bad body", auth="none", body=_raw(b"{")),
]


def _stream_token(token: re.Match[str]) -> str:
    """A run's stream token as what it grants: its header and claims (the run's id and the
    caller normalised with the rest of the body, its minting time read as its lifetime).
    Its signature is over those ids and times, so it differs by right and is left out; it
    is read before the body's ids are, which would otherwise cut into its base64 text."""
    header, claims, signature = token.group().split(".")
    assert signature
    read = [
        json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
        for part in (header, claims)
    ]
    read[1]["ttl"] = read[1].pop("exp") - read[1].pop("iat")
    return "<token " + json.dumps(read, sort_keys=True) + ">"


async def _sent(api: ApiClient, sub: str, case: Case, cid: str | None) -> dict[str, Any]:
    """`case` sent to a new conversation of the caller's (or to `cid`)."""
    valid = _tokens(sub)["valid"]
    if cid is None:
        created = await api.post("/api/conversations", json={"title": case.name}, headers=valid)
        assert created.status_code == 201, created.text
        cid = str(created.json()["id"])
    url = f"/api/conversations/{cid}/messages"
    headers = [*case.headers, *_tokens(sub)[case.auth].items()]
    response = await api.request(case.method, url, content=case.body(SEND), headers=headers)
    seen = {name: response.headers.get(name) for name in COMPARED_HEADERS}
    if seen["x-request-id"] is not None:
        seen["x-request-id"] = "<generated>" if seen["x-request-id"] else ""
    body = _normal(_JWT.sub(_stream_token, response.text), sub)
    return {"status": response.status_code, "headers": seen, "body": body}


async def test_a_route_with_a_path_parameter_answers_on_the_direct_path_as_fastapi_does(
    make_api: MakeApi, app_settings: Settings, solver_calls: list[str]
) -> None:
    """`POST /api/conversations/{id}/messages` (a body and a path parameter of plain text)
    goes past FastAPI's solver too, with the same answers: a conversation run's start
    costs no more than a stateless turn's in the request's handling."""
    settings = app_settings.model_copy(update={"jwt_secret": SecretStr(HS_SECRET)})
    answers: dict[str, list[dict[str, Any]]] = {}
    solved: dict[str, list[bool]] = {}
    async with AsyncExitStack() as stack:
        for name in ("direct", "solver"):
            api = await stack.enter_async_context(make_api(settings))
            with pytest.MonkeyPatch.context() as patch:
                if name == "solver":  # its handlers (built at a route's first request)
                    patch.setattr(direct_handler, "_telemetry_probe", lambda: None)
                sub = f"caller-{name}"
                other = await api.post("/api/conversations", json={}, headers=_tokens("x")["valid"])
                cases: list[tuple[Case, str | None]] = [(case, None) for case in SEND_CORPUS]
                cases += [(SEND_CORPUS[0], str(other.json()["id"])), (SEND_CORPUS[0], "conv_no")]
                answers[name], solved[name] = [], []
                for case, cid in cases:
                    before = len(solver_calls)
                    answers[name].append(await _sent(api, sub, case, cid))
                    solved[name].append(any(p.endswith("/messages") for p in solver_calls[before:]))
    assert solved["solver"][0]
    assert not solved["direct"][0]  # the ordinary send went past the solver
    names = [case.name for case in SEND_CORPUS] + ["someone else's", "missing"]
    differences = [
        (case, mine, theirs)
        for case, mine, theirs in zip(names, answers["direct"], answers["solver"], strict=True)
        if mine != theirs
    ]
    assert differences == [], "\n".join(map(str, differences))
    statuses = {answer["status"] for answer in answers["direct"]}
    assert {200, 202, 400, 401, 404, 422} <= statuses
