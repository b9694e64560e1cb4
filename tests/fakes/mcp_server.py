"""A real MCP server for the tests, written with the same SDK: run as a subprocess.

    python -m tests.fakes.mcp_server stdio
    python -m tests.fakes.mcp_server http PORT

Its tools: `echo`, `add` (structured result), `fail` (a tool error), `slow` (sleeps),
`note` (declares `workspace_id`, so the service pins it), `env` (reads a variable of
its environment), `die` (the process exits mid-call), `grow` (adds the tool `extra` and
announces the change), `ask` (asks the user mid-call the older way: an `elicitation/create`
request), `remove` (asks the 2026-07-28 way: an `input_required` result with request state),
`whoami` (the `X-User-Id` and `X-User-Token` headers its request came with).
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Annotated

from mcp.server.mcpserver import (
    AcceptedElicitation,
    Context,
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
)
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

server = MCPServer("fake")


@server.tool()
def echo(text: str) -> str:
    """Echo the text back (and note the call on stderr, as servers log)."""
    print("INFO fake: echo called", file=sys.stderr, flush=True)
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def fail(reason: str = "no such thing") -> str:
    """Always fails with the reason."""
    raise ToolError(reason)


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return "done"


@server.tool()
def note(workspace_id: str, text: str) -> dict[str, str]:
    """Write a note into a workspace."""
    return {"workspace_id": workspace_id, "text": text}


@server.tool()
def env(name: str) -> str:
    """A variable of this process's environment, or `<unset>`."""
    return os.environ.get(name, "<unset>")


@server.tool()
def die() -> str:
    """The server process exits without answering."""
    os._exit(3)


def extra() -> str:
    """A tool that appears later."""
    return "extra"


@server.tool()
async def grow(ctx: Context) -> str:
    """Add the tool `extra` and announce the change."""
    server.add_tool(extra)
    await ctx.notify_tools_changed()
    return "grown"


@server.tool(name="dotted.name")
def dotted() -> str:
    """A name our registry refuses (only letters, digits, `_` and `-`)."""
    return "dotted"


class Confirmation(BaseModel):
    sure: bool


@server.tool()
async def ask(ctx: Context) -> str:
    """Asks the user a question mid-call (elicitation)."""
    answer = await ctx.elicit("Are you sure?", Confirmation)
    return f"answered {answer.action}"


class Removal(BaseModel):
    confirm: bool
    reason: str


def ask_removal(path: str) -> Elicit[Removal]:
    return Elicit(f"Remove {path}? Say why.", Removal)


@server.tool()
async def remove(
    path: str, answer: Annotated[ElicitationResult[Removal], Resolve(ask_removal)]
) -> dict[str, str]:
    """Remove a file after asking the user (elicitation as an input_required result)."""
    if isinstance(answer, AcceptedElicitation):
        done = "removed" if answer.data.confirm else "kept"
        return {"path": path, "outcome": done, "reason": answer.data.reason}
    return {"path": path, "outcome": answer.action}


@server.tool()
def whoami(ctx: Context) -> dict[str, str]:
    """The caller headers this call's HTTP request carried."""
    headers = ctx.headers or {}
    return {k: headers.get(k, "<none>") for k in ("x-user-id", "x-user-token")}


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
