"""A method a path does not serve is 405 with an `Allow` header naming every method that
path does serve (RFC 9110 15.5.6), over real HTTP: a client (or a generated SDK's retry
logic) reads `Allow` to learn what it may send. Starlette's router named only the first
matching route's methods, so `/api/conversations/{id}` answered `Allow: GET` though it
also takes PATCH and DELETE."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from tests.fakes.db import ApiClient
from tests.support.loopback import served


@pytest.fixture
async def base(api: ApiClient) -> AsyncIterator[str]:
    async with served(api.app) as url:
        yield url


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("PUT", "/api/conversations/conv_1", "DELETE, GET, PATCH"),
        ("POST", "/api/conversations/conv_1", "DELETE, GET, PATCH"),
        ("PUT", "/api/conversations", "GET, POST"),
        ("DELETE", "/api/approvals/appr_1", "GET, POST"),
        ("PATCH", "/api/files/file_1", "DELETE, GET"),
        ("PUT", "/v1/conversations/conv_1", "DELETE, GET, POST"),
    ],
)
async def test_a_method_the_path_does_not_serve_is_405_naming_every_method_it_does(
    base: str, method: str, path: str, allowed: str
) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=10) as http:
        response = await http.request(method, path)

    assert response.status_code == 405
    assert response.headers["allow"] == allowed
    assert response.json()["error"]["code"] == "method_not_allowed"
