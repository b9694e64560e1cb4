"""Real MCP servers on loopback (the SDK's own, from `tests.fakes.mcp_server`) mounted
into a tool runtime over a migrated database."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from app.domain.identity import IdentityForwarder
from app.domain.tooling import ToolOutcome
from app.mcp.config import McpServerConfig
from app.mcp.sources import McpSources
from app.store.database import Database
from app.toolruntime.runtime import ServerToolRuntime
from app.tools.access import ToolAccess
from app.tools.catalog import ToolCatalog
from app.tools.registry import ToolRegistry
from tests.tools.conftest import ALICE, call, run_ctx

SERVER = [sys.executable, "-m", "tests.fakes.mcp_server"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_listening(port: int, proc: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the MCP test server exited at start")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError("the MCP test server did not listen in time")


def children() -> set[int]:
    """Live child processes of this test process running the fake server."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat[1]) == os.getpid() and stat[0] != "Z" and b"mcp_server" in cmdline:
            found.add(int(entry.name))
    return found


async def until(check: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(check) and check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not reached in time")


def connections_to(port: int) -> int:
    """This process's open TCP connections to `port` on 127.0.0.1."""
    ours = set()
    for fd in Path("/proc/self/fd").iterdir():
        with contextlib.suppress(OSError):
            ours.add(os.readlink(fd).removeprefix("socket:[").removesuffix("]"))
    rows = Path("/proc/self/net/tcp").read_text().splitlines()[1:]
    fields = [row.split() for row in rows]
    return sum(1 for f in fields if int(f[2].split(":")[1], 16) == port and f[9] in ours)


class HttpServer:
    """The fake server as a subprocess on 127.0.0.1; `stop` kills it, `start` brings it back."""

    def __init__(self) -> None:
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> None:
        self.stop()
        self.proc = subprocess.Popen(
            [*SERVER, "http", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_listening(self.port, self.proc)

    def stop(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait(10)


@pytest.fixture
def http_server() -> Iterator[HttpServer]:
    server = HttpServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


def http_config(server: HttpServer, **extra: Any) -> McpServerConfig:
    return McpServerConfig.model_validate(
        {"name": "web", "transport": "streamable-http", "url": server.url, **extra}
    )


def stdio_config(**extra: Any) -> McpServerConfig:
    return McpServerConfig.model_validate(
        {
            "name": "local",
            "transport": "stdio",
            "command": SERVER[0],
            "args": [*SERVER[1:], "stdio"],
        }
        | extra
    )


class Mounted:
    """Servers mounted into a registry, and the runtime that calls them."""

    def __init__(self, sources: McpSources, registry: ToolRegistry, runtime: ServerToolRuntime):
        self.sources = sources
        self.registry = registry
        self.runtime = runtime

    def names(self) -> set[str]:
        return {t.name for t in self.registry.all()}

    async def invoke(self, name: str, args: Any, **ctx: Any) -> Any:
        return await self.runtime.invoke(
            call(name, args, ctx.pop("call_id", "call_1")),
            run_ctx(ctx.pop("caller", ALICE), ctx.pop("cid", None), **ctx),
        )

    async def outcome(self, name: str, args: Any, **ctx: Any) -> ToolOutcome:
        result = await self.invoke(name, args, **ctx)
        assert isinstance(result, ToolOutcome)
        return result


Mount = Callable[..., Any]


@pytest.fixture
def db(db_engine: AsyncEngine) -> Database:
    return Database(db_engine)


@pytest.fixture
async def mount(db: Database) -> AsyncIterator[Mount]:
    started: list[McpSources] = []

    async def make(
        *configs: McpServerConfig,
        envs: dict[str, dict[str, str]] | None = None,
        forwarder: IdentityForwarder | None = None,
        **access: Any,
    ) -> Mounted:
        registry = ToolRegistry()
        sources = McpSources(configs, registry, envs=envs, first_backoff=0.1)
        started.append(sources)
        await sources.start()
        runtime = ServerToolRuntime(
            ToolCatalog(registry, ToolAccess(**access)),
            db,
            default_timeout=10.0,
            forwarder=forwarder,
        )
        return Mounted(sources, registry, runtime)

    yield make
    for sources in started:
        await sources.aclose()
