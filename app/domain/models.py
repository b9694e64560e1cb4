"""The model catalogue as values: each model id we serve, the provider and upstream model
behind it, what it can do and who may use it.

The catalogue is the allowlist: a model id that is not in it is `model_not_found`. It is
built from settings at the composition root (`app.container`); everything else receives
the built `Catalog`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from app.domain.errors import ModelNotFound
from app.domain.usage import Price

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
    fallbacks: list[str] = Field(
        default_factory=list,
        description="Catalogue ids tried in order when this model's provider fails before "
        "its first byte (5xx, 429, timeout, connection failure); a fallback the caller's "
        "roles do not allow is skipped.",
    )
    failover_after_first_byte: bool | None = Field(
        default=None,
        description="Whether a stream of this model that fails after its first byte may be "
        "answered again by a fallback (the partial attempt retracted); the deployment's "
        "FAILOVER_AFTER_FIRST_BYTE when absent.",
    )
    tool_router: Literal["on", "off", "auto"] | None = Field(
        default=None,
        description="Offer this model only the tools its request needs: on, off, or auto "
        "(only above tool_router_min_tools tools); the deployment's TOOL_ROUTER when absent.",
    )
    tool_router_min_tools: int | None = Field(
        default=None, ge=0, description="For `auto`: route only above this many tools."
    )
    price: Price | None = Field(
        default=None,
        description="Cost per million tokens (input, output, cached); usage of a model "
        "without a price is counted in tokens only.",
    )

    def output_cap(self, asked: int | None) -> int:
        """The output tokens to ask this model for: what the client asked, never above the
        catalogue's cap (a larger ask went upstream as sent, where the provider refused it
        or it overran the context the history was fitted to), the cap when nothing was."""
        return self.max_output_tokens if asked is None else min(asked, self.max_output_tokens)


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

    def usable(self, model_ids: list[str], roles: frozenset[str] | None) -> list[ModelInfo]:
        """The entries of `model_ids` that `roles` may use, in order; unknown or forbidden
        ids are left out (a fallback the caller may not use is skipped, never called)."""
        found = (self._models.get(model_id) for model_id in model_ids)
        return [info for info in found if info is not None and allowed(info, roles)]

    @property
    def offline(self) -> bool:
        return all(m.provider == "scripted" for m in self._models.values())


def allowed(info: ModelInfo, roles: frozenset[str] | None) -> bool:
    if info.roles is None or roles is None:
        return True
    return bool(roles.intersection(info.roles))
