"""A call on a connection of its own whose result arrived is a success, whatever closing
that connection raises afterwards: told "went away during the call", the model may call a
tool that changed data again. The close's failure is logged."""

from __future__ import annotations

from typing import Any

import pytest

from app.mcp import server as mcp_server
from app.mcp.closing import leave
from tests.mcp.conftest import HttpServer, Mount, http_config
from tests.mcp.test_mcp_user_headers import HEADERS, _forwarder
from tests.tools.conftest import ALICE


async def test_a_result_that_arrived_stands_though_closing_its_connection_fails(
    mount: Mount,
    http_server: HttpServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    mounted = await mount(http_config(http_server, user_headers=HEADERS), forwarder=_forwarder())

    async def failing_close(*args: Any, **kwargs: Any) -> bool:
        suppressed = await leave(*args, **kwargs)
        raise ConnectionResetError("reset while closing")
        return suppressed  # pragma: no cover

    monkeypatch.setattr(mcp_server, "leave", failing_close)

    outcome = await mounted.outcome("web__whoami", {}, caller=ALICE)

    assert outcome.status == "success", outcome.result
    assert outcome.result["x-user-id"] == "alice"
    [closed] = [r for r in caplog.records if "failed to close" in r.getMessage()]
    assert closed.__dict__["reason"] == "ConnectionResetError: reset while closing"
