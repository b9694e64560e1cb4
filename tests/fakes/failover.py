"""A deployment with two real providers behind fake upstreams, for the failover tests: an
OpenAI primary that names an Anthropic fallback, and an answer cut after its first bytes.
A pytest plugin (tests/conftest.py): `failover_settings` is that deployment's settings."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import SecretStr

from app.settings import Settings
from tests.fakes.anthropic_upstream import AnthropicUpstream, MessageSpec, Text
from tests.fakes.openai_upstream import Completion, FakeOpenAIUpstream

HALF = "the first model starts an answer that never ends"
WHOLE = "Claude gives the whole answer."


def catalogue(*extra: dict[str, Any], **primary: Any) -> str:
    """`gpt-main` (OpenAI) falling back to `claude-backup` (Anthropic), plus `extra`."""
    main = {
        "id": "gpt-main",
        "provider": "openai",
        "upstream_model": "gpt-4o-mini",
        "fallbacks": ["claude-backup"],
        **primary,
    }
    backup = {"id": "claude-backup", "provider": "anthropic", "upstream_model": "claude-haiku-4-5"}
    return json.dumps([main, backup, *extra])


def behind_fakes(
    settings: Settings, openai: FakeOpenAIUpstream, anthropic: AnthropicUpstream, **update: Any
) -> Settings:
    """`settings` with both providers pointed at the fakes, the catalogue above and no SDK
    retries (a failure is the failover's to handle)."""
    return settings.model_copy(
        update={
            "openai_api_key": SecretStr("sk-test-not-real"),
            "openai_base_url": openai.base_url,
            "anthropic_api_key": SecretStr("sk-ant-test-not-real"),
            "anthropic_base_url": anthropic.base_url,
            "models_json": catalogue(),
            "default_model": "gpt-main",
            "provider_max_retries": 0,
            **update,
        }
    )


def cut_then_replaced(openai: FakeOpenAIUpstream, anthropic: AnthropicUpstream) -> None:
    """OpenAI's answer breaks off after a few frames; Anthropic's is whole."""
    openai.enqueue(Completion(text=HALF, cut_after=4))
    anthropic.message(MessageSpec(blocks=[Text(WHOLE)]))


@pytest.fixture
def failover_settings(
    app_settings: Settings,
    openai_upstream: FakeOpenAIUpstream,
    anthropic_upstream: AnthropicUpstream,
) -> Settings:
    return behind_fakes(app_settings, openai_upstream, anthropic_upstream)
