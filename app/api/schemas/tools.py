"""The server tools a caller's model may use."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from app.tools.base import Policy


class ToolOut(BaseModel):
    """A server tool as the model sees it, plus its policy for the UI."""

    name: str = Field(description="Tool name, as the model calls it.")
    description: str = Field(description="What the tool does (the model reads this too).")
    parameters: dict[str, Any] = Field(
        description="JSON schema of the arguments the model may send (scope arguments are "
        "pinned by the server and not listed)."
    )
    policy: Policy = Field(
        description="`auto` runs at once, `confirm` asks a human first, `propose` queues it."
    )
    mutates: bool = Field(description="True when the tool changes data a UI may show.")


class ToolList(BaseModel):
    """The server tools this caller may use with the chosen model."""

    data: list[ToolOut] = Field(description="Tools the caller may use with the model.")


class RouteIn(BaseModel):
    """A request to route, as a user would type it."""

    text: str = Field(min_length=1, max_length=8000, description="The user's request.")
    model: str | None = Field(
        default=None, description="Catalogue model id; the default model when absent."
    )


class RouteOut(BaseModel):
    """What the tool router would offer the model for this request, and why."""

    routed: bool = Field(description="False when routing is off for this model or unneeded.")
    reason: str = Field(description="How the tools were chosen.")
    tools: list[str] = Field(description="The tools the model would be offered, best first.")
    intended: str | None = Field(
        description="The tool the request most likely means; never a mutating tool when "
        "the request is negated (the model decides)."
    )
    negated: bool = Field(description="Whether the request negates or cancels.")
    keyword_hits: dict[str, list[str]] = Field(
        description="Per tool, the keyword phrases (as compared: Russian words as stems) "
        "found in the request."
    )
    similarities: dict[str, float] = Field(
        description="The best cosine similarities to the tools' descriptions, when the "
        "embedding fallback ran."
    )
    fallback_used: bool = Field(description="Whether the embedding fallback ran.")
    embeddings: str = Field(description="The embedding model's state.")
    elapsed_ms: float = Field(description="Time the router took.")
    available: int = Field(description="How many tools this caller may use with the model.")
