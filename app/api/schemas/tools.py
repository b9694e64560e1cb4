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
