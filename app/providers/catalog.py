"""The model catalogue: our model ids, the provider and upstream model behind each.

It is the allowlist: a request for a model id that is not here is `model_not_found`.
Built from `MODELS_JSON` / `MODELS_FILE`, or, when neither is set, from which provider
keys are configured (the offline `scripted` model when there are none).
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from app.domain.errors import ModelNotFound
from app.settings import Settings

ProviderName = Literal["openai", "anthropic", "scripted"]


class ModelInfo(BaseModel):
    """One catalogue entry."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Our model id; what clients send as `model`.")
    provider: ProviderName = Field(description="Which provider serves it.")
    upstream_model: str = Field(description="The model name sent upstream.")
    context_window: int = Field(default=128_000, description="Context window in tokens.")
    max_output_tokens: int = Field(default=4096, description="Cap on generated tokens.")
    supports_tools: bool = Field(default=True, description="Whether it can call tools.")
    supports_vision: bool = Field(default=False, description="Whether it accepts images.")
    roles: list[str] | None = Field(
        default=None, description="Roles allowed to use it; everyone when absent."
    )
    description: str = Field(default="", description="Human-readable description.")


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


class Catalog:
    def __init__(self, models: list[ModelInfo], default_id: str) -> None:
        self._models = {m.id: m for m in models}
        if default_id not in self._models:
            raise ValueError(f"default model {default_id!r} is not in the catalogue")
        self.default_id = default_id

    def all(self) -> list[ModelInfo]:
        return list(self._models.values())

    def resolve(self, model_id: str | None, roles: frozenset[str] | None = None) -> ModelInfo:
        """The entry for `model_id` (the default when None); unknown or forbidden is 404."""
        info = self._models.get(model_id or self.default_id)
        if info is None or not allowed(info, roles):
            raise ModelNotFound(f"The model {model_id!r} does not exist or is not available.")
        return info

    @property
    def offline(self) -> bool:
        return all(m.provider == "scripted" for m in self._models.values())


def allowed(info: ModelInfo, roles: frozenset[str] | None) -> bool:
    if info.roles is None or roles is None:
        return True
    return bool(roles.intersection(info.roles))


def build_catalog(settings: Settings) -> Catalog:
    models: list[ModelInfo]
    if settings.models_json:
        models = _CATALOG_ADAPTER.validate_python(json.loads(settings.models_json))
    elif settings.models_file is not None:
        models = _CATALOG_ADAPTER.validate_json(settings.models_file.read_bytes())
    else:
        models = []
        if settings.openai_api_key is not None or settings.openai_base_url:
            models.append(OPENAI_DEFAULT)
        if settings.anthropic_api_key is not None:
            models.append(ANTHROPIC_DEFAULT)
        models.append(SCRIPTED_MODEL)
    if not models:
        raise ValueError("the model catalogue is empty")
    default = settings.default_model or models[0].id
    return Catalog(models, default)
