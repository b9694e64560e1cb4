"""The catalogue's built-in entries and its file format.

The catalogue is the allowlist (see `app.domain.models`). A deployment describes it in
`MODELS_JSON` / `MODELS_FILE`; when neither is set, the container builds it from which
provider keys are configured, with the offline `scripted` model always present.
"""

from __future__ import annotations

from pydantic import TypeAdapter

from app.domain.models import Catalog, ModelInfo

_CATALOG_ADAPTER: TypeAdapter[list[ModelInfo]] = TypeAdapter(list[ModelInfo])

SCRIPTED_MODEL = ModelInfo(
    id="scripted",
    provider="scripted",
    upstream_model="scripted-demo",
    context_window=32_000,
    description="Offline scripted model: plays a script, no real model behind it.",
)
OPENAI_DEFAULT = ModelInfo(
    id="gpt-4o-mini",
    provider="openai",
    upstream_model="gpt-4o-mini",
    context_window=128_000,
    supports_vision=True,
    description="OpenAI GPT-4o mini.",
)
ANTHROPIC_DEFAULT = ModelInfo(
    id="claude-haiku-4-5",
    provider="anthropic",
    upstream_model="claude-haiku-4-5",
    context_window=200_000,
    supports_vision=True,
    description="Anthropic Claude Haiku 4.5.",
)


def parse_models(raw: str | bytes) -> list[ModelInfo]:
    """A catalogue from its JSON text (a list of entries); ValidationError when malformed."""
    return _CATALOG_ADAPTER.validate_json(raw)


def default_models(*, openai: bool, anthropic: bool) -> list[ModelInfo]:
    """The catalogue when none is configured: one model per configured provider, then the
    offline scripted model."""
    models: list[ModelInfo] = []
    if openai:
        models.append(OPENAI_DEFAULT)
    if anthropic:
        models.append(ANTHROPIC_DEFAULT)
    models.append(SCRIPTED_MODEL)
    return models


def build_catalog(models: list[ModelInfo], default_id: str | None = None) -> Catalog:
    """The catalogue; the first entry is the default unless `default_id` names another."""
    if not models:
        raise ValueError("the model catalogue is empty")
    return Catalog(models, default_id or models[0].id)
