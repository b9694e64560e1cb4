"""One tool call on an MCP connection: the `tools/call` rounds, raced against the
connection, until the server answers, fails or asks the user (`app.mcp.asking`)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from mcp import Client, MCPError
from mcp_types import CONNECTION_CLOSED, CallToolResult, InputRequiredResult, InputResponses

from app.mcp.asking import answered, asked
from app.mcp.results import result_json, result_text
from app.tools.base import ToolFailure, UserAnswer

_STATE_ONLY_ROUNDS = 10


class Connection:
    """A connected client and the event set when its connection is lost."""

    def __init__(self, server: str, client: Client, gone: asyncio.Event) -> None:
        self.server = server
        self.client = client
        self.gone = gone

    async def call(self, remote: str, arguments: dict[str, Any], answer: UserAnswer | None) -> Any:
        """The call's result as JSON; `ToolFailure` or `InputRequired` otherwise."""
        responses, state = answered(answer)
        for _ in range(_STATE_ONLY_ROUNDS):
            result = await self._round(remote, arguments, responses, state)
            if isinstance(result, CallToolResult):
                break
            if result.input_requests:
                raise asked(self.server, result)
            # Only state, no question: the server wants to be asked again shortly.
            responses, state = None, result.request_state
            await asyncio.sleep(0.05)
        else:
            raise ToolFailure(f"The MCP server `{self.server}` kept the call waiting.")
        if result.is_error:
            raise ToolFailure(result_text(result) or f"The tool `{remote}` reported an error.")
        return result_json(result)

    async def _round(
        self,
        remote: str,
        arguments: dict[str, Any],
        responses: InputResponses | None,
        state: str | None,
    ) -> CallToolResult | InputRequiredResult:
        call = asyncio.ensure_future(
            self.client.session.call_tool(
                remote,
                arguments,
                input_responses=responses,
                request_state=state,
                allow_input_required=True,
            )
        )
        lost = asyncio.ensure_future(self.gone.wait())
        try:
            done, _ = await asyncio.wait({call, lost}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            lost.cancel()
            if not call.done():
                call.cancel()
                with contextlib.suppress(BaseException):
                    await call
        if call not in done:
            raise ToolFailure(f"The MCP server `{self.server}` went away during the call.")
        try:
            return call.result()
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                self.gone.set()
                raise ToolFailure(f"The MCP server `{self.server}` went away.") from None
            raise ToolFailure(f"The MCP server `{self.server}` refused the call: {exc}") from None
