"""Clients for the conversation-run tests: the offline scripted model, or Anthropic behind a
fake upstream."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from pydantic import SecretStr

from app.providers.scripted import Script, ScriptedProvider
from app.settings import Settings
from tests.api.runs.helpers import CLAUDE
from tests.fakes.anthropic_upstream import (
    AnthropicUpstream,
)
from tests.fakes.db import ApiClient, MakeApi


@pytest.fixture
async def client(make_api: MakeApi, app_settings: Settings) -> AsyncIterator[ApiClient]:
    async with make_api(
        app_settings, providers={"scripted": ScriptedProvider(Script(mode="sequence", turns=[]))}
    ) as api:
        yield api


@pytest.fixture
async def claude(
    make_api: MakeApi, app_settings: Settings, anthropic_upstream: AnthropicUpstream
) -> AsyncIterator[ApiClient]:
    settings = app_settings.model_copy(
        update={
            "models_json": CLAUDE,
            "anthropic_api_key": SecretStr("sk-ant-test"),
            "anthropic_base_url": anthropic_upstream.base_url,
            "provider_max_retries": 0,
        }
    )
    async with make_api(settings) as api:
        yield api
