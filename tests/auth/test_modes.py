"""Development mode opens the door loudly; production refuses to start with it open."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr, ValidationError

from app.settings import Settings
from tests.auth.tokens import rsa_keys, sqlite_settings
from tests.fakes.db import MakeApi

STRONG = "Vq3x-9LmZ_r8TkP2wYb7nC4dH6sJ0fGa"


def production(**values: Any) -> Settings:
    return Settings(_env_file=None, environment="production", **values)


def test_production_refuses_to_start_without_auth() -> None:
    with pytest.raises(ValidationError, match="production needs authentication"):
        production()


@pytest.mark.parametrize(
    "secret",
    [
        "changeme",
        "secret",
        "short-but-random-9f8e",
        "change-me-please-to-something-long-x",
        "a" * 64,
        "abababababababababababababababab",
    ],
)
def test_production_refuses_a_weak_or_default_secret(secret: str) -> None:
    with pytest.raises(ValidationError, match="too weak"):
        production(jwt_secret=SecretStr(secret))


def test_production_starts_with_a_strong_secret_or_a_public_key() -> None:
    assert production(jwt_secret=SecretStr(STRONG)).auth_configured
    assert production(jwt_public_key=rsa_keys().public_pem).auth_configured


def test_the_weak_secret_never_appears_in_the_error() -> None:
    with pytest.raises(ValidationError) as info:
        production(jwt_secret=SecretStr("changeme-0123456789-0123456789-x"))
    assert "changeme-0123456789" not in str(info.value)


async def test_development_mode_makes_everyone_the_local_user_and_warns(
    make_api: MakeApi, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="chat_bff.auth")
    settings = sqlite_settings(tmp_path, local_user_id="dev-me")
    async with make_api(settings) as api:
        me = await api.get("/api/me")
        # An OpenAI SDK pointed at a dev instance sends some bearer key: still the local user.
        with_sdk_key = await api.get("/api/me", headers={"Authorization": "Bearer sk-anything"})
    assert me.json() == {"user_id": "dev-me", "roles": ["admin", "user"], "method": "development"}
    assert with_sdk_key.json()["user_id"] == "dev-me"
    assert any("AUTHENTICATION IS OFF" in r.getMessage() for r in caplog.records)
