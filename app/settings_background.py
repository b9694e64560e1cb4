"""The background tool settings, a part of `Settings` (which inherits them) kept in a
module of its own so each stays one readable page.

A tool that declares `long_running=True` runs as a durable background job outside the
turn. These settings bound how many run at once (per user and over the whole
deployment, counted in the database so they hold across instances) and how long one may
run when the tool sets no `timeout` of its own.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings


class BackgroundSettings(BaseSettings):
    background_tools_per_user: int = Field(
        default=4,
        ge=1,
        description="Background tool jobs one user may have running at once; a call past "
        "it is an error result the model reads (nothing is queued).",
    )
    background_tools_total: int = Field(
        default=64,
        ge=1,
        description="Background tool jobs running at once over the whole deployment.",
    )
    background_tool_timeout_seconds: float = Field(
        default=3600.0,
        gt=0,
        description="Cap of one background job when its tool sets no timeout.",
    )
