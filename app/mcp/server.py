"""One MCP server as a tool source: connected at start, its tools mounted, kept in step.

A supervising task owns the connection (the SDK's transports must be entered and left in
one task): it connects, lists the tools and mounts them into the registry as
`<server>__<tool>`, then watches. It re-lists when the server says its tools changed (a
`subscriptions/listen` stream on 2026-07-28 connections, the `tools/list_changed`
notification on older ones), probes it now and then (`server/discover` on 2026-07-28, where
`ping` is gone; `ping` on older ones), and when the connection is lost it
unmounts the tools (they leave the catalogue), logs a line and reconnects with backoff.

A call runs on the caller's task and races the connection: a server that dies mid-call
ends the call at once as an error result the model reads, never as a crashed run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack
from fnmatch import fnmatchcase
from functools import partial
from typing import Any, Literal

from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ListenNotSupportedError
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import CONNECTION_CLOSED, Implementation, Tool, ToolListChangedNotification
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from app.mcp.asking import decline_mid_call
from app.mcp.calling import Connection
from app.mcp.closing import leave
from app.mcp.config import McpServerConfig
from app.mcp.schema import InvalidSchema, SchemaArgs, schema_args_model
from app.mcp.stderr import StderrLog
from app.tools.base import InputRequired, ServerTool, ToolContext, ToolFailure, UserAnswer
from app.tools.registry import ToolRegistry

log = logging.getLogger("chat_bff.mcp")

State = Literal["connecting", "connected", "unavailable", "stopped"]
_CLIENT_INFO = Implementation(name="chat-bff", version="0.1.0")
_PAGE_CAP = 100
_MAX_BACKOFF = 30.0


class ServerGone(Exception):
    """The connection to the server is lost."""


def describe(exc: BaseException) -> str:
    """One line naming what went wrong, without values (an exception group's first leaf)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, TimeoutError):
        return "timed out"
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"[:200] if text else type(exc).__name__


class McpServer:
    def __init__(
        self,
        config: McpServerConfig,
        registry: ToolRegistry,
        *,
        env: Mapping[str, str] | None = None,
        first_backoff: float = 0.5,
    ) -> None:
        self.config = config
        self.registry = registry
        self.env = dict(env or {})
        self.state: State = "connecting"
        self.error: str | None = None
        self.mounted: list[str] = []
        self._first_backoff = first_backoff
        self._client: Client | None = None
        self._gone = asyncio.Event()
        self._changed = asyncio.Event()
        self._stop = asyncio.Event()
        self._attempted = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        return self.config.name

    def status(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"name": self.name, "state": self.state, "tools": len(self.mounted)}
        if self.error is not None:
            shown["error"] = self.error
        return shown

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Start the supervisor and wait for its first attempt (connected or not)."""
        self._task = asyncio.create_task(self._supervise(), name=f"mcp:{self.name}")
        await self._attempted.wait()

    async def aclose(self, grace: float = 5.0) -> None:
        """Stop the supervisor; a connection that does not close within `grace` is cut."""
        self._stop.set()
        task, self._task = self._task, None
        if task is not None:
            done, _ = await asyncio.wait({task}, timeout=grace)
            if not done:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        self.state = "stopped"

    async def _supervise(self) -> None:
        delay = self._first_backoff
        while not self._stop.is_set():
            try:
                await self._session()
                delay = self._first_backoff
            except Exception as exc:  # noqa: BLE001 - any failure of a server is its own
                if self._stop.is_set():
                    return
                self._down(describe(exc))
            self._attempted.set()
            if self._stop.is_set():
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), delay)
            delay = min(delay * 2, _MAX_BACKOFF)

    def _down(self, reason: str) -> None:
        self._unmount()
        first = self.state != "unavailable" or self.error != reason
        self.state, self.error = "unavailable", reason
        if first:
            log.warning(
                "MCP server unavailable: its tools are left out",
                extra={"mcp_server": self.name, "reason": reason},
            )

    async def _target(self, stack: AsyncExitStack) -> Any:
        if self.config.transport == "stdio":
            assert self.config.command is not None
            stderr = StderrLog(self.name)  # the server's own log lines, at DEBUG
            await stderr.start()
            stack.push_async_callback(stderr.aclose)
            params = StdioServerParameters(
                command=self.config.command, args=self.config.args, env=self.env
            )
            return stdio_client(params, errlog=stderr.file)
        assert self.config.url is not None
        http = create_mcp_http_client(headers=dict(self.config.headers) or None)
        stack.push_async_callback(http.aclose)
        return streamable_http_client(self.config.url, http_client=http)

    async def _session(self) -> None:
        """One connection, from connecting to its loss (raised) or the stop (returned).

        A lost connection is reported `unavailable` before it is closed: closing says
        goodbye to the server, which a frozen one never answers (see `app.mcp.closing`).
        """
        stack = AsyncExitStack()
        try:
            await self._connect_and_watch(stack)
        except BaseException as exc:
            if isinstance(exc, Exception) and not self._stop.is_set():
                self._down(describe(exc))
            if not await leave(stack, self.config.connect_timeout, self.name, exc):
                raise
            if not self._stop.is_set():  # the SDK ended its own scope: the connection is gone
                raise ServerGone("the connection closed") from None
        else:
            await leave(stack, self.config.connect_timeout, self.name)

    async def _connect_and_watch(self, stack: AsyncExitStack) -> None:
        client = Client(
            await self._target(stack),
            cache=None,
            mode=self.config.handshake,
            client_info=_CLIENT_INFO,
            message_handler=self._on_message,
            elicitation_callback=decline_mid_call(self.name),
        )
        async with asyncio.timeout(self.config.connect_timeout):
            await stack.enter_async_context(client)
            await self._mount(client)
        self._client, self._gone = client, asyncio.Event()
        self.state, self.error = "connected", None
        log.info(
            "MCP server connected",
            extra={"mcp_server": self.name, "tools": len(self.mounted)},
        )
        self._attempted.set()
        try:
            await self._watch(client)
        finally:
            self._client = None
            self._gone.set()
            self._unmount()

    # -- watching ----------------------------------------------------------------------

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, ToolListChangedNotification):
            self._changed.set()

    async def _listen(self, client: Client) -> None:
        """Set `_changed` on every tools change the server announces (2026-07-28); returns
        only when the stream is lost (the connection is gone)."""
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for _event in subscription:
                    self._changed.set()
        except ListenNotSupportedError:
            pass  # an older server: it notifies through `_on_message`
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                raise
            log.info("MCP server has no change stream", extra={"mcp_server": self.name})
        await asyncio.Event().wait()  # nothing more to hear; probes watch the connection

    async def _watch(self, client: Client) -> None:
        listener = asyncio.create_task(self._listen(client))
        try:
            while True:
                events = (self._stop, self._changed, self._gone)
                waits = [asyncio.ensure_future(e.wait()) for e in events]
                done, _ = await asyncio.wait(
                    [*waits, listener],
                    timeout=self.config.ping_seconds,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                for w in waits:
                    w.cancel()
                if self._stop.is_set():
                    return
                if self._gone.is_set():
                    raise ServerGone("the connection closed")
                if listener in done:
                    raise ServerGone(describe(listener.exception() or ServerGone("closed")))
                if self._changed.is_set():
                    self._changed.clear()
                    async with asyncio.timeout(self.config.connect_timeout):
                        await self._mount(client)
                elif not done:
                    async with asyncio.timeout(self.config.connect_timeout):
                        await self._probe(client)
        finally:
            listener.cancel()
            with contextlib.suppress(BaseException):
                await listener

    @staticmethod
    async def _probe(client: Client) -> None:
        """Ask the server the cheapest thing it must answer; raises when it cannot.

        2026-07-28 removed `ping`: such a server answers it `Method not found` (over HTTP a
        404), which would mark a healthy server down at every probe. Its `server/discover`,
        at the version the connection runs, is what the connection began with and what
        every such server answers. Connections on the older handshake still ping.
        """
        version = client.protocol_version
        if version in MODERN_PROTOCOL_VERSIONS:
            await client.session.send_discover(version)
        else:
            await client.session.send_ping()

    # -- mounting ----------------------------------------------------------------------

    def _offered(self, tool: str) -> bool:
        if any(fnmatchcase(tool, p) for p in self.config.deny):
            return False
        allow = self.config.allow
        return allow is None or any(fnmatchcase(tool, p) for p in allow)

    async def _list(self, client: Client) -> list[Tool]:
        tools: list[Tool] = []
        cursor: str | None = None
        for _ in range(_PAGE_CAP):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        return tools

    async def _mount(self, client: Client) -> None:
        built: list[ServerTool[Any]] = []
        for remote in await self._list(client):
            if not self._offered(remote.name):
                continue
            try:
                built.append(self._server_tool(remote))
            except (InvalidSchema, ValueError) as exc:
                log.warning(
                    "MCP tool left out",
                    extra={"mcp_server": self.name, "tool": remote.name, "reason": str(exc)},
                )
        self._unmount()
        for tool in built:
            try:
                self.registry.register(tool)  # refuses a taken or malformed name
            except ValueError as exc:
                log.warning(
                    "MCP tool left out",
                    extra={"mcp_server": self.name, "tool": tool.name, "reason": str(exc)},
                )
                continue
            self.mounted.append(tool.name)

    def _unmount(self) -> None:
        for name in self.mounted:
            self.registry.unregister(name)
        self.mounted = []

    def _server_tool(self, remote: Tool) -> ServerTool[SchemaArgs]:
        cfg, override = self.config, self.config.override(remote.name)
        name = cfg.mounted_name(remote.name)
        read_only = bool(remote.annotations and remote.annotations.read_only_hint)
        mutates = override.mutates if override.mutates is not None else cfg.mutates
        roles = override.roles if override.roles is not None else cfg.roles
        tool = ServerTool(
            name=name,
            description=remote.description or remote.name,
            args_model=schema_args_model(name, remote.input_schema),
            handler=partial(self.call, remote.name),
            policy=override.policy or cfg.policy,
            mutates=(not read_only) if mutates is None else mutates,
            timeout=override.timeout or cfg.timeout,
            roles=frozenset(roles) if roles is not None else None,
            scope_args=tuple(cfg.scope_args),
            # The runtime forwards the caller's identity when a header template needs it.
            forward_identity=cfg.forward_identity if cfg.wants_token() else "off",
            audience=cfg.audience or cfg.name,
            asks=True,  # an `input_required` result (see `app.mcp.asking`)
        )
        tool.parameters_schema()  # fails here, not in a run, if the schema cannot be shown
        return tool

    # -- calling -----------------------------------------------------------------------

    async def call(self, remote: str, args: SchemaArgs, ctx: ToolContext) -> Any:
        """Call `remote` with the validated, pinned arguments; failures are `ToolFailure`s,
        a question the server asks is `InputRequired` (see `app.mcp.asking`). A server
        with per-user headers is called on a connection of the call's own."""
        arguments = args.model_dump(mode="json")
        if self.config.user_headers:
            headers = self.config.render_user_headers(ctx.caller.user_id, ctx.identity)
            return await self._call_alone(headers, remote, arguments, ctx.answer)
        client, gone = self._client, self._gone
        if client is None:
            raise ToolFailure(f"The MCP server `{self.name}` is not reachable.")
        return await Connection(self.name, client, gone).call(remote, arguments, ctx.answer)

    async def _call_alone(
        self,
        headers: dict[str, str],
        remote: str,
        arguments: dict[str, Any],
        answer: UserAnswer | None,
    ) -> Any:
        """The call on a connection of its own. The call's failure or question is raised
        once the connection is left: raised inside, the SDK's task groups wrap it in an
        exception group, which the runtime reads as a crash ("failed unexpectedly", the
        server's message lost). A connection lost mid-call ends the SDK's scope around the
        call; what its close raises then is the connection's failure. Once the result has
        arrived, the call succeeded whatever the close raises (logged): the model, told
        otherwise, might call a tool that changed data again."""
        gone = ToolFailure(f"The MCP server `{self.name}` went away during the call.")
        ended: ToolFailure | InputRequired = gone
        arrived: list[Any] = []  # the result, once the server sent it
        try:
            async with self._caller_connection(headers) as connection:
                try:
                    arrived.append(await connection.call(remote, arguments, answer))
                except (ToolFailure, InputRequired) as exc:
                    ended = exc
        except Exception as exc:  # the connection broke under the call, or on closing
            if isinstance(exc, ToolFailure) and not arrived:
                raise  # not reachable: the connection never opened
            reason = {"mcp_server": self.name, "reason": describe(exc)}
            if arrived:
                log.warning("MCP connection failed to close after a call's result", extra=reason)
            else:
                log.info("MCP connection of a call broke", extra=reason)
        if arrived:
            return arrived[0]
        raise ended

    @contextlib.asynccontextmanager
    async def _caller_connection(self, headers: dict[str, str]) -> AsyncIterator[Connection]:
        """A connection carrying one caller's headers, for one call (never shared, so no
        caller's headers reach another's call)."""
        assert self.config.url is not None
        stack = AsyncExitStack()
        try:
            http = create_mcp_http_client(headers={**self.config.headers, **headers})
            stack.push_async_callback(http.aclose)
            client = Client(
                streamable_http_client(self.config.url, http_client=http),
                cache=None,
                mode=self.config.handshake,
                client_info=_CLIENT_INFO,
                elicitation_callback=decline_mid_call(self.name),
            )
            try:
                async with asyncio.timeout(self.config.connect_timeout):
                    await stack.enter_async_context(client)
            except Exception as exc:  # noqa: BLE001 - any failure to connect is the server's
                raise ToolFailure(
                    f"The MCP server `{self.name}` is not reachable ({describe(exc)})."
                ) from None
            yield Connection(self.name, client, asyncio.Event())
        except BaseException as exc:
            # Also a call cut by its timeout: the run waits for this close (bounded).
            if not await leave(stack, self.config.connect_timeout, self.name, exc):
                raise
        else:
            await leave(stack, self.config.connect_timeout, self.name)
