"""The shape of the `MCP_SERVERS` setting: one JSON list, one object per server.

    [{"name": "files", "transport": "streamable-http", "url": "http://files:8000/mcp",
      "headers": {"Authorization": "Bearer ..."}, "policy": "auto",
      "tools": {"delete_file": {"policy": "confirm", "timeout": 5}},
      "deny": ["admin_*"],
      "user_headers": {"X-User-Id": "{user_id}", "X-User-Token": "Bearer {user_token}"},
      "forward_identity": "minted", "audience": "files-api"},
     {"name": "git", "transport": "stdio", "command": "uvx", "args": ["mcp-server-git"],
      "env": ["GIT_AUTHOR_NAME"]}]

Each tool is mounted as `<server>__<tool>`. `allow` / `deny` take `fnmatch` patterns over
the server's own tool names; the deployment's `TOOL_ALLOW` / `TOOL_DENY` still apply to the
mounted names. `env` of a stdio server names the variables of the service's environment
the subprocess receives (besides the SDK's safe defaults such as PATH and HOME); nothing
else of the service's environment reaches it.

`user_headers` (streamable-http only) are sent with every tool call, rendered from the
caller: `{user_id}`, and `{user_token}`, the user's identity for this server
(`forward_identity`: `minted`, a short-lived token signed with FORWARD_TOKEN_SECRET for
`audience`, default the server's name; or `bearer`, the caller's own token when
FORWARD_BEARER_TOKENS allows). Such a server is called on a connection of the call's own,
so no caller's headers reach another's call; the values are never logged or stored.
"""

from __future__ import annotations

import json
from string import Formatter
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator, model_validator

from app.domain.identity import ForwardedIdentity
from app.tools.base import DEFAULT_SCOPE_ARGS, Policy, ToolFailure

SEPARATOR = "__"
USER_FIELDS = frozenset({"user_id", "user_token"})


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
    user_headers: dict[str, str] = Field(default_factory=dict)
    forward_identity: Literal["minted", "bearer"] = "minted"
    audience: str | None = None

    @field_validator("headers", "user_headers")
    @classmethod
    def _header_values(cls, headers: dict[str, str]) -> dict[str, str]:
        """Values as HTTP sends them: the spaces and line break around a key pasted or read
        from a file (`$(cat key)`) are not part of it, and the HTTP client refuses such a
        value with an error that quotes it, which went to the log and to /readyz. A control
        character inside a value is refused here, by the header's name alone."""
        for name, value in headers.items():
            if any((ord(c) < 32 and c != "\t") or ord(c) == 127 for c in value.strip()):
                raise ValueError(f"header {name!r}: its value holds a control character")
        return {name: value.strip() for name, value in headers.items()}

    @model_validator(mode="after")
    def _transport_fields(self) -> McpServerConfig:
        if self.transport == "streamable-http" and not self.url:
            raise ValueError(f"server {self.name!r}: streamable-http needs a url")
        if self.transport == "stdio" and not self.command:
            raise ValueError(f"server {self.name!r}: stdio needs a command")
        if self.transport == "stdio" and self.headers:
            raise ValueError(f"server {self.name!r}: headers are for streamable-http")
        if self.transport == "stdio" and self.user_headers:
            raise ValueError(f"server {self.name!r}: user_headers are for streamable-http")
        for header, template in self.user_headers.items():
            unknown = _fields(template) - USER_FIELDS
            if unknown:
                raise ValueError(
                    f"server {self.name!r}: user_headers {header!r} uses unknown "
                    f"{', '.join(sorted(unknown))} (known: user_id, user_token)"
                )
        return self

    def wants_token(self) -> bool:
        return any("user_token" in _fields(t) for t in self.user_headers.values())

    def render_user_headers(
        self, user_id: str, identity: ForwardedIdentity | None
    ) -> dict[str, str]:
        """The caller's headers for one call; the runtime made sure a token exists when a
        template needs one."""
        values = {"user_id": user_id}
        if identity is not None:
            values["user_token"] = identity.user_token.get_secret_value()
        elif self.wants_token():
            raise ToolFailure(f"The MCP server `{self.name}` needs the user's identity.")
        return {h: t.format(**values) for h, t in self.user_headers.items()}

    def override(self, tool: str) -> McpToolOverride:
        return self.tools.get(tool, McpToolOverride())

    def mounted_name(self, tool: str) -> str:
        return f"{self.name}{SEPARATOR}{tool}"


def _fields(template: str) -> set[str]:
    try:
        return {name for _, name, _, _ in Formatter().parse(template) if name is not None}
    except ValueError as exc:
        raise ValueError(f"not a header template: {exc}") from None


_SERVERS = TypeAdapter(list[McpServerConfig])


def parse_servers(text: str) -> list[McpServerConfig]:
    """The setting's JSON text as server configs; names must be unique."""
    servers = _SERVERS.validate_python(json.loads(text)) if text.strip() else []
    names = [s.name for s in servers]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"server names must be unique: {', '.join(dupes)}")
    return servers
