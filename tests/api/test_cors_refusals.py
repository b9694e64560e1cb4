"""A refused CORS preflight (an origin not in CORS_ORIGINS) is a 400 with the error body
every other refusal has, JSON with a code, in OpenAI's shape on /v1: it was plain text."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.settings import Settings
from tests.fakes.db import MakeApi

PREFLIGHT = {"Access-Control-Request-Method": "POST", "Origin": "https://evil.example"}


@pytest.mark.parametrize("path", ["/api/chat", "/v1/chat/completions"])
async def test_a_preflight_from_an_origin_not_allowed_is_a_json_400(
    make_api: MakeApi, app_settings: Settings, tmp_path: Path, path: str
) -> None:
    settings = app_settings.model_copy(update={"cors_origins": ["https://chat.example"]})
    async with make_api(settings) as api:
        refused = await api.options(path, headers=PREFLIGHT)

    assert refused.status_code == 400
    assert refused.headers["content-type"] == "application/json"
    assert "access-control-allow-origin" not in refused.headers
    error = refused.json()["error"]
    assert error["code"] == "cors_not_allowed"
    assert "origin" in error["message"]
    if path.startswith("/v1/"):
        assert (error["type"], error["param"]) == ("invalid_request_error", None)
