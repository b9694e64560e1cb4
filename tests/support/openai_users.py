"""The official openai SDK as signed-in users of an in-process app (httpx2 ASGITransport).

A plugin of tests/conftest.py: the fixtures `users_api` (the app), `me` and `other`."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2
import openai
import pytest
from pydantic import SecretStr

from app.settings import Settings
from tests.auth.tokens import HS_SECRET, hs_token
from tests.fakes.db import ApiClient, MakeApi


def openai_as(api: ApiClient, user: str) -> openai.AsyncOpenAI:
    """An AsyncOpenAI client whose API key is `user`'s JWT (the app needs `HS_SECRET`)."""
    http = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=api.app), base_url="http://t")
    return openai.AsyncOpenAI(
        api_key=hs_token(sub=user, roles=["user"]),
        base_url="http://t/v1",
        http_client=http,
        max_retries=0,
    )


@pytest.fixture
async def users_api(make_api: MakeApi, app_settings: Settings) -> AsyncIterator[ApiClient]:
    """The app with the scripted model by default, the example tools and JWTs signed with
    `HS_SECRET`."""
    settings = app_settings.model_copy(
        update={
            "example_tools_enabled": True,
            "jwt_secret": SecretStr(HS_SECRET),
            "default_model": "scripted",
        }
    )
    async with make_api(settings) as client:
        yield client


@pytest.fixture
async def me(users_api: ApiClient) -> AsyncIterator[openai.AsyncOpenAI]:
    """The openai SDK signed in as `me`."""
    async with openai_as(users_api, "me") as client:
        yield client


@pytest.fixture
async def other(users_api: ApiClient) -> AsyncIterator[openai.AsyncOpenAI]:
    """The openai SDK signed in as another user."""
    async with openai_as(users_api, "other") as client:
        yield client
