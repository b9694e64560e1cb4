"""Build the configured providers from settings (keys are read here and nowhere else)."""

from __future__ import annotations

from app.domain.models import Catalog
from app.providers.base import Provider
from app.providers.scripted import ScriptedProvider, load_script
from app.settings import Settings


def build_providers(settings: Settings, catalog: Catalog) -> dict[str, Provider]:
    needed = {m.provider for m in catalog.all()}
    providers: dict[str, Provider] = {}
    if "openai" in needed:
        from app.providers.openai import OpenAIProvider

        key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
        providers["openai"] = OpenAIProvider(
            # Local OpenAI-compatible servers (Ollama, vLLM) take any key; the SDK needs one.
            api_key=key or "not-needed",
            base_url=settings.openai_base_url,
            timeout=settings.provider_timeout_seconds,
            connect_timeout=settings.provider_connect_timeout_seconds,
            max_retries=settings.provider_max_retries,
        )
    if "anthropic" in needed:
        from app.providers.anthropic import AnthropicProvider

        if settings.anthropic_api_key is None:
            raise ValueError(
                "the catalogue names an Anthropic model but ANTHROPIC_API_KEY is unset"
            )
        providers["anthropic"] = AnthropicProvider(
            api_key=settings.anthropic_api_key.get_secret_value(),
            base_url=settings.anthropic_base_url,
            timeout=settings.provider_timeout_seconds,
            connect_timeout=settings.provider_connect_timeout_seconds,
            max_retries=settings.provider_max_retries,
        )
    if "scripted" in needed:
        providers["scripted"] = ScriptedProvider(
            load_script(settings.scripted_script), delay_ms=settings.scripted_delay_ms
        )
    return providers
