"""The model list and the health answers."""

from __future__ import annotations

from pydantic import BaseModel, Field

from app.redis.state import RedisState


class ModelOut(BaseModel):
    """A catalogue model; its id is what requests send as `model`."""

    id: str = Field(description="Model id to send as `model`.")
    provider: str = Field(description="openai, anthropic or scripted.")
    context_window: int = Field(description="Context window in tokens.")
    supports_tools: bool = Field(description="Whether the model can call tools.")
    supports_vision: bool = Field(description="Whether the model accepts images.")
    description: str = Field(description="Human-readable description.")
    default: bool = Field(description="True for the model used when none is named.")


class ModelList(BaseModel):
    """The model catalogue as this caller may use it."""

    data: list[ModelOut] = Field(description="Models the caller may use.")
    default: str = Field(description="Id of the default model.")
    offline: bool = Field(description="True when only the offline scripted model is served.")


class ToolSourceStatus(BaseModel):
    """One MCP server the deployment takes tools from, as this instance sees it."""

    name: str = Field(description="The server's name (its tools are `<name>__<tool>`).")
    state: str = Field(description="`connected`, `connecting`, `unavailable` or `stopped`.")
    tools: int = Field(description="How many of its tools are in the catalogue now.")
    error: str | None = Field(default=None, description="Why it is unavailable.")


class Health(BaseModel):
    """A probe's answer, for load balancers and orchestrators."""

    status: str = Field(description="`ok` when the check passed.")
    toolSources: list[ToolSourceStatus] | None = Field(
        default=None,
        description="`/readyz` only, when MCP servers are configured: each one's state. An "
        "unavailable server does not make the instance unready; its tools are left out.",
    )
    toolRouter: dict[str, str] | None = Field(
        default=None,
        description="`/readyz` only: the tool router's mode, tool count and embedding model "
        "state; a model that could not load is named here (routing falls back to keywords) "
        "without making the instance unready.",
    )
    redis: RedisState | None = Field(
        default=None,
        description="`/readyz` only, with `REDIS_URL`: what the last call learnt of Redis, or "
        "with none in the last few seconds, what a PING of its own (at most a second) did. "
        "`unreachable` and `loading` (restarting) pass; `auth_failed` is a configuration "
        "error (REDIS_URL's password or user), and so is `no_permission` (Redis refused a "
        "command to REDIS_URL's user in the last minute: its ACL lacks it). None of them "
        "makes the instance unready: limits let requests through and the bus falls back to "
        "the database meanwhile.",
    )
