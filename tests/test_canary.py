"""Secrets hygiene: canary keys never surface in logs, responses, SSE, the database or metrics.

The run manager's paths (conversations, SSE follow, cancel) are driven here as far as they
exist; extend `drive` when new surfaces land.
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import SecretStr

from app.providers.scripted import Script, ScriptedError, ScriptedProvider, ScriptedTurn
from app.settings import Settings
from tests.auth.tokens import bearer, hs_token
from tests.canary import Seen, canary, capture_logs, dump_database
from tests.fakes.db import MakeApi
from tests.fakes.openai_upstream import FakeOpenAIUpstream, server_error, unauthorized

OPENAI_KEY = canary("sk-proj-")
ANTHROPIC_KEY = canary("sk-ant-api03-")
JWT_SECRET = canary("jwt-")
CANARIES = [OPENAI_KEY, ANTHROPIC_KEY, JWT_SECRET]
ALICE = bearer(hs_token(sub="alice", secret=JWT_SECRET))


def canary_settings(base: Settings, **values: Any) -> Settings:
    return base.model_copy(
        update={
            "openai_api_key": SecretStr(OPENAI_KEY),
            "anthropic_api_key": SecretStr(ANTHROPIC_KEY),
            "jwt_secret": SecretStr(JWT_SECRET),
            "log_level": "DEBUG",
            "log_json": True,
            "provider_max_retries": 0,
            **values,
        }
    )


async def drive(api: Any, seen: Seen, model: str) -> None:
    """Every surface that can carry an upstream failure back to a client."""
    chat = {"model": model, "messages": [{"role": "user", "content": "hello"}]}
    seen.response(await api.post("/api/chat", json=chat, headers=ALICE))
    seen.response(await api.post("/api/chat", json={**chat, "stream": True}, headers=ALICE))
    seen.response(await api.post("/v1/chat/completions", json=chat, headers=ALICE))
    seen.response(
        await api.post("/v1/chat/completions", json={**chat, "stream": True}, headers=ALICE)
    )
    created = await api.post("/api/conversations", json={"model": model}, headers=ALICE)
    seen.response(created)
    if created.status_code == 201:
        conversation_id = created.json()["id"]
        sent = await api.post(
            f"/api/conversations/{conversation_id}/messages",
            json={"content": "hello", "model": model, "stream": True},
            headers=ALICE,
        )
        seen.response(sent)
        seen.response(await api.get(f"/api/conversations/{conversation_id}", headers=ALICE))
    seen.response(await api.get("/api/models", headers=ALICE))
    seen.add("metrics", (await api.get("/metrics")).text)
    seen.add("database", await dump_database(api.services.db.sessions))


async def test_upstream_auth_and_server_failures_leak_no_key(
    make_api: MakeApi, app_settings: Settings, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.default = unauthorized(OPENAI_KEY)
    openai_upstream.enqueue(server_error(), server_error())
    settings = canary_settings(
        app_settings, openai_base_url=openai_upstream.base_url, default_model="gpt-4o-mini"
    )
    seen = Seen()
    with capture_logs() as logs:
        async with make_api(settings) as api:
            await drive(api, seen, "gpt-4o-mini")
    seen.add("logs", logs.text())
    assert len(openai_upstream.requests) >= 4, "the upstream was never reached"
    assert any(
        OPENAI_KEY in r.headers.get("authorization", "") for r in openai_upstream.requests
    ), "the canary key is not the key in use"
    assert seen.find(CANARIES) == []
    statuses = [
        t.split("\n", 1)[0] for k, v in seen.places.items() if k.startswith("resp") for t in v
    ]
    assert not any(s.startswith("5") and s != "502" and s != "504" for s in statuses), statuses


async def test_a_scripted_upstream_failure_leaks_no_secret(
    make_api: MakeApi, app_settings: Settings
) -> None:
    script = Script(
        mode="rules", turns=[ScriptedTurn(error=ScriptedError(status=503, message="down"))]
    )
    settings = canary_settings(app_settings, default_model="scripted")
    seen = Seen()
    with capture_logs() as logs:
        async with make_api(settings, providers={"scripted": ScriptedProvider(script)}) as api:
            await drive(api, seen, "scripted")
    seen.add("logs", logs.text())
    assert seen.find(CANARIES) == []


async def test_the_redaction_filter_is_a_last_line_of_defence(
    make_api: MakeApi, app_settings: Settings, capfd: Any
) -> None:
    """Even a careless log call with the key in it does not reach the output."""
    async with make_api(canary_settings(app_settings)):
        logging.getLogger("chat_bff.careless").error(
            "upstream said: Incorrect API key provided: %s",
            OPENAI_KEY,
            extra={"api_key": ANTHROPIC_KEY, "detail": {"authorization": f"Bearer {JWT_SECRET}"}},
        )
    err = capfd.readouterr().err
    assert "upstream said" in err
    seen = Seen()
    seen.add("stderr", err)
    assert seen.find(CANARIES) == []


def test_settings_never_print_their_secrets(app_settings: Settings) -> None:
    settings = canary_settings(app_settings)
    seen = Seen()
    seen.add("repr", repr(settings))
    seen.add("json", settings.model_dump_json())
    assert seen.find(CANARIES) == []


async def test_the_identity_objects_never_print_a_secret(
    make_api: MakeApi, app_settings: Settings
) -> None:
    """A repr lands in tracebacks and debug lines: none of these may show the JWT secret."""
    async with make_api(canary_settings(app_settings)) as api:
        authenticator = api.services.authenticator
        verifier = authenticator._config.jwt
        assert verifier is not None
        seen = Seen()
        for obj in (authenticator, authenticator._config, verifier, verifier._secret):
            seen.add("repr", repr(obj))
    assert seen.find(CANARIES) == []
