"""The shape of the `MCP_SERVERS` setting: one JSON list, one object per server.

    [{"name": "files", "transport": "streamable-http", "url": "http://files:8000/mcp",
      "headers": {"Authorization": "Bearer ..."}, "policy": "auto",
      "tools": {"delete_file": {"policy": "confirm", "timeout": 5}},
      "deny": ["admin_*"]},
     {"name": "git", "transport": "stdio", "command": "uvx", "args": ["mcp-server-git"],
      "env": ["GIT_AUTHOR_NAME"]}]

Each tool is mounted as `<server>__<tool>`. `allow` / `deny` take `fnmatch` patterns over
the server's own tool names; the deployment's `TOOL_ALLOW` / `TOOL_DENY` still apply to the
mounted names. `env` of a stdio server names the variables of the service's environment
the subprocess receives (besides the SDK's safe defaults such as PATH and HOME); nothing
else of the service's environment reaches it.
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

from app.tools.base import DEFAULT_SCOPE_ARGS, Policy

SEPARATOR = "__"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class McpToolOverride(_Strict):
    """What one tool of a server does differently from the server's defaults."""

    policy: Policy | None = None
    timeout: float | None = Field(default=None, gt=0)
    roles: list[str] | None = None
    mutates: bool | None = None


class McpServerConfig(_Strict):
    name: str = Field(pattern=r"^[a-zA-Z0-9-]{1,24}$")
    transport: Literal["streamable-http", "stdio"]
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: list[str] = Field(default_factory=list)
    policy: Policy = "auto"
    tools: dict[str, McpToolOverride] = Field(default_factory=dict)
    allow: list[str] | None = None
    deny: list[str] = Field(default_factory=list)
    timeout: float | None = Field(default=None, gt=0)
    roles: list[str] | None = None
    mutates: bool | None = None
    scope_args: list[str] = Field(default_factory=lambda: list(DEFAULT_SCOPE_ARGS))
    handshake: Literal["auto", "legacy"] = "auto"
    connect_timeout: float = Field(default=10.0, gt=0)
    ping_seconds: float = Field(default=15.0, gt=0)

    @model_validator(mode="after")
    def _transport_fields(self) -> McpServerConfig:
        if self.transport == "streamable-http" and not self.url:
            raise ValueError(f"server {self.name!r}: streamable-http needs a url")
        if self.transport == "stdio" and not self.command:
            raise ValueError(f"server {self.name!r}: stdio needs a command")
        if self.transport == "stdio" and self.headers:
            raise ValueError(f"server {self.name!r}: headers are for streamable-http")
        return self

    def override(self, tool: str) -> McpToolOverride:
        return self.tools.get(tool, McpToolOverride())

    def mounted_name(self, tool: str) -> str:
        return f"{self.name}{SEPARATOR}{tool}"


_SERVERS = TypeAdapter(list[McpServerConfig])


def parse_servers(text: str) -> list[McpServerConfig]:
    """The setting's JSON text as server configs; names must be unique."""
    servers = _SERVERS.validate_python(json.loads(text)) if text.strip() else []
    names = [s.name for s in servers]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"server names must be unique: {', '.join(dupes)}")
    return servers
