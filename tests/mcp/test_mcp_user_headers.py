"""Per-user headers: a streamable-HTTP server hears who each call is for, from the caller,
on a connection of the call's own; the values stay out of logs and results elsewhere."""

from __future__ import annotations

import jwt
import pytest
from pydantic import SecretStr

from app.auth.forwarding import Forwarder
from app.mcp.config import McpServerConfig
from tests.mcp.conftest import HttpServer, Mount, http_config
from tests.tools.conftest import ALICE, MALLORY

SECRET = "forward-secret-0123456789abcdef0123456789"
HEADERS = {"X-User-Id": "{user_id}", "X-User-Token": "Bearer {user_token}"}


def _forwarder() -> Forwarder:
    return Forwarder(secret=SecretStr(SECRET), issuer="chat-bff", ttl_seconds=60)


async def test_each_call_carries_its_callers_id_and_a_token_minted_for_the_server(
    mount: Mount, http_server: HttpServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    mounted = await mount(http_config(http_server, user_headers=HEADERS), forwarder=_forwarder())

    alice = await mounted.outcome("web__whoami", {}, caller=ALICE)
    mallory = await mounted.outcome("web__whoami", {}, caller=MALLORY, call_id="call_2")

    assert alice.result["x-user-id"] == "alice"
    assert mallory.result["x-user-id"] == "mallory"
    token = alice.result["x-user-token"].removeprefix("Bearer ")
    claims = jwt.decode(token, SECRET, algorithms=["HS256"], audience="web")
    assert claims["sub"] == "alice"
    assert claims["act"] == {"sub": "chat-bff"}
    assert token not in caplog.text


async def test_the_shared_connection_carries_no_callers_headers(
    mount: Mount, http_server: HttpServer
) -> None:
    mounted = await mount(http_config(http_server), forwarder=_forwarder())

    outcome = await mounted.outcome("web__whoami", {}, caller=ALICE)

    assert outcome.result == {"x-user-id": "<none>", "x-user-token": "<none>"}


async def test_without_a_way_to_forward_the_users_identity_the_call_fails_and_never_runs(
    mount: Mount, http_server: HttpServer
) -> None:
    mounted = await mount(http_config(http_server, user_headers=HEADERS))

    outcome = await mounted.outcome("web__whoami", {}, caller=ALICE)

    assert outcome.status == "error"
    assert "cannot forward the user's identity" in outcome.result["error"]


async def test_a_user_id_header_alone_needs_no_token(mount: Mount, http_server: HttpServer) -> None:
    mounted = await mount(http_config(http_server, user_headers={"X-User-Id": "u-{user_id}"}))

    outcome = await mounted.outcome("web__whoami", {}, caller=ALICE)

    assert outcome.result == {"x-user-id": "u-alice", "x-user-token": "<none>"}


def test_a_template_naming_anything_else_is_refused_at_start() -> None:
    with pytest.raises(ValueError, match="unknown password"):
        McpServerConfig.model_validate(
            {
                "name": "web",
                "transport": "streamable-http",
                "url": "http://127.0.0.1:1/mcp",
                "user_headers": {"X-Secret": "{password}"},
            }
        )
