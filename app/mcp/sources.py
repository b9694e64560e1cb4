"""Every MCP server of the deployment: started together at start-up, closed at shutdown.

Start-up waits for each server's first attempt (bounded by its `connect_timeout`), so a
reachable server's tools are in the catalogue before the first request; an unreachable
one is left out with a log line, shows in `/readyz` as `unavailable`, and keeps being
retried in the background.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from app.mcp.config import McpServerConfig
from app.mcp.server import McpServer
from app.tools.registry import ToolRegistry


class McpSources:
    def __init__(
        self,
        configs: Sequence[McpServerConfig],
        registry: ToolRegistry,
        *,
        envs: Mapping[str, Mapping[str, str]] | None = None,
        first_backoff: float = 0.5,
    ) -> None:
        envs = envs or {}
        self.servers = [
            McpServer(c, registry, env=envs.get(c.name), first_backoff=first_backoff)
            for c in configs
        ]

    async def start(self) -> None:
        await asyncio.gather(*(s.start() for s in self.servers))

    def status(self) -> list[dict[str, Any]]:
        return [s.status() for s in self.servers]

    async def aclose(self) -> None:
        await asyncio.gather(*(s.aclose() for s in self.servers))
